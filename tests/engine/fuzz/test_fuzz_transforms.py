"""Fuzz of the batched affine resampling (``_engine/_transforms.pyx``)."""

import numpy as np
from hypothesis import strategies as st

from _fuzz import Spec, alias_test, dim, f32, family_test, maybe_out


def _args(draw):
    N, C, H, W = dim(draw, hi=3), dim(draw, hi=3), dim(draw, large=40), dim(draw)
    theta = np.tile(np.array([[1, 0, 0], [0, 1, 0]], np.float32), (N, 1, 1))
    theta += f32(draw, (N, 2, 3), scale=draw(st.sampled_from((0.0, 0.3, 1e3))), extreme=False)
    return N, C, H, W, f32(draw, (N, C, H, W)), theta


def _forward(draw):
    N, C, H, W, x, theta = _args(draw)
    return {"x": x, "theta": theta, "out": maybe_out(draw, x.shape)}


def _backward(draw):
    N, C, H, W, x, theta = _args(draw)
    return {
        "x": x,
        "theta": theta,
        "dy": f32(draw, x.shape),
        "need_dx": draw(st.booleans()),
        "need_dtheta": draw(st.booleans()),
        "dx": maybe_out(draw, x.shape),
        "dtheta": maybe_out(draw, theta.shape),
    }


SPECS = {
    "affine_resample_forward": Spec(_forward, outs=("out",)),
    "affine_resample_backward": Spec(_backward, outs=("dx", "dtheta"), flags=("need_dx", "need_dtheta")),
}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
