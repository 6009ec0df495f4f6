"""Oracle: LpDistance (any p), SNRDistance and BatchedDistance equal pytorch-metric-learning's
(values and torch-autograd gradients of a random linear functional, 1e-4), and the losses accept
them: ContrastiveLoss(distance=LpDistance(p=1)) and TripletMarginLoss(distance=SNRDistance())
equal PML's, value and gradient."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

torch = pytest.importorskip("torch")
pml_dist = pytest.importorskip("pytorch_metric_learning.distances")
pml_losses = pytest.importorskip("pytorch_metric_learning.losses")
pml_red = pytest.importorskip("pytorch_metric_learning.reducers")

from mantissa_embed import distances, losses, reducers  # noqa: E402

INF = float("inf")
KINK = 1e-5


def _emb(seed, n, d):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def _t(x):
    return None if x is None else torch.tensor(x.astype(np.float64), requires_grad=True)


def _close(a, b, tol=1e-4):
    b = np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, float(np.abs(b).max(initial=0))))


def _smooth(q, r, p):
    """No coordinate difference at a kink of |.| (p=1) / no near-tie of the max (p=inf)."""
    diff = np.abs(q.astype(np.float64)[:, None] - r.astype(np.float64)[None])
    off = diff.sum(axis=2) > 0  # exact duplicates (the diagonal) have the subgradient 0 in both
    diff = diff[off]
    if p == 1:
        return not np.any(diff < 1e-4)
    if p == INF and diff.shape[-1] > 1:
        s = np.sort(diff, axis=-1)
        return not np.any(s[:, -1] - s[:, -2] < 1e-4)
    return True


@pytest.mark.parametrize("p", [1, 1.5, 3, INF])
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 6),
    m=st.one_of(st.none(), st.integers(1, 6)),
    d=st.integers(1, 6),
    power=st.sampled_from([1, 2]),
    normalize=st.booleans(),
)
def test_lp_distance_matches_pml(p, seed, n, m, d, power, normalize):
    q = _emb(seed, n, d)
    r = None if m is None else _emb(seed + 1, m, d)
    ours = distances.LpDistance(p=p, power=power, normalize_embeddings=normalize)
    theirs = pml_dist.LpDistance(p=p, power=power, normalize_embeddings=normalize)
    qn = theirs.maybe_normalize(torch.tensor(q.astype(np.float64))).numpy()
    rn = qn if r is None else theirs.maybe_normalize(torch.tensor(r.astype(np.float64))).numpy()
    assume(_smooth(qn, rn, p) and (not normalize or _smooth(q, np.zeros((1, d)), p)))
    mat = ours(q, r)
    qt, rt = _t(q), _t(r)
    mt = theirs(qt, rt)
    _close(mat, mt.detach().numpy())
    w = np.random.default_rng(seed + 2).standard_normal(mat.shape)
    dq, dr = ours.backward(w.astype(np.float32))
    (mt * torch.tensor(w)).sum().backward()
    _close(dq, qt.grad.numpy())
    if r is not None:
        _close(dr, rt.grad.numpy())


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 6),
    m=st.one_of(st.none(), st.integers(1, 6)),
    d=st.integers(2, 6),
    power=st.sampled_from([1, 2, 0.5]),
    normalize=st.booleans(),
)
def test_snr_distance_matches_pml(seed, n, m, d, power, normalize):
    q = _emb(seed, n, d)
    r = None if m is None else _emb(seed + 1, m, d)
    if power < 1:
        assume(r is not None)  # sqrt at the zero diagonal: torch gives NaN gradients
    ours = distances.SNRDistance(power=power, normalize_embeddings=normalize)
    theirs = pml_dist.SNRDistance(power=power, normalize_embeddings=normalize)
    mat = ours(q, r)
    qt, rt = _t(q), _t(r)
    mt = theirs(qt, rt)
    _close(mat, mt.detach().numpy())
    w = np.random.default_rng(seed + 2).standard_normal(mat.shape)
    dq, dr = ours.backward(w.astype(np.float32))
    (mt * torch.tensor(w)).sum().backward()
    _close(dq, qt.grad.numpy())
    if r is not None:
        _close(dr, rt.grad.numpy())


@pytest.mark.parametrize("bs", [1, 3, 32])
def test_batched_distance_matches_pml(bs):
    q, r = _emb(0, 10, 5), _emb(1, 7, 5)
    got, want = [], []
    distances.BatchedDistance(
        distances.LpDistance(p=1), lambda mat, s, e: got.append((mat, s, e)), batch_size=bs
    )(q, r)
    pml_dist.BatchedDistance(
        pml_dist.LpDistance(p=1), lambda mat, s, e: want.append((mat, s, e)), batch_size=bs
    )(torch.tensor(q.astype(np.float64)), torch.tensor(r.astype(np.float64)))
    assert [g[1:] for g in got] == [w[1:] for w in want]
    for g, w in zip(got, want):
        _close(g[0], w[0].numpy())


# ---- losses with the new distances ---------------------------------------------------------


def _pml_call(loss, x, y, ref=None, ry=None):
    xt, rt = _t(x), _t(ref)
    out = loss(xt, torch.tensor(y), ref_emb=rt, ref_labels=None if ry is None else torch.tensor(ry))
    out.backward()
    g = np.zeros(x.shape) if xt.grad is None else xt.grad.numpy()
    rg = None if rt is None else (np.zeros(ref.shape) if rt.grad is None else rt.grad.numpy())
    return out.item(), g, rg


def _compare(ours, theirs):
    loss, g, rg = theirs
    assert ours.loss == pytest.approx(loss, rel=1e-4, abs=1e-6)
    _close(ours.grad, g)
    if rg is not None:
        _close(ours.ref_grad, rg)


def _labels(seed, n, k):
    return np.random.default_rng(seed + 7).integers(0, k, n)


REDUCERS = {
    "avg": (reducers.AvgNonZeroReducer, pml_red.AvgNonZeroReducer),
    "mean": (reducers.MeanReducer, pml_red.MeanReducer),
}


@pytest.mark.parametrize("red", ["avg", "mean"])
@pytest.mark.parametrize("with_ref", [False, True])
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 12),
    d=st.integers(2, 6),
    k=st.integers(1, 4),
    neg_margin=st.sampled_from([1.0, 1.5]),
)
def test_contrastive_with_l1_distance(red, with_ref, seed, n, d, k, neg_margin):
    x, y = _emb(seed, n, d), _labels(seed, n, k)
    ref, ry = (_emb(seed + 1, n + 1, d), _labels(seed + 1, n + 1, k)) if with_ref else (None, None)
    rr = x if ref is None else ref
    xn = x / np.abs(x.astype(np.float64)).sum(axis=1, keepdims=True)
    rn = rr / np.abs(rr.astype(np.float64)).sum(axis=1, keepdims=True)
    assume(_smooth(xn, rn, 1) and np.abs(x).min() > 1e-4 and np.abs(rr).min() > 1e-4)
    d64 = np.abs(xn[:, None] - rn[None]).sum(axis=2)
    assume(np.all(np.abs(d64 - neg_margin) > KINK) and np.all(d64[d64 > 0] > KINK))
    ours = losses.ContrastiveLoss(
        neg_margin=neg_margin, distance=distances.LpDistance(p=1), reducer=REDUCERS[red][0]()
    )
    theirs = pml_losses.ContrastiveLoss(
        neg_margin=neg_margin, distance=pml_dist.LpDistance(p=1), reducer=REDUCERS[red][1]()
    )
    _compare(ours(x, y, ref_emb=ref, ref_labels=ry), _pml_call(theirs, x, y, ref, ry))


@pytest.mark.parametrize("red", ["avg", "mean"])
@pytest.mark.parametrize("with_ref", [False, True])
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 12),
    d=st.integers(2, 6),
    k=st.integers(1, 4),
    margin=st.sampled_from([0.05, 0.5]),
)
def test_triplet_with_snr_distance(red, with_ref, seed, n, d, k, margin):
    x, y = _emb(seed, n, d), _labels(seed, n, k)
    ref, ry = (_emb(seed + 1, n + 1, d), _labels(seed + 1, n + 1, k)) if with_ref else (None, None)
    rr = x if ref is None else ref
    xn = x.astype(np.float64) / np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True)
    rn = rr.astype(np.float64) / np.linalg.norm(rr.astype(np.float64), axis=1, keepdims=True)
    m64 = np.var(xn[:, None] - rn[None], axis=2, ddof=1) / np.var(xn, axis=1, ddof=1)[:, None]
    v = m64[:, :, None] - m64[:, None, :] + margin  # every (a, p, n) combination
    assume(np.all(np.abs(v) > KINK))
    # SNR divides by var(x_i): a query whose normalized coordinates are nearly equal (D = 2 near
    # the diagonal) makes d ~ 1e6, where both libraries' float32 inputs decide the 4th digit
    assume(np.var(xn, axis=1, ddof=1).min() > 1e-2)
    ours = losses.TripletMarginLoss(
        margin=margin, distance=distances.SNRDistance(), reducer=REDUCERS[red][0]()
    )
    theirs = pml_losses.TripletMarginLoss(
        margin=margin, distance=pml_dist.SNRDistance(), reducer=REDUCERS[red][1]()
    )
    _compare(ours(x, y, ref_emb=ref, ref_labels=ry), _pml_call(theirs, x, y, ref, ry))
