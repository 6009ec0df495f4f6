"""Ranking losses (FastAP, Histogram, RankedList, PNP, ThresholdConsistentMargin,
DynamicSoftMargin): value against a float64 brute-force computation and gradient against its
central finite differences, on hypothesis batches (random labels, one class, all distinct,
duplicate embeddings, N=1, N=0, with ref_emb where supported), away from bin edges and kinks."""

import os
import sys

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

sys.path.insert(0, os.path.dirname(__file__))
import _ranking_brute as B  # noqa: E402

from _helpers import central_diff, grad_batch
from mantissa_embed import losses  # noqa: E402

H = 1e-6
KINK = 1e-4
KINDS = ["random", "one_class", "distinct", "dups"]


def _fd(f, x):
    return central_diff(f, x, H)


def _batch(seed, n, d, kind, k=3):
    x, y, _ = grad_batch(seed, n, d, kind, k)
    return x, y


def _check(out, want, g_fd, x):
    assert out.grad.shape == x.shape and out.grad.dtype == np.float32
    assert np.isfinite(out.loss) and np.all(np.isfinite(out.grad))
    assert out.loss == pytest.approx(want, rel=1e-4, abs=1e-5)
    np.testing.assert_allclose(out.grad, g_fd, rtol=1e-3, atol=1e-3 * max(1.0, np.abs(g_fd).max(initial=0)))


COMMON = dict(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 7),
    d=st.integers(2, 4),
    kind=st.sampled_from(KINDS),
    backend=st.sampled_from(["mantissa", "numpy"]),
)


@settings(max_examples=12, deadline=None)
@given(**COMMON, num_bins=st.sampled_from([10, 4, 25]))
def test_fast_ap(seed, n, d, kind, backend, num_bins):
    x, y = _batch(seed, n, d, kind)
    x64 = x.astype(np.float64)
    want, kink = B.fast_ap(x64, y, num_bins)
    assume(kink > KINK)
    out = losses.FastAPLoss(num_bins=num_bins, backend=backend)(x, y)
    _check(out, want, _fd(lambda z: B.fast_ap(z, y, num_bins)[0], x64), x)


@settings(max_examples=12, deadline=None)
@given(**COMMON, n_bins=st.sampled_from([10, 3, 50]))
def test_histogram(seed, n, d, kind, backend, n_bins):
    x, y = _batch(seed, n, d, kind)
    x64 = x.astype(np.float64)
    want, kink = B.histogram(x64, y, n_bins)
    assume(kink > KINK)
    out = losses.HistogramLoss(n_bins=n_bins, backend=backend)(x, y)
    _check(out, want, _fd(lambda z: B.histogram(z, y, n_bins)[0], x64), x)


@settings(max_examples=12, deadline=None)
@given(
    **COMMON,
    margin=st.sampled_from([0.4, 1.0]),
    Tn=st.sampled_from([0.0, 1.0, 4.0]),
    Tp=st.sampled_from([0.0, 2.0]),
    imbalance=st.sampled_from([0.5, 0.2]),
)
def test_ranked_list(seed, n, d, kind, backend, margin, Tn, Tp, imbalance):
    x, y = _batch(seed, n, d, kind)
    x64 = x.astype(np.float64)
    kw = dict(margin=margin, Tn=Tn, Tp=Tp, imbalance=imbalance)
    want, kink = B.ranked_list(x64, y, **kw)
    assume(kink > KINK)
    out = losses.RankedListLoss(**kw, backend=backend)(x, y)
    _check(out, want, _fd(lambda z: B.ranked_list(z, y, **kw)[0], x64), x)


@settings(max_examples=15, deadline=None)
@given(
    **COMMON, variant=st.sampled_from(["O", "Ds", "Dq", "Iu", "Ib"]), anneal=st.sampled_from([0.01, 0.1, 1.0])
)
def test_pnp(seed, n, d, kind, backend, variant, anneal):
    x, y = _batch(seed, n, d, kind)
    x64 = x.astype(np.float64)
    want, _ = B.pnp(x64, y, anneal=anneal, variant=variant)
    out = losses.PNPLoss(anneal=anneal, variant=variant, backend=backend)(x, y)
    _check(out, want, _fd(lambda z: B.pnp(z, y, anneal=anneal, variant=variant)[0], x64), x)


@settings(max_examples=15, deadline=None)
@given(
    **COMMON,
    m=st.integers(0, 5),
    use_ref=st.booleans(),
    margins=st.sampled_from([(0.9, 0.5), (0.2, -0.2), (0.5, 0.0)]),
)
def test_threshold_consistent_margin(seed, n, d, kind, backend, m, use_ref, margins):
    x, y = _batch(seed, n, d, kind)
    kw = dict(margin_plus=margins[0], margin_minus=margins[1], lambda_minus=0.7)
    x64 = x.astype(np.float64)
    loss = losses.ThresholdConsistentMarginLoss(**kw, backend=backend)
    if not use_ref:
        want, kink = B.tcm(x64, y, **kw)
        assume(kink > KINK)
        out = loss(x, y)
        _check(out, want, _fd(lambda z: B.tcm(z, y, **kw)[0], x64), x)
        return
    rng = np.random.default_rng(seed + 1)
    r = rng.standard_normal((m, d)).astype(np.float32)
    ry = rng.integers(0, 3, m)
    r64 = r.astype(np.float64)
    want, kink = B.tcm(x64, y, r64, ry, **kw)
    assume(kink > KINK)
    out = loss(x, y, ref_emb=r, ref_labels=ry)
    _check(out, want, _fd(lambda z: B.tcm(z, y, r64, ry, **kw)[0], x64), x)
    g_r = _fd(lambda z: B.tcm(x64, y, z, ry, **kw)[0], r64)
    np.testing.assert_allclose(out.ref_grad, g_r, rtol=1e-3, atol=1e-3 * max(1.0, np.abs(g_r).max(initial=0)))


