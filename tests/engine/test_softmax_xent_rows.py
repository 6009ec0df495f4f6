"""engine.softmax_xent_rows_forward / softmax_xent_rows_backward (softmax_losses_fast.c, InstanceLoss's
single-target row softmax cross-entropy on float32 logits) against their float64 numpy twins
(mantissa_embed._reference), finite differences of the float64 loss, bitwise reproducibility for a
fixed thread count, and the argument checks."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mantissa_embed
from mantissa_embed import _reference as R, engine as E


def _data(seed, n, m, spread=1.0):
    rng = np.random.default_rng(seed)
    sim = (spread * rng.uniform(-1, 1, (n, m))).astype(np.float32)
    t = rng.integers(0, m, n) if m else np.zeros(n, np.int64)
    w = rng.uniform(-1, 1, n).astype(np.float32)
    return sim, t, w


@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 40),
    m=st.integers(1, 1100),
    scale=st.sampled_from([1.0, 4.0, 64.0, 500.0, -8.0]),
    spread=st.sampled_from([1.0, 4.0]),
)
def test_xent_rows_matches_twin(seed, n, m, scale, spread):
    sim, t, w = _data(seed, n, m, spread)
    la, ea = E.softmax_xent_rows_forward(sim, t, scale)
    lb, eb = R.softmax_xent_rows_forward(sim, t, scale)
    assert la.dtype == np.float32 and ea.dtype == np.float32 and la.shape == ea.shape == (n,)
    # float32 logits: an error of a few ulps of max |z| (+ the float sums' relative 1e-6)
    tol = 1e-6 * max(1.0, abs(scale) * spread)
    np.testing.assert_allclose(la, lb, rtol=1e-6, atol=tol)
    np.testing.assert_allclose(ea, eb, rtol=1e-6, atol=tol)
    assert (la >= 0).all()
    ga = E.softmax_xent_rows_backward(sim, t, ea, w, scale)
    gb = R.softmax_xent_rows_backward(sim, t, eb, w, scale)
    assert ga.dtype == np.float32 and ga.shape == (n, m)
    np.testing.assert_allclose(ga, gb, rtol=1e-5, atol=tol * abs(scale) * 1e-1 + 1e-7)
    # each row of the gradient sums to 0 (softmax minus one-hot), up to the float32 rounding of
    # the logits and of lse (a relative error of the probabilities of a few ulps of max |z|)
    if n:
        np.testing.assert_allclose(
            ga.astype(np.float64).sum(axis=1), 0.0, atol=(3e-7 * abs(scale) * spread + 1e-6) * abs(scale)
        )


def test_xent_rows_value_and_gradient_independent():
    """Loss against an explicit float64 -log softmax, gradient against central differences."""
    rng = np.random.default_rng(0)
    n, m, scale = 7, 19, 3.0
    sim = rng.uniform(-1, 1, (n, m)).astype(np.float32)
    t = rng.integers(0, m, n)
    w = rng.uniform(0.1, 1, n).astype(np.float32)

    def f(s):
        z = scale * s.astype(np.float64)
        p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        return -np.log(p[np.arange(n), t])

    loss, lse = E.softmax_xent_rows_forward(sim, t, scale)
    np.testing.assert_allclose(loss, f(sim), rtol=1e-5, atol=1e-6)
    g = E.softmax_xent_rows_backward(sim, t, lse, w, scale)
    h = 1e-3
    fd = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            sp = sim.astype(np.float64).copy()
            sp[i, j] += h
            sm = sim.astype(np.float64).copy()
            sm[i, j] -= h
            fd[i, j] = (w @ f(sp) - w @ f(sm)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-3, atol=1e-5)


def test_xent_rows_large_losses_and_far_targets():
    """Targets hundreds of logits below the row maximum: loss = lse - z_t, gradient -w*scale there."""
    n, m, scale = 4, 300, 500.0
    sim, t, w = _data(5, n, m)
    sim[np.arange(n), t] = -1.0
    sim[:, 0] = 1.0
    t[t == 0] = 1
    sim[np.arange(n), t] = -1.0
    la, ea = E.softmax_xent_rows_forward(sim, t, scale)
    lb, eb = R.softmax_xent_rows_forward(sim, t, scale)
    np.testing.assert_allclose(la, lb, rtol=1e-6)
    assert (la > 900).all()
    g = E.softmax_xent_rows_backward(sim, t, ea, w, scale)
    np.testing.assert_allclose(g[np.arange(n), t], -w * scale, rtol=1e-6)
    # relative error of the probabilities: a few ulps of max |z| = 500 (float32 logits and lse)
    np.testing.assert_allclose(g, R.softmax_xent_rows_backward(sim, t, eb, w, scale), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n,m", [(300, 257), (1024, 1024)])
def test_xent_rows_bitwise_for_fixed_threads(n, m):
    sim, t, w = _data(1, n, m)
    old = mantissa_embed.get_num_threads()
    try:
        outs = {}
        for nt in (1, 2, 3):
            mantissa_embed.set_num_threads(nt)
            row_losses, e = E.softmax_xent_rows_forward(sim, t, 64.0)
            g = E.softmax_xent_rows_backward(sim, t, e, w, 64.0)
            l2, e2 = E.softmax_xent_rows_forward(sim, t, 64.0)
            assert np.array_equal(row_losses, l2) and np.array_equal(e, e2)
            outs[nt] = (row_losses, e, g)
        for nt in (2, 3):  # rows are independent: even the thread count does not matter
            for a, b in zip(outs[1], outs[nt]):
                assert np.array_equal(a, b)
    finally:
        mantissa_embed.set_num_threads(old)


@pytest.mark.parametrize("mod", [E, R], ids=["engine", "numpy"])
def test_xent_rows_checks(mod):
    sim, t, w = _data(2, 5, 6)
    with pytest.raises(ValueError, match="target must be in"):
        mod.softmax_xent_rows_forward(sim, np.array([0, 1, 2, 3, 6]), 1.0)
    with pytest.raises(ValueError, match="target must be in"):
        mod.softmax_xent_rows_forward(sim, np.array([0, 1, -1, 3, 5]), 1.0)
    with pytest.raises(ValueError, match="target must have shape"):
        mod.softmax_xent_rows_forward(sim, np.array([0, 1]), 1.0)
    with pytest.raises(TypeError, match="integer dtype"):
        mod.softmax_xent_rows_forward(sim, t.astype(np.float32), 1.0)
    _, lse = mod.softmax_xent_rows_forward(sim, t, 1.0)
    with pytest.raises(TypeError, match="lse must be float32"):
        mod.softmax_xent_rows_backward(sim, t, lse.astype(np.float64), w, 1.0)
    with pytest.raises(ValueError, match="weights must have shape"):
        mod.softmax_xent_rows_backward(sim, t, lse, w[:3], 1.0)
    row_losses, e = mod.softmax_xent_rows_forward(np.zeros((0, 3), np.float32), np.zeros(0, np.int64), 1.0)
    assert row_losses.shape == e.shape == (0,)
