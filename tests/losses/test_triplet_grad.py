"""TripletMarginLoss: value against a brute-force float64 computation, gradient against finite
differences of it, on hypothesis batches (one class, all classes distinct, duplicates, N=1, N=0,
with ref_emb, with an indices_tuple; swap, smooth_loss), for both backends."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from _helpers import central_diff, grad_batch
from mantissa_embed.distances import CosineSimilarity
from mantissa_embed.losses import TripletMarginLoss

BACKENDS = ["mantissa", "numpy"]
H = 1e-6
KINK = 2e-3


def _norm(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _dist(q, r, cosine=False):
    if cosine:
        return _norm(q) @ _norm(r).T
    return np.sqrt(np.sum((_norm(q)[:, None, :] - _norm(r)[None, :, :]) ** 2, axis=2))


def _all_triplets(lab, rlab, same):
    a, p, n = [], [], []
    for i in range(len(lab)):
        for j in range(len(rlab)):
            if rlab[j] != lab[i] or (same and i == j):
                continue
            for k in range(len(rlab)):
                if rlab[k] != lab[i]:
                    a.append(i), p.append(j), n.append(k)
    return np.array(a, int), np.array(p, int), np.array(n, int)


def _brute(x, r, trip, margin, swap=False, smooth=False, cosine=False, check=None):
    """PML's TripletMarginLoss in float64, from scratch, over the given triplets."""
    a, p, n = trip
    if len(a) == 0:
        return 0.0
    d = _dist(x, x if r is None else r, cosine)
    ap, an = d[a, p], d[a, n]
    if swap:
        pn = d[p, n]
        an = np.maximum(an, pn) if cosine else np.minimum(an, pn)
        if check is not None:
            check.extend(np.abs(d[a, n] - pn))  # the min switches: a kink
    v = ((an - ap) if cosine else (ap - an)) + margin
    if check is not None:
        check.extend(np.abs(v) if not smooth else [1.0])
    loss = np.log1p(np.exp(v)) if smooth else np.maximum(v, 0)
    nz = loss[loss > 0]
    return nz.mean() if len(nz) else 0.0


def _fd(f, x):
    return central_diff(f, x, H)


def _batch(seed, n, d, kind):
    x, y, _ = grad_batch(seed, n, d, kind)
    if kind == "dups_same" and n >= 2:
        y[n - 1] = y[0]
    return x, y


def _check(out, want, fd, x32):
    assert out.grad.shape == x32.shape and out.grad.dtype == np.float32
    assert out.loss == pytest.approx(want, rel=1e-4, abs=1e-5)
    assert out.terms["loss"] == pytest.approx(out.loss)
    np.testing.assert_allclose(out.grad, fd, rtol=1e-3, atol=1e-3 * max(1.0, np.abs(fd).max(initial=0)))


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 8),
    d=st.integers(2, 5),
    kind=st.sampled_from(["random", "one_class", "distinct", "dups_same", "dups_diff"]),
    margin=st.sampled_from([0.05, 0.3, 1.0]),
    swap=st.booleans(),
    smooth=st.booleans(),
    cosine=st.booleans(),
)
def test_all_triplets(backend, seed, n, d, kind, margin, swap, smooth, cosine):
    x32, y = _batch(seed, n, d, kind)
    x = x32.astype(np.float64)
    trip = _all_triplets(y, y, True)
    margins = []
    kw = dict(swap=swap, smooth=smooth, cosine=cosine)
    want = _brute(x, None, trip, margin, check=margins, **kw)
    assume(not margins or min(margins) > KINK)
    dist = CosineSimilarity(backend=backend) if cosine else None
    out = TripletMarginLoss(margin=margin, swap=swap, smooth_loss=smooth, distance=dist, backend=backend)(
        x32, y
    )
    assert out.ref_grad is None
    _check(out, want, _fd(lambda z: _brute(z, None, trip, margin, **kw), x), x32)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 6), m=st.integers(1, 6), d=st.integers(2, 4))
def test_with_ref_emb(backend, seed, n, m, d):
    rng = np.random.default_rng(seed)
    x32, r32 = rng.standard_normal((n, d)).astype(np.float32), rng.standard_normal((m, d)).astype(np.float32)
    y, ry = rng.integers(0, 2, n), rng.integers(0, 2, m)
    x, r = x32.astype(np.float64), r32.astype(np.float64)
    trip = _all_triplets(y, ry, False)
    margins = []
    want = _brute(x, r, trip, 0.2, check=margins)
    assume(not margins or min(margins) > KINK)
    out = TripletMarginLoss(margin=0.2, backend=backend)(x32, y, ref_emb=r32, ref_labels=ry)
    _check(out, want, _fd(lambda z: _brute(z, r, trip, 0.2), x), x32)
    fdr = _fd(lambda z: _brute(x, z, trip, 0.2), r)
    np.testing.assert_allclose(out.ref_grad, fdr, rtol=1e-3, atol=1e-3 * max(1.0, np.abs(fdr).max()))


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(3, 7),
    k=st.integers(0, 12),
    swap=st.booleans(),
    pairs=st.booleans(),
)
def test_with_indices_tuple(backend, seed, n, k, swap, pairs):
    rng = np.random.default_rng(seed)
    x32 = rng.standard_normal((n, 3)).astype(np.float32)
    x = x32.astype(np.float64)
    a = rng.integers(0, n, k)
    o1 = rng.integers(1, n, k)
    o2 = 1 + (o1 - 1 + rng.integers(1, n - 1, k)) % (n - 1)  # in [1, n) and != o1
    p, nn = (a + o1) % n, (a + o2) % n  # a, p, n distinct: no zero distance on a kink
    if pairs:  # (a1, p, a2, n) -> every (a1[i], p[i], n[j]) with a1[i] == a2[j]
        it = (a, p, a[::-1].copy(), nn[::-1].copy())
        sel = [(i, j) for i in range(k) for j in range(k) if a[i] == it[2][j]]
        trip = (
            np.array([a[i] for i, _ in sel], int),
            np.array([p[i] for i, _ in sel], int),
            np.array([it[3][j] for _, j in sel], int),
        )
        assume(all(t[1] != t[2] for t in zip(*trip)))
    else:
        it = trip = (a, p, nn)
    margins = []
    want = _brute(x, None, trip, 0.1, swap=swap, check=margins)
    assume(not margins or min(margins) > KINK)
    out = TripletMarginLoss(margin=0.1, swap=swap, backend=backend)(x32, indices_tuple=it)
    _check(out, want, _fd(lambda z: _brute(z, None, trip, 0.1, swap=swap), x), x32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_n0_n1_and_no_triplet(backend):
    loss = TripletMarginLoss(backend=backend)
    out = loss(np.zeros((0, 4), np.float32), np.zeros(0, np.int64))
    assert out.loss == 0.0 and out.grad.shape == (0, 4)
    out = loss(np.ones((1, 4), np.float32), np.array([3]))
    assert out.loss == 0.0 and not out.grad.any()
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    for y in (np.zeros(5, int), np.arange(5)):  # one class / all distinct: no triplet
        out = loss(x, y)
        assert out.loss == 0.0 and out.grad.shape == (5, 4) and not out.grad.any()
