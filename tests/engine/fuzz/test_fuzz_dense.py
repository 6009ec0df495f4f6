"""Fuzz of the fully connected layer's wrappers (``_engine/_dense.pyx``)."""
import numpy as np
from hypothesis import strategies as st

from _fuzz import Spec, alias_test, dim, f32, family_test, maybe_out


def _dense_forward(draw):
    N, I, O = dim(draw, large=129), dim(draw), dim(draw)
    return {"x": f32(draw, (N, I)), "w": f32(draw, (O, I)), "b": f32(draw, (O,)) if draw(st.booleans()) else None,
            "out": maybe_out(draw, (N, O)), "act": draw(st.sampled_from((None, "relu", "leaky_relu"))),
            "negative_slope": 0.01}


def _dense_backward(draw):
    N, I, O = dim(draw, large=129), dim(draw), dim(draw)
    acc = draw(st.booleans())
    return {"x": f32(draw, (N, I)), "w": f32(draw, (O, I)), "dy": f32(draw, (N, O)), "dx": maybe_out(draw, (N, I)),
            "dw": np.zeros((O, I), np.float32) if acc else maybe_out(draw, (O, I)),
            "db": np.zeros(O, np.float32) if acc else maybe_out(draw, (O,)),
            "need_dx": draw(st.booleans()), "accumulate": acc}


SPECS = {
    "dense_forward": Spec(_dense_forward, outs=("out",), strs=("act",), floats=("negative_slope",)),
    "dense_backward": Spec(_dense_backward, outs=("dx", "dw", "db"), flags=("need_dx", "accumulate")),
}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
