"""Fuzz of the ReLU, leaky ReLU, dropout and finiteness-check wrappers (``_engine/_activations.pyx``)."""

import numpy as np
from hypothesis import strategies as st

from _fuzz import Spec, alias_test, any_shape, dim, f32, family_test, maybe_out


def _unary(draw, slope=False):
    x = f32(draw, any_shape(draw))
    kw = {"x": x, "out": maybe_out(draw, x.shape)}
    if slope:
        kw["negative_slope"] = draw(st.sampled_from((0.01, 0.0, 1.0, 3.0)))
    return kw


def _unary_backward(draw, slope=False):
    s = any_shape(draw)
    kw = {"dy": f32(draw, s), "y": f32(draw, s), "dx": maybe_out(draw, s)}
    if slope:
        kw["negative_slope"] = draw(st.sampled_from((0.01, 0.0, 1.0)))
    return kw


def _dropout(draw, back=False):
    s = any_shape(draw)
    mask = np.asarray(np.random.default_rng(0).random(s) < 0.5, dtype=np.float32) * np.float32(2)
    mask = np.asarray(mask, dtype=np.float32)
    x = f32(draw, s)
    return (
        {"dy": x, "mask": mask, "dx": maybe_out(draw, s)}
        if back
        else {"x": x, "mask": mask, "out": maybe_out(draw, s)}
    )


def _copy_rows(draw):
    x = f32(draw, (dim(draw, large=1031), dim(draw, 1)))
    spare = draw(st.integers(0, 3))
    rows = np.full((x.shape[0] + spare, x.shape[1]), np.nan, np.float32)
    return {"x": x, "rows": rows, "start": draw(st.integers(0, spare))}


SPECS = {
    "relu_forward": Spec(_unary, outs=("out",)),
    "relu_backward": Spec(_unary_backward, outs=("dx",)),
    "leaky_relu_forward": Spec(lambda draw: _unary(draw, True), outs=("out",), floats=("negative_slope",)),
    "leaky_relu_backward": Spec(
        lambda draw: _unary_backward(draw, True), outs=("dx",), floats=("negative_slope",)
    ),
    "all_finite": Spec(lambda draw: {"x": f32(draw, any_shape(draw))}),
    "copy_rows_finite": Spec(_copy_rows, inplace=("rows",), ints=("start",)),
    "dropout_forward": Spec(_dropout, outs=("out",)),
    "dropout_backward": Spec(lambda draw: _dropout(draw, True), outs=("dx",)),
}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
