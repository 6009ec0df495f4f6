"""The per-term modes of the pair-loss kernels (per-term losses, reducer weights): the C engine
equals its numpy twin (hypothesis, odd shapes, N = 1, empty tuples), the fused reductions are
those modes with the reducer's weights, and the weighted backward matches float64 finite
differences of the twin."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import central_diff
from mantissa_embed import _reference as R, engine as E, utils
from mantissa_embed._reference import _pair_losses as PL

SETTINGS = settings(max_examples=60, deadline=None)


def _dist(seed, n, m, d=5, sim=False):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-6)
    r = x if m is None else rng.standard_normal((m, d)).astype(np.float32)
    if m is not None:
        r /= np.maximum(np.linalg.norm(r, axis=1, keepdims=True), 1e-6)
    return (x @ r.T).astype(np.float32) if sim else E.euclidean_forward(x, r)


def _labels(seed, n, k):
    return np.random.default_rng(seed + 3).integers(0, k, n).astype(np.int64)


def _close(a, b, atol=2e-6, rtol=1e-5):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _same(ra, rb):
    """Two results (loss, ddist, stats, losses) of the engine and the twin agree."""
    assert ra[0] == pytest.approx(rb[0], rel=1e-5, abs=1e-5)
    if ra[1] is None:
        assert rb[1] is None
    else:
        _close(ra[1], rb[1], atol=1e-5)
    assert ra[2].keys() == rb[2].keys()
    for k in ra[2]:
        if k.startswith("num_"):
            assert ra[2][k] == rb[2][k], k
        else:
            assert ra[2][k] == pytest.approx(rb[2][k], rel=1e-5, abs=1e-5), k
    _close(ra[3], rb[3], atol=1e-7, rtol=3e-7)  # relu terms are bitwise equal; softplus to 1 ulp


def _weights(seed, shape):
    return np.random.default_rng(seed + 11).uniform(-1, 2, shape).astype(np.float32)


@SETTINGS
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 13),
    m=st.one_of(st.none(), st.integers(1, 11)),
    k=st.integers(1, 4),
    inverted=st.booleans(),
    grad=st.booleans(),
)
def test_contrastive_all_terms(seed, n, m, k, inverted, grad):
    dist = _dist(seed, n, m, sim=inverted)
    lab = _labels(seed, n, k)
    rlab = lab if m is None else _labels(seed + 1, m, k)
    kw = dict(
        pos_margin=0.1,
        neg_margin=0.6,
        exclude_self=m is None,
        inverted=inverted,
        return_losses=True,
        grad=grad,
    )
    w = _weights(seed, dist.shape)
    for extra in ({}, {"weights": w}, {"nonzero_only": False}):
        _same(
            E.contrastive_loss_all(dist, lab, rlab, **kw, **extra),
            R.contrastive_loss_all(dist, lab, rlab, **kw, **extra),
        )


@SETTINGS
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 12),
    m=st.integers(1, 12),
    k1=st.integers(0, 25),
    k2=st.integers(0, 25),
    inverted=st.booleans(),
)
def test_contrastive_pairs_terms(seed, n, m, k1, k2, inverted):
    dist = _dist(seed, n, m, sim=inverted)
    rng = np.random.default_rng(seed + 5)
    a1, p = rng.integers(0, n, k1), rng.integers(0, m, k1)  # duplicates included
    a2, nn = rng.integers(0, n, k2), rng.integers(0, m, k2)
    kw = dict(pos_margin=0.2, neg_margin=0.5, inverted=inverted, return_losses=True)
    w = _weights(seed, (k1 + k2,))
    for extra in ({}, {"weights": w}, {"nonzero_only": False, "grad": False}):
        _same(
            E.contrastive_loss_pairs(dist, a1, p, a2, nn, **kw, **extra),
            R.contrastive_loss_pairs(dist, a1, p, a2, nn, **kw, **extra),
        )


@SETTINGS
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 12),
    m=st.one_of(st.none(), st.integers(1, 10)),
    k=st.integers(1, 4),
    swap=st.booleans(),
    smooth=st.booleans(),
    inverted=st.booleans(),
)
def test_triplet_all_terms(seed, n, m, k, swap, smooth, inverted):
    swap = swap and m is None
    dist = _dist(seed, n, m, sim=inverted)
    lab = _labels(seed, n, k)
    rlab = lab if m is None else _labels(seed + 1, m, k)
    ex = m is None
    T = E.triplet_all_count(lab, rlab, exclude_self=ex)
    assert T == R.triplet_all_count(lab, rlab, exclude_self=ex)
    assert T == len(utils.get_all_triplets_indices(lab, None if ex else rlab)[0])
    kw = dict(margin=0.1, exclude_self=ex, swap=swap, smooth=smooth, inverted=inverted, return_losses=True)
    for extra in ({}, {"weights": _weights(seed, (T,))}, {"nonzero_only": False, "grad": False}):
        _same(
            E.triplet_loss_all(dist, lab, rlab, **kw, **extra),
            R.triplet_loss_all(dist, lab, rlab, **kw, **extra),
        )


@SETTINGS
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 12),
    k=st.integers(0, 30),
    swap=st.booleans(),
    smooth=st.booleans(),
    inverted=st.booleans(),
)
def test_triplet_triplets_terms(seed, n, k, swap, smooth, inverted):
    dist = _dist(seed, n, None, sim=inverted)
    a, p, nn = np.random.default_rng(seed + 5).integers(0, n, (3, k))
    kw = dict(margin=0.1, swap=swap, smooth=smooth, inverted=inverted, return_losses=True)
    for extra in ({}, {"weights": _weights(seed, (k,))}, {"nonzero_only": False}):
        _same(
            E.triplet_loss_triplets(dist, a, p, nn, **kw, **extra),
            R.triplet_loss_triplets(dist, a, p, nn, **kw, **extra),
        )


@pytest.mark.parametrize("mod", [E, R])
@pytest.mark.parametrize("nonzero_only", [True, False])
def test_fused_reduction_is_the_weighted_mode_with_the_reducer_weights(mod, nonzero_only):
    """MEAN / AVG_NON_ZERO fused == WEIGHTS with d value / d l_t of that reducer."""
    dist = _dist(0, 17, None)
    lab = _labels(0, 17, 3)
    kw = dict(exclude_self=True, nonzero_only=nonzero_only)
    for fn, args in (
        (mod.triplet_loss_all, dict(margin=0.2, swap=True)),
        (mod.triplet_loss_all, dict(margin=0.2, smooth=True)),
    ):
        v, g, _, terms = fn(dist, lab, lab, return_losses=True, **args, **kw)
        w = ((terms > 0) if nonzero_only else np.ones_like(terms)) / max(
            ((terms > 0) if nonzero_only else terms >= 0).sum(), 1
        )
        v2, g2, _ = fn(dist, lab, lab, weights=w, **args, **kw)
        assert v2 == pytest.approx(v, rel=1e-5)
        _close(g2, g, atol=1e-6)
    v, g, st_, terms = mod.contrastive_loss_all(dist, lab, lab, 0.1, 0.6, return_losses=True, **kw)
    pos = (lab[:, None] == lab[None, :]) & ~np.eye(17, dtype=bool)
    w = np.zeros_like(terms)
    for mask in (pos, ~(lab[:, None] == lab[None, :])):
        keep = mask & (terms > 0) if nonzero_only else mask
        w[keep] = 1.0 / max(keep.sum(), 1)
    v2, g2, _ = mod.contrastive_loss_all(dist, lab, lab, 0.1, 0.6, weights=w, **kw)
    assert v2 == pytest.approx(v, rel=1e-5)
    _close(g2, g, atol=1e-6)


def test_empty_and_single_inputs():
    for mod in (E, R):
        d1 = _dist(0, 1, None)
        lab = np.zeros(1, np.int64)
        v, g, st_, terms = mod.triplet_loss_all(
            d1, lab, lab, exclude_self=True, weights=np.zeros(0), return_losses=True
        )
        assert v == 0 and terms.shape == (0,) and not g.any() and st_["num_triplets"] == 0
        v, g, st_, terms = mod.triplet_loss_triplets(d1, [], [], [], weights=np.zeros(0), return_losses=True)
        assert v == 0 and terms.shape == (0,) and not g.any()
        v, g, st_, terms = mod.contrastive_loss_pairs(
            d1, [], [], [], [], weights=np.zeros(0), return_losses=True
        )
        assert v == 0 and terms.shape == (0,) and not g.any()
        v, g, st_, terms = mod.contrastive_loss_all(
            np.zeros((0, 3), np.float32), [], [0, 1, 2], weights=np.zeros((0, 3)), return_losses=True
        )
        assert v == 0 and g.shape == (0, 3) and terms.shape == (0, 3)
        with pytest.raises(ValueError, match="weights must have shape"):
            mod.triplet_loss_triplets(d1, [0], [0], [0], weights=np.zeros(2))


def _fd(f, x):
    return central_diff(f, x, 1e-6)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 7),
    k=st.integers(1, 3),
    swap=st.booleans(),
    smooth=st.booleans(),
    inverted=st.booleans(),
)
def test_weighted_backward_matches_finite_differences(seed, n, k, swap, smooth, inverted):
    """float64 twin: d/d dist of sum_t w_t l_t(dist) == the weighted gradient (away from kinks)."""
    rng = np.random.default_rng(seed)
    dist = rng.uniform(0.1, 1.9, (n, n))
    dist = np.round(dist * 64) / 64 + 1 / 256  # distinct values, far from the hinges' kinks
    np.fill_diagonal(dist, 0.0)
    lab = _labels(seed, n, k)
    ex = True
    T = R.triplet_all_count(lab, lab, exclude_self=ex)
    wt = rng.uniform(-1, 2, T)
    targs = (lab, lab, 0.3 + 1 / 512, ex, swap, smooth, inverted)
    _, g, _ = PL._triplet_all_terms(dist, *targs, wt)
    _close(g, _fd(lambda x: np.dot(wt, PL._triplet_all_terms(x, *targs, wt)[0]), dist), atol=1e-6)
    a, p, nn = rng.integers(0, n, (3, 9))
    wk = rng.uniform(-1, 2, 9)
    kargs = (a, p, nn, 0.3 + 1 / 512, swap, smooth, inverted)
    _, g, _ = PL._triplet_triplets_terms(dist, *kargs, wk)
    _close(g, _fd(lambda x: np.dot(wk, PL._triplet_triplets_terms(x, *kargs, wk)[0]), dist), atol=1e-6)
    wc = rng.uniform(-1, 2, (n, n))
    cargs = (lab, lab, 0.2 + 1 / 512, 0.9 + 1 / 512, ex, inverted)
    _, g, _ = PL._contrastive_all_terms(dist, *cargs, wc)
    _close(g, _fd(lambda x: np.sum(wc * PL._contrastive_all_terms(x, *cargs, wc)[0]), dist), atol=1e-6)
    wp = rng.uniform(-1, 2, 9 + 9)
    pargs = (a, p, a[::-1].copy(), nn, 0.2 + 1 / 512, 0.9 + 1 / 512, inverted)
    _, g, _ = PL._contrastive_pairs_terms(dist, *pargs, wp)
    _close(g, _fd(lambda x: np.dot(wp, PL._contrastive_pairs_terms(x, *pargs, wp)[0]), dist), atol=1e-6)


@pytest.mark.parametrize("weighted", [False, True])
def test_terms_modes_bitwise_identical_across_thread_counts(weighted):
    dist = _dist(1, 150, None)
    lab = _labels(1, 150, 4)
    T = E.triplet_all_count(lab, lab, exclude_self=True)
    w = _weights(1, (T,)) if weighted else None
    cw = _weights(2, dist.shape) if weighted else None
    old = E.get_num_threads()
    out = []
    try:
        for t in (1, 2, 3):
            E.set_num_threads(t)
            out.append(
                (
                    E.triplet_loss_all(dist, lab, lab, exclude_self=True, weights=w, return_losses=True),
                    E.contrastive_loss_all(dist, lab, lab, exclude_self=True, weights=cw, return_losses=True),
                )
            )
    finally:
        E.set_num_threads(old)
    for r in out[1:]:
        for x, y in zip(r, out[0]):
            assert x[0] == y[0]
            np.testing.assert_array_equal(x[1], y[1])
            np.testing.assert_array_equal(x[3], y[3])
