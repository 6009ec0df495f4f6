"""The C softmax-over-pairs kernels (engine.ntxent_all / supcon_all / softmax_nll_forward /
softmax_nll_backward) against their numpy twins (mantissa_embed._reference) on random shapes,
labels, reductions and flags; bitwise reproducibility across thread counts."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import similarity_batch
from mantissa_embed import _reference as R, engine as E

shapes = dict(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 40),
    m=st.integers(0, 40),
    k=st.integers(1, 6),
    square=st.booleans(),
    inverted=st.booleans(),
    temp=st.sampled_from([0.05, 0.07, 0.3, 1.0]),
)


def _close(a, b, rtol=2e-5):
    if a is None or b is None:
        assert a is None and b is None
        return
    b = np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.abs(b).max(initial=0))))


@settings(max_examples=60, deadline=None)
@given(red=st.sampled_from(["mean", "avg_non_zero", "weights"]), **shapes)
def test_ntxent_kernel_matches_twin(red, seed, n, m, k, square, inverted, temp):
    sim, lab, rlab = similarity_batch(seed, n, m, k, square)
    w = (
        np.random.default_rng(seed + 1).uniform(0, 1, sim.shape).astype(np.float32)
        if red == "weights"
        else None
    )
    kw = dict(exclude_self=square, inverted=inverted, reduction=red, weights=w, losses=True)
    a = E.ntxent_all(sim, lab, rlab, temp, **kw)
    b = R.ntxent_all(sim, lab, rlab, temp, **kw)
    assert a[0] == pytest.approx(b[0], rel=2e-5, abs=1e-6)
    _close(a[1], b[1])
    _close(a[2], b[2])
    assert a[3] == b[3]


@settings(max_examples=60, deadline=None)
@given(red=st.sampled_from(["mean", "avg_non_zero", "weights"]), **shapes)
def test_supcon_kernel_matches_twin(red, seed, n, m, k, square, inverted, temp):
    sim, lab, rlab = similarity_batch(seed, n, m, k, square)
    w = np.random.default_rng(seed + 1).uniform(0, 1, n).astype(np.float32) if red == "weights" else None
    kw = dict(exclude_self=square, inverted=inverted, reduction=red, weights=w, losses=True)
    a = E.supcon_all(sim, lab, rlab, temp, **kw)
    b = R.supcon_all(sim, lab, rlab, temp, **kw)
    assert a[0] == pytest.approx(b[0], rel=2e-5, abs=1e-6)
    _close(a[1], b[1])
    _close(a[2], b[2])
    assert a[3]["num_pos_pairs"] == b[3]["num_pos_pairs"]
    assert a[3]["num_anchors"] == b[3]["num_anchors"]
    assert a[3]["num_nonzero"] == b[3]["num_nonzero"]  # a lone dominant positive still counts


def test_supcon_keeps_losses_below_float_epsilon():
    """A lone positive at the row max with a rival 18 nats below: l = log1p(e^-18) ~ 1.5e-8,
    which float32 rounding of 1 + e^-18 would turn into 0 (and drop from AvgNonZeroReducer)."""
    sim = np.array([[-0.9, 0.9]], np.float32)
    for mod in (E, R):
        v, _, row_losses, st = mod.supcon_all(sim, np.array([1]), np.array([0, 1]), 0.1, losses=True)
        assert row_losses[0] == pytest.approx(np.log1p(np.exp(-18.0)), rel=1e-4)
        assert st["num_nonzero"] == 1


@settings(max_examples=60, deadline=None)
@given(scale=st.sampled_from([1.0, 4.0, 64.0]), max_loss=st.sampled_from([np.inf, 104.0, 3.0]), **shapes)
def test_softmax_nll_kernels_match_twin(scale, max_loss, seed, n, m, k, square, inverted, temp):
    sim, lab, rlab = similarity_batch(seed, n, m, k, square)
    kw = dict(exclude_self=square, inverted=inverted)
    la, ea, va = E.softmax_nll_forward(sim, lab, rlab, scale, max_loss=max_loss, **kw)
    lb, eb, vb = R.softmax_nll_forward(sim, lab, rlab, scale, max_loss=max_loss, **kw)
    # rows at the validity threshold may decide differently by rounding: compare the others
    near = np.isfinite(eb[:, 1]) & (np.abs(eb[:, 0] - eb[:, 1] - max_loss) < 1e-3 * max(1, scale))
    assert np.array_equal(va[~near], vb[~near])
    _close(la[~near], lb[~near])
    np.testing.assert_allclose(ea, eb, rtol=1e-6, atol=1e-6)
    w = np.random.default_rng(seed).uniform(0, 1, sim.shape[0]).astype(np.float32) * vb
    _close(
        E.softmax_nll_backward(sim, lab, rlab, eb, w, scale, **kw),
        R.softmax_nll_backward(sim, lab, rlab, eb, w, scale, **kw),
    )


def test_large_logits_stay_finite():
    """Spreads far beyond exp's range (distance scale 1e4, T=0.01) give finite values."""
    sim, lab, rlab = similarity_batch(0, 30, 30, 3, True, scale=1e4)
    for fn in (E.ntxent_all, R.ntxent_all, E.supcon_all, R.supcon_all):
        for inv in (True, False):
            v, g, row_losses, _ = fn(sim, lab, rlab, 0.01, exclude_self=True, inverted=inv, losses=True)
            assert np.isfinite(v) and np.isfinite(g).all() and np.isfinite(row_losses).all()
    # a hopeless positive saturates at -log(tiny) (PML's + tiny), with a vanishing gradient
    sim = np.array([[0.0, -1e4, 1e4]], np.float32)
    v, g, _, _ = E.ntxent_all(sim, np.array([0]), np.array([0, 0, 1]), 1.0)
    assert v == pytest.approx(-np.log(np.finfo(np.float32).tiny), rel=1e-6)
    assert np.abs(g).max() < 1e-30


@pytest.mark.parametrize("fn", ["ntxent_all", "supcon_all"])
def test_bitwise_reproducible_across_thread_counts(fn):
    sim, lab, rlab = similarity_batch(5, 300, 300, 20, True)
    old = E.get_num_threads()
    try:
        res = []
        for t in (1, 2, 3):
            E.set_num_threads(t)
            res.append(getattr(E, fn)(sim, lab, rlab, 0.1, exclude_self=True))
    finally:
        E.set_num_threads(old)
    for r in res[1:]:
        assert r[0] == res[0][0]
        assert np.array_equal(r[1], res[0][1])


def test_kernel_argument_errors():
    sim, lab, rlab = similarity_batch(0, 4, 5, 2, False)
    for mod in (E, R):
        with pytest.raises(ValueError, match="labels"):
            mod.ntxent_all(sim, lab[:3], rlab, 0.1)
        with pytest.raises(TypeError, match="ref_labels"):
            mod.supcon_all(sim, lab, rlab.astype(float), 0.1)
        with pytest.raises(ValueError, match="exclude_self"):
            mod.ntxent_all(sim, lab, rlab, 0.1, exclude_self=True)
        with pytest.raises(ValueError, match="temperature"):
            mod.ntxent_all(sim, lab, rlab, 0.0)
        with pytest.raises(ValueError, match="reduction"):
            mod.supcon_all(sim, lab, rlab, 0.1, reduction="sum")
        with pytest.raises(ValueError, match="weights"):
            mod.ntxent_all(sim, lab, rlab, 0.1, reduction="weights", weights=np.ones(3, np.float32))
        with pytest.raises(ValueError, match="sim"):
            mod.softmax_nll_forward(sim[None], lab, rlab)