@settings(max_examples=15, deadline=None)
@given(
    **COMMON,
    m=st.integers(1, 5),
    mode=st.sampled_from(["labels", "no_labels", "ref_labels", "ref_no_labels"]),
    num_bins=st.sampled_from([10, 7]),
)
def test_dynamic_soft_margin(seed, n, d, kind, backend, m, mode, num_bins):
    x, y = _batch(seed, n, d, kind)
    x64 = x.astype(np.float64)
    rng = np.random.default_rng(seed + 1)
    r = rng.standard_normal((m, d)).astype(np.float32)
    ry = rng.integers(0, 3, m)
    r64 = r.astype(np.float64)
    use_ref = mode.startswith("ref")
    yy = None if mode.endswith("no_labels") else y
    ref_args = (r64, ry) if use_ref else (None, None)
    want, kink = B.dsm_first_call(x64, yy, *ref_args, num_bins=num_bins)
    assume(kink > KINK)
    loss = losses.DynamicSoftMarginLoss(num_bins=num_bins, backend=backend)
    out = loss(x, yy, ref_emb=r if use_ref else None, ref_labels=ry if use_ref and yy is not None else None)
    if yy is None:
        # the hardest negative must be unique (a tie changes which entry gets the gradient): of
        # each row among the others, or with a reference set, of each row and each column of
        # the distances to it (duplicate rows of x tie on a column's minimum)
        assume(_unique_min_ref(x64, r64) if use_ref else n < 3 or _unique_min(x64))
    _check(out, want, _fd(lambda z: B.dsm_first_call(z, yy, *ref_args, num_bins=num_bins)[0], x64), x)
    if use_ref:
        g_r = _fd(lambda z: B.dsm_first_call(x64, yy, z, ref_args[1], num_bins=num_bins)[0], r64)
        np.testing.assert_allclose(
            out.ref_grad, g_r, rtol=1e-3, atol=1e-3 * max(1.0, np.abs(g_r).max(initial=0))
        )


def _unique_min_ref(x, r):
    dm = B.euclid(B.nrm(x), B.nrm(r))
    k = min(dm.shape)
    dm[np.arange(k), np.arange(k)] = np.inf  # the pairs (i, i) are the positives
    for m in (dm, dm.T):
        s = np.sort(m, axis=1)
        if s.shape[1] >= 2 and not np.all((s[:, 1] - s[:, 0] > 1e-4) | ~np.isfinite(s[:, 0])):
            return False
    return True


def _unique_min(x):
    dm = B.euclid(B.nrm(x), B.nrm(x))
    np.fill_diagonal(dm, np.inf)
    s = np.sort(dm, axis=1)
    return bool(np.all(s[:, 1] - s[:, 0] > 1e-4))


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 6),
    d=st.integers(2, 4),
    K=st.integers(1, 4),
    lambdaC=st.sampled_from([1.0, 0.0, float("inf")]),
    margin=st.sampled_from([5e-4, 0.05]),
    backend=st.sampled_from(["mantissa", "numpy"]),
)
def test_manifold(seed, n, d, K, lambdaC, margin, backend):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    mc = rng.integers(0, K, n)
    loss = losses.ManifoldLoss(d, K=K, lambdaC=lambdaC, margin=margin, seed=seed, backend=backend)
    P = loss.proxies.data.astype(np.float64)
    x64 = x.astype(np.float64)
    if n == 0:
        out = loss(x, indices_tuple=mc)
        assert out.loss == 0.0 and out.grad.shape == (0, d) and not loss.proxies.grad.any()
        return
    want, kink = B.manifold(x64, P, mc, lambdaC, margin=margin)
    assume(kink > KINK)
    out = loss(x, indices_tuple=mc)
    _check(out, want, _fd(lambda z: B.manifold(z, P, mc, lambdaC, margin=margin)[0], x64), x)
    g_p = _fd(lambda z: B.manifold(x64, z, mc, lambdaC, margin=margin)[0], P)
    np.testing.assert_allclose(
        loss.proxies.grad, g_p, rtol=1e-3, atol=1e-3 * max(1.0, np.abs(g_p).max(initial=0))
    )
    out2 = loss(x, indices_tuple=mc)  # a second call accumulates into proxies.grad
    np.testing.assert_allclose(
        loss.proxies.grad, 2 * g_p, rtol=1e-3, atol=2e-3 * max(1.0, np.abs(g_p).max(initial=0))
    )
    assert out2.loss == pytest.approx(out.loss)
