"""Gradients of the affine resampling (dx and dtheta) against float64 central finite
differences of the forward, for the engine's float32 backward and the twin's float64 one."""

import numpy as np
import pytest

from _helpers import central_diff
from mantissa_embed import engine
from mantissa_embed._reference import _transforms as tref


@pytest.mark.parametrize("N,C,H,W,seed", [(1, 1, 5, 5, 0), (2, 2, 7, 5, 1), (3, 1, 4, 9, 2), (1, 3, 1, 3, 3)])
def test_gradients_match_finite_differences(N, C, H, W, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, C, H, W))
    theta = np.eye(2, 3)[None] + 0.4 * rng.standard_normal((N, 2, 3))
    R = rng.standard_normal((N, C, H, W))

    def loss_x(v):
        return float((tref._affine_resample(v, theta) * R).sum())

    def loss_t(t):
        return float((tref._affine_resample(x, t) * R).sum())

    num_dx = central_diff(loss_x, x, 1e-3)  # linear in x: exact up to rounding
    num_dt = central_diff(loss_t, theta, 1e-7)  # piecewise smooth in theta: a small step
    dx64, dt64 = tref._affine_resample_grads(x, theta, R)
    np.testing.assert_allclose(dx64, num_dx, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(dt64, num_dt, rtol=1e-5, atol=1e-5 * (1 + np.abs(num_dt).max()))
    dx, dt = engine.affine_resample_backward(
        x.astype(np.float32), theta.astype(np.float32), R.astype(np.float32)
    )
    np.testing.assert_allclose(dx, num_dx, rtol=1e-4, atol=1e-4 * (1 + np.abs(num_dx).max()))
    np.testing.assert_allclose(dt, num_dt, rtol=1e-3, atol=1e-4 * (1 + np.abs(num_dt).max()))
