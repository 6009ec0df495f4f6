"""CrossEntropyLoss (softmax cross-entropy over logits) and its C kernel vs the numpy twin."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import _reference as R, engine, layers, losses


def _ce64(z, y):
    z = z.astype(np.float64)
    m = z.max(1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(z - m).sum(1))
    return np.mean(lse - z[np.arange(len(y)), y])


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 30), st.integers(1, 12), st.floats(0.1, 4.0), st.integers(0, 2**31))
def test_kernel_matches_twin(n, c, scale, seed):
    rng = np.random.default_rng(seed)
    z = (rng.standard_normal((n, c)) * 10).astype(np.float32)
    y = rng.integers(0, c, n)
    a = engine.softmax_xent_forward_backward(z, y, scale, 0.5)
    b = R.softmax_xent_forward_backward(z, y, scale, 0.5)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_value_and_finite_differences(backend):
    rng = np.random.default_rng(1)
    z = (rng.standard_normal((9, 5)) * 3).astype(np.float32)
    y = rng.integers(0, 5, 9)
    out = losses.CrossEntropyLoss(backend=backend)(z, y)
    assert out.loss == pytest.approx(_ce64(z, y), rel=1e-10)
    assert out.terms == {"loss": out.loss}
    z64 = z.astype(np.float64)
    g = np.zeros_like(z64)
    for idx in np.ndindex(z.shape):
        o = z64[idx]
        z64[idx] = o + 1e-6
        a = _ce64(z64, y)
        z64[idx] = o - 1e-6
        b = _ce64(z64, y)
        z64[idx] = o
        g[idx] = (a - b) / 2e-6
    np.testing.assert_allclose(out.grad, g, rtol=1e-4, atol=1e-7)
    s = losses.CrossEntropyLoss(reduction="sum", backend=backend)(z, y)
    assert s.loss == pytest.approx(9 * out.loss, rel=1e-10)
    np.testing.assert_allclose(s.grad, 9 * out.grad, rtol=1e-5)


def test_large_logits_do_not_overflow():
    z = np.array([[1e4, -1e4, 0.0], [3e4, 3e4, 3e4]], np.float32)
    out = losses.CrossEntropyLoss()(z, np.array([1, 2]))
    assert np.isfinite(out.loss) and np.isfinite(out.grad).all()
    assert out.loss == pytest.approx((2e4 + np.log(3)) / 2, rel=1e-6)


def test_errors_and_empty():
    f = losses.CrossEntropyLoss()
    z = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match="labels"):
        f(z, np.array([0, 1, 4]))
    with pytest.raises(ValueError, match="labels"):
        f(z, np.array([0, -1, 2]))
    with pytest.raises(ValueError, match="labels"):
        f(z, np.array([0, 1]))
    with pytest.raises(TypeError, match="labels"):
        f(z, np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="logits"):
        f(np.zeros(4, np.float32), np.array([0]))
    with pytest.raises(ValueError, match="NaN"):
        f(np.full((3, 4), np.nan, np.float32), np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="reduction"):
        losses.CrossEntropyLoss(reduction="none")
    out = f(np.zeros((0, 4), np.float32), np.zeros(0, np.int64))
    assert out.loss == 0.0 and out.grad.shape == (0, 4)
    assert f.parameters() == []


def test_dense_classifier_head_trains():
    from mantissa_embed import optim

    rng = np.random.default_rng(0)
    emb = rng.standard_normal((32, 8)).astype(np.float32)
    y = (emb[:, 0] > 0).astype(np.int64) + 2 * (emb[:, 1] > 0)
    head = layers.Dense(4)
    ce = losses.CrossEntropyLoss()
    logits = head.forward(emb)  # shapes inferred at the first forward
    first = ce(logits, y).loss
    opt = optim.SGD(head.parameters(), lr=0.5)
    dx = head.backward(ce(logits, y).grad)
    assert dx.shape == emb.shape
    for _ in range(50):
        opt.zero_grad()
        out = ce(head.forward(emb), y)
        head.backward(out.grad)
        opt.step()
    assert out.loss < first
