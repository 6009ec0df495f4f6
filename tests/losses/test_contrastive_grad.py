"""ContrastiveLoss: value against a brute-force float64 computation, gradient against finite
differences of it, on hypothesis batches (one class, all classes distinct, duplicates, N=1, N=0,
with ref_emb, with an indices_tuple), for both backends."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from _helpers import central_diff, grad_batch
from mantissa_embed.losses import ContrastiveLoss

BACKENDS = ["mantissa", "numpy"]
H = 1e-6
KINK = 2e-3


def _norm(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _dist(q, r):
    return np.sqrt(np.sum((_norm(q)[:, None, :] - _norm(r)[None, :, :]) ** 2, axis=2))


def _brute(x, r, lab, rlab, same, pairs, pm, nm, check=None):
    """PML's ContrastiveLoss in float64, from scratch."""
    if pairs is None:
        pos = lab[:, None] == rlab[None, :]
        if same:
            np.fill_diagonal(pos, False)
        a1, p = np.nonzero(pos)
        a2, n = np.nonzero(lab[:, None] != rlab[None, :])
    else:
        a1, p, a2, n = pairs
    if all(len(t) <= 1 for t in (a1, p, a2, n)):
        return 0.0
    d = _dist(x, x if r is None else r)
    vp, vn = d[a1, p] - pm, nm - d[a2, n]
    if check is not None:
        check.extend(np.abs(np.concatenate([vp, vn])))
    tp, tn = vp[vp > 0], vn[vn > 0]
    return (tp.mean() if len(tp) else 0.0) + (tn.mean() if len(tn) else 0.0)


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
    assert out.terms["pos_loss"] + out.terms["neg_loss"] == pytest.approx(out.loss)
    np.testing.assert_allclose(out.grad, fd, rtol=1e-3, atol=1e-3 * max(1.0, np.abs(fd).max(initial=0)))


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 8),
    d=st.integers(2, 5),
    kind=st.sampled_from(["random", "one_class", "distinct", "dups_same", "dups_diff"]),
    pm=st.sampled_from([0.0, 0.2]),
    nm=st.sampled_from([1.0, 0.5, 1.4]),
)
def test_all_pairs(backend, seed, n, d, kind, pm, nm):
    x32, y = _batch(seed, n, d, kind)
    x = x32.astype(np.float64)
    margins = []
    want = _brute(x, None, y, y, True, None, pm, nm, margins)
    assume(not margins or min(margins) > KINK)
    out = ContrastiveLoss(pos_margin=pm, neg_margin=nm, backend=backend)(x32, y)
    assert out.ref_grad is None
    _check(out, want, _fd(lambda z: _brute(z, None, y, y, True, None, pm, nm), x), x32)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 6), m=st.integers(1, 6), d=st.integers(2, 4))
def test_with_ref_emb(backend, seed, n, m, d):
    rng = np.random.default_rng(seed)
    x32, r32 = rng.standard_normal((n, d)).astype(np.float32), rng.standard_normal((m, d)).astype(np.float32)
    y, ry = rng.integers(0, 2, n), rng.integers(0, 2, m)
    x, r = x32.astype(np.float64), r32.astype(np.float64)
    margins = []
    want = _brute(x, r, y, ry, False, None, 0.1, 1.0, margins)
    assume(not margins or min(margins) > KINK)
    out = ContrastiveLoss(pos_margin=0.1, backend=backend)(x32, y, ref_emb=r32, ref_labels=ry)
    _check(out, want, _fd(lambda z: _brute(z, r, y, ry, False, None, 0.1, 1.0), x), x32)
    fdr = _fd(lambda z: _brute(x, z, y, ry, False, None, 0.1, 1.0), r)
    np.testing.assert_allclose(out.ref_grad, fdr, rtol=1e-3, atol=1e-3 * max(1.0, np.abs(fdr).max()))


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 7),
    k1=st.integers(0, 8),
    k2=st.integers(0, 8),
    triplets=st.booleans(),
)
def test_with_indices_tuple(backend, seed, n, k1, k2, triplets):
    rng = np.random.default_rng(seed)
    x32 = rng.standard_normal((n, 3)).astype(np.float32)
    x = x32.astype(np.float64)

    def other(a):  # never the anchor itself: d = 0 would sit on a kink of the hinge
        return (a + rng.integers(1, n, len(a))) % n

    if triplets:
        a = rng.integers(0, n, k1)
        p, nn = other(a), other(a)
        it, pairs = (a, p, nn), (a, p, a, nn)
    else:
        a1, a2 = rng.integers(0, n, k1), rng.integers(0, n, k2)
        it = pairs = (a1, other(a1), a2, other(a2))
    margins = []
    want = _brute(x, None, None, None, True, pairs, 0.0, 1.0, margins)
    assume(not margins or min(margins) > KINK)
    out = ContrastiveLoss(backend=backend)(x32, None, indices_tuple=it)
    _check(out, want, _fd(lambda z: _brute(z, None, None, None, True, pairs, 0.0, 1.0), x), x32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_n0_and_n1(backend):
    loss = ContrastiveLoss(backend=backend)
    out = loss(np.zeros((0, 4), np.float32), np.zeros(0, np.int64))
    assert out.loss == 0.0 and out.grad.shape == (0, 4)
    out = loss(np.ones((1, 4), np.float32), np.array([3]))
    assert out.loss == 0.0 and out.grad.shape == (1, 4) and not out.grad.any()
