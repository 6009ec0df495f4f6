"""P2SGradLoss gradients: finite differences in float64 (embeddings and weight), C kernel vs numpy twin."""

import numpy as np
from hypothesis import assume, given, settings, strategies as st

from _helpers import central_diff_inplace
from mantissa_embed import _reference as R, engine
from mantissa_embed.losses import P2SGradLoss


def _fd(f, a, eps=1e-6):
    return central_diff_inplace(f, a, eps)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 7), st.integers(2, 5), st.integers(1, 5), st.integers(0, 2**31))
def test_finite_differences(n, d, c, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    y = rng.integers(0, c, n)
    f = P2SGradLoss(c, d, seed=seed)
    W = f.weight.data.astype(np.float64)
    cos = (x / np.linalg.norm(x, axis=1, keepdims=True)) @ W.T
    assume(np.abs(cos).max() < 1 - 1e-4)  # central differences must not straddle the clamp at +-1
    loss, dx, dw = f.compute64(x, y, W)
    np.testing.assert_allclose(dx, _fd(lambda: f.compute64(x, y, W)[0], x), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(dw, _fd(lambda: f.compute64(x, y, W)[0], W), rtol=1e-5, atol=1e-8)


def test_paper_gradient_form():
    """dL/dx_i = 2/(NC) sum_j (cos_ij - 1[j=y_i]) d cos_ij / d x_i, with d cos / d x = (w - cos xhat)/|x|
    (P2SGrad Eq. 11 up to the constant)."""
    rng = np.random.default_rng(0)
    n, d, c = 5, 4, 3
    x = rng.standard_normal((n, d))
    y = rng.integers(0, c, n)
    f = P2SGradLoss(c, d, seed=1)
    W = f.weight.data.astype(np.float64)
    _, dx, _ = f.compute64(x, y, W)
    nx = np.linalg.norm(x, axis=1, keepdims=True)
    xh = x / nx
    cos = xh @ W.T
    t = np.eye(c)[y]
    expect = np.zeros_like(x)
    for i in range(n):
        for j in range(c):
            expect[i] += 2 / (n * c) * (cos[i, j] - t[i, j]) * (W[j] - cos[i, j] * xh[i]) / nx[i]
    np.testing.assert_allclose(dx, expect, rtol=1e-10, atol=1e-14)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 40), st.integers(1, 33), st.integers(1, 20), st.integers(0, 2**31))
def test_kernel_matches_twin(n, d, c, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    w = rng.standard_normal((c, d))
    w = (w / np.linalg.norm(w, axis=1, keepdims=True)).astype(np.float32)
    y = rng.integers(0, c, n)
    a = engine.p2sgrad_forward_backward(x, w, y)
    b = R.p2sgrad_forward_backward(x, w, y)
    assert abs(a[0] - b[0]) <= 1e-5 * max(1.0, abs(b[0]))
    np.testing.assert_allclose(a[1], b[1], rtol=1e-3, atol=1e-6)
    np.testing.assert_allclose(a[2], b[2], rtol=1e-3, atol=1e-6)


def test_backends_agree_on_the_loss_call():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((12, 8)).astype(np.float32)
    y = rng.integers(0, 6, 12)
    a, b = P2SGradLoss(6, 8, seed=2), P2SGradLoss(6, 8, seed=2, backend="numpy")
    oa, ob = a(x, y), b(x, y)
    assert abs(oa.loss - ob.loss) < 1e-6
    np.testing.assert_allclose(oa.grad, ob.grad, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(a.weight.grad, b.weight.grad, rtol=1e-4, atol=1e-7)
