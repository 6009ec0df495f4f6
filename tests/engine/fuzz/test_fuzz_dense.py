"""Fuzz of the fully connected layer's wrappers (``_engine/_dense.pyx``)."""

import numpy as np
from hypothesis import strategies as st

from _fuzz import Spec, alias_test, dim, f32, family_test, maybe_out


def _dense_forward(draw):
    N, n_in, n_out = dim(draw, large=129), dim(draw), dim(draw)
    return {
        "x": f32(draw, (N, n_in)),
        "w": f32(draw, (n_out, n_in)),
        "b": f32(draw, (n_out,)) if draw(st.booleans()) else None,
        "out": maybe_out(draw, (N, n_out)),
        "act": draw(st.sampled_from((None, "relu", "leaky_relu"))),
        "negative_slope": 0.01,
    }


def _dense_backward(draw):
    N, n_in, n_out = dim(draw, large=129), dim(draw), dim(draw)
    acc = draw(st.booleans())
    return {
        "x": f32(draw, (N, n_in)),
        "w": f32(draw, (n_out, n_in)),
        "dy": f32(draw, (N, n_out)),
        "dx": maybe_out(draw, (N, n_in)),
        "dw": np.zeros((n_out, n_in), np.float32) if acc else maybe_out(draw, (n_out, n_in)),
        "db": np.zeros(n_out, np.float32) if acc else maybe_out(draw, (n_out,)),
        "need_dx": draw(st.booleans()),
        "accumulate": acc,
    }


SPECS = {
    "dense_forward": Spec(_dense_forward, outs=("out",), strs=("act",), floats=("negative_slope",)),
    "dense_backward": Spec(_dense_backward, outs=("dx", "dw", "db"), flags=("need_dx", "accumulate")),
}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
