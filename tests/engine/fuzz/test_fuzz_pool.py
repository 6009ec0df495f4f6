"""Fuzz of the pooling wrappers (``_engine/_pool.pyx``)."""

import numpy as np
from hypothesis import strategies as st

from _fuzz import Spec, alias_test, dim, f32, family_test, maybe_out
from mantissa_embed import engine


def geometry(draw):
    size = draw(st.sampled_from((1, 2, 2, 3)))
    stride = draw(st.sampled_from((1, 2, 2, 3)))
    N, C = dim(draw, hi=3), dim(draw, hi=5)
    H = draw(st.sampled_from((size, size + 1, size + 4, 33)))
    W = draw(st.sampled_from((size, size + 1, size + 6, 17)))
    return N, C, H, W, size, stride, (H - size) // stride + 1, (W - size) // stride + 1


def _max_forward(draw):
    N, C, H, W, size, stride, HO, WO = geometry(draw)
    return {
        "x": f32(draw, (N, C, H, W)),
        "size": size,
        "stride": stride,
        "out": maybe_out(draw, (N, C, HO, WO)),
        "argmax": maybe_out(draw, (N, C, HO, WO), np.int32),
    }


def _max_backward(draw, relu=False):
    N, C, H, W, size, stride, HO, WO = geometry(draw)
    y, argmax = engine.maxpool2d_forward(f32(draw, (N, C, H, W)), size, stride)
    kw = {
        "dy": f32(draw, (N, C, HO, WO)),
        "argmax": argmax,
        "x_shape": (N, C, H, W),
        "dx": maybe_out(draw, (N, C, H, W)),
    }
    if relu:
        kw["y"] = np.maximum(y, 0)
    return kw


def _avg_forward(draw):
    N, C, H, W, size, stride, HO, WO = geometry(draw)
    return {
        "x": f32(draw, (N, C, H, W)),
        "size": size,
        "stride": stride,
        "out": maybe_out(draw, (N, C, HO, WO)),
    }


def _avg_backward(draw):
    N, C, H, W, size, stride, HO, WO = geometry(draw)
    return {
        "dy": f32(draw, (N, C, HO, WO)),
        "x_shape": (N, C, H, W),
        "size": size,
        "stride": stride,
        "dx": maybe_out(draw, (N, C, H, W)),
    }


def _gap_forward(draw):
    N, C, H, W = dim(draw), dim(draw), dim(draw, lo=1, large=64), dim(draw, lo=1)
    return {"x": f32(draw, (N, C, H, W)), "out": maybe_out(draw, (N, C))}


def _gap_backward(draw):
    N, C, H, W = dim(draw), dim(draw), dim(draw, lo=1), dim(draw, lo=1)
    return {"dy": f32(draw, (N, C)), "x_shape": (N, C, H, W), "dx": maybe_out(draw, (N, C, H, W))}


SPECS = {
    "maxpool2d_forward": Spec(_max_forward, outs=("out", "argmax"), ints=("size", "stride")),
    "maxpool2d_backward": Spec(_max_backward, outs=("dx",), shapes=("x_shape",)),
    "maxpool2d_relu_backward": Spec(
        lambda draw: _max_backward(draw, relu=True), outs=("dx",), shapes=("x_shape",)
    ),
    "avgpool2d_forward": Spec(_avg_forward, outs=("out",), ints=("size", "stride")),
    "avgpool2d_backward": Spec(_avg_backward, outs=("dx",), ints=("size", "stride"), shapes=("x_shape",)),
    "global_avgpool2d_forward": Spec(_gap_forward, outs=("out",)),
    "global_avgpool2d_backward": Spec(_gap_backward, outs=("dx",), shapes=("x_shape",)),
}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
