"""Regularizers: gradients vs central finite differences of the float64 forward."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import regularizers as R
from mantissa_embed.reducers import MeanReducer, SumReducer, ThresholdReducer


def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        g[idx] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def _check(reg, x):
    value, grad = reg.forward64(x)
    np.testing.assert_allclose(grad, _fd(lambda u: reg.forward64(u)[0], x), rtol=1e-5, atol=1e-6)
    out = reg(x.astype(np.float32))
    assert out.loss == pytest.approx(value, rel=1e-5, abs=1e-6)
    assert out.grad.dtype == np.float32 and out.grad.shape == x.shape
    assert out.terms == {"loss": out.loss}


def _x(seed, n, d):
    return np.random.default_rng(seed).standard_normal((n, d))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 8),
    d=st.integers(1, 6),
    p=st.sampled_from([1, 1.5, 2, 3, float("inf")]),
    power=st.sampled_from([1, 2, 0.5, 3]),
    red=st.sampled_from(["mean", "sum"]),
)
def test_lp(seed, n, d, p, power, red):
    x = _x(seed, n, d)
    if p in (1, float("inf")):  # keep away from the kinks of |.| and of the max
        x = np.where(np.abs(x) < 1e-3, 0.1, x)
        if p == float("inf") and d > 1:
            s = np.sort(np.abs(x), axis=1)
            if np.min(s[:, -1] - s[:, -2]) < 1e-3:
                return
    _check(R.LpRegularizer(p=p, power=power, reducer=MeanReducer() if red == "mean" else SumReducer()), x)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 8), d=st.integers(1, 6))
def test_zero_mean(seed, n, d):
    x = _x(seed, n, d)
    if np.min(np.abs(x.sum(1))) < 1e-3:
        return
    _check(R.ZeroMeanRegularizer(), x)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 8), d=st.integers(1, 6), thr=st.booleans())
def test_center_invariant(seed, n, d, thr):
    x = _x(seed, n, d)
    reg = R.CenterInvariantRegularizer(reducer=ThresholdReducer(low=0.05) if thr else None)
    if thr:
        losses = reg.compute_loss(x)[0]
        if np.min(np.abs(losses - 0.05)) < 1e-4:
            return
    _check(reg, x)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 8), d=st.integers(2, 6))
def test_regular_face(seed, n, d):
    x = _x(seed, n, d)
    y = x / np.linalg.norm(x, axis=1, keepdims=True)
    c = y @ y.T
    np.fill_diagonal(c, -np.inf)
    if n > 2 and np.min(np.diff(np.sort(c, axis=1)[:, -2:], axis=1)) < 1e-4:
        return  # a near tie of the argmax: not differentiable
    _check(R.RegularFaceRegularizer(), x)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), c=st.integers(1, 4), t=st.integers(2, 4), d=st.integers(2, 6))
def test_sparse_centers(seed, c, t, d):
    x = _x(seed, c * t, d)
    _check(R.SparseCentersRegularizer(c, t), x)


def test_values_independent():
    x = np.array([[3.0, -4.0], [1.0, 1.0], [0.0, 0.0]])
    assert R.LpRegularizer().forward64(x)[0] == pytest.approx((5 + np.sqrt(2)) / 3)
    assert R.LpRegularizer(p=1, power=2).forward64(x)[0] == pytest.approx((49 + 4) / 3)
    assert R.ZeroMeanRegularizer().forward64(x)[0] == pytest.approx((1 + 2) / 3)
    sq = np.array([25.0, 2.0, 0.0])
    assert R.CenterInvariantRegularizer().forward64(x)[0] == pytest.approx(np.mean((sq - sq.mean()) ** 2 / 4))
    w = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert R.RegularFaceRegularizer().forward64(w)[0] == pytest.approx(np.sqrt(0.5))
    w = np.array([[1.0, 0.0], [0.0, 1.0]])  # cos = 0 -> sqrt(2) / (2 * 1 pair)
    assert R.SparseCentersRegularizer(1, 2).forward64(w)[0] == pytest.approx(np.sqrt(2) / 2)
    # a zero row has a zero gradient (torch's subgradient)
    np.testing.assert_array_equal(R.LpRegularizer().forward64(x)[1][2], [0.0, 0.0])
