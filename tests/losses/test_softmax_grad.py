"""Softmax-over-pairs losses (NTXent, SupCon, NCA, NPairs, Instance, SelfSupervised): value
against a from-scratch float64 computation, gradient (embeddings and ref_emb) against central
finite differences of it, on hypothesis batches (random labels, one class, all classes
distinct, duplicate embeddings, N=1, N=0, with ref_emb), for both backends."""

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from _helpers import central_diff, grad_batch
from mantissa_embed import distances
from mantissa_embed.losses import (
    InstanceLoss,
    NCALoss,
    NPairsLoss,
    NTXentLoss,
    SelfSupervisedLoss,
    SupConLoss,
)

BACKENDS = ["mantissa", "numpy"]
H = 1e-6
TINY = float(np.finfo(np.float32).tiny)


def _norm(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _cos(q, r):
    return _norm(q) @ _norm(r).T


def _sqeuc(q, r):
    return np.sum((_norm(q)[:, None, :] - _norm(r)[None, :, :]) ** 2, axis=2)


def _lse(v):
    m = np.max(v)
    return m + np.log(np.sum(np.exp(v - m)))


def _pairs(lab, rlab, same):
    pos = lab[:, None] == rlab[None, :]
    if same:
        np.fill_diagonal(pos, False)
    neg = lab[:, None] != rlab[None, :]
    return pos, neg


# -- from-scratch float64 references (PML's definitions) -------------------------------------------
def ntxent_ref(x, r, lab, rlab, same, T):
    pos, neg = _pairs(lab, rlab, same)
    if pos.sum() <= 1 and neg.sum() <= 1 or pos.sum() == 0 or neg.sum() == 0:
        return 0.0
    z = _cos(x, x if r is None else r) / T
    ls = []
    for i, j in zip(*np.nonzero(pos)):
        zn = z[i][neg[i]]
        den = np.exp(z[i, j]) + np.sum(np.exp(zn))
        ls.append(-np.log(np.exp(z[i, j]) / den + TINY))
    return float(np.mean(ls))


def supcon_ref(x, r, lab, rlab, same, T):
    pos, neg = _pairs(lab, rlab, same)
    if pos.sum() <= 1 and neg.sum() <= 1 or pos.sum() == 0 or neg.sum() == 0:
        return 0.0
    z = _cos(x, x if r is None else r) / T
    ls = []
    for i in range(len(lab)):
        if not pos[i].any():
            ls.append(0.0)
            continue
        lse = _lse(z[i][pos[i] | neg[i]])
        ls.append(-np.mean(z[i][pos[i]] - lse))
    ls = np.array(ls)
    return float(ls[ls > 0].mean()) if (ls > 0).any() else 0.0


def nca_ref(x, r, lab, rlab, same, scale):
    if len(lab) <= 1:
        return 0.0
    z = -scale * _sqeuc(x, x if r is None else r)
    ls = []
    for i in range(len(lab)):
        keep = np.ones(z.shape[1], bool)
        if same:
            keep[i] = False
        p = keep & (rlab == lab[i])
        if p.any():
            ls.append(_lse(z[i][keep]) - _lse(z[i][p]))
    return float(np.mean(ls)) if ls else 0.0


def npairs_ref(x, lab):
    pos, _ = _pairs(lab, lab, True)
    a, p = np.nonzero(pos)
    _, first = np.unique(lab[a], return_index=True)
    a, p = a[first], p[first]
    if len(a) == 0:
        return 0.0
    s = _cos(x[a], x[p])
    return float(np.mean([_lse(s[k]) - s[k, k] for k in range(len(a))]))


def instance_ref(x, lab, gamma):
    if len(lab) == 0:
        return 0.0
    _, t = np.unique(lab, return_inverse=True)
    s = gamma * _cos(x, x)
    return float(np.mean([_lse(s[i]) - s[i, t[i]] for i in range(len(lab))]))


def _fd(f, x):
    return central_diff(f, x, H)


def _batch(seed, n, m, d, kind):
    x, y, rng = grad_batch(seed, n, d, kind)
    if kind == "dups" and n >= 2:
        y[n - 1] = y[0]
    if m is None:
        return x, y, None, None
    r = rng.standard_normal((m, d)).astype(np.float32)
    ry = np.zeros(m, np.int64) if kind == "one_class" else rng.integers(0, 3, m)
    return x, y, r, ry


def _check(out, want, fd, fd_r=None):
    assert out.loss == pytest.approx(want, rel=1e-4, abs=1e-5)
    assert out.grad.dtype == np.float32
    np.testing.assert_allclose(out.grad, fd, rtol=1e-3, atol=1e-3 * max(1.0, np.abs(fd).max(initial=0)))
    if fd_r is None:
        assert out.ref_grad is None
    else:
        np.testing.assert_allclose(
            out.ref_grad, fd_r, rtol=1e-3, atol=1e-3 * max(1.0, np.abs(fd_r).max(initial=0))
        )
    assert np.isfinite(out.loss)


batches = dict(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 7),
    m=st.one_of(st.none(), st.integers(1, 6)),
    d=st.integers(2, 4),
    kind=st.sampled_from(["random", "one_class", "distinct", "dups"]),
)


def _run_pair_loss(cls, ref_fn, T, backend, seed, n, m, d, kind):
    x, y, r, ry = _batch(seed, n, m, d, kind)
    out = cls(temperature=T, backend=backend)(x, y, ref_emb=r, ref_labels=ry)
    x64 = x.astype(np.float64)
    same = r is None
    r64 = None if same else r.astype(np.float64)
    want = ref_fn(x64, r64, y, y if same else ry, same, T)
    fd = _fd(lambda z: ref_fn(z, r64, y, y if same else ry, same, T), x64)
    fd_r = None if same else _fd(lambda z: ref_fn(x64, z, y, ry, False, T), r64)
    _check(out, want, fd, fd_r)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(T=st.sampled_from([0.07, 0.5]), **batches)
@example(T=0.07, seed=1, n=0, m=None, d=3, kind="random")
@example(T=0.07, seed=1, n=1, m=None, d=3, kind="random")
@example(T=0.07, seed=1, n=1, m=4, d=3, kind="random")
@example(T=0.07, seed=2, n=6, m=None, d=3, kind="dups")
def test_ntxent_grad(backend, T, seed, n, m, d, kind):
    _run_pair_loss(NTXentLoss, ntxent_ref, T, backend, seed, n, m, d, kind)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(T=st.sampled_from([0.1, 0.7]), **batches)
@example(T=0.1, seed=1, n=0, m=None, d=3, kind="random")
@example(T=0.1, seed=1, n=1, m=None, d=3, kind="random")
@example(T=0.1, seed=2, n=6, m=None, d=3, kind="dups")
def test_supcon_grad(backend, T, seed, n, m, d, kind):
    _run_pair_loss(SupConLoss, supcon_ref, T, backend, seed, n, m, d, kind)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(scale=st.sampled_from([1.0, 4.0]), **batches)
@example(scale=1.0, seed=1, n=0, m=None, d=3, kind="random")
@example(scale=1.0, seed=1, n=2, m=3, d=3, kind="dups")
def test_nca_grad(backend, scale, seed, n, m, d, kind):
    x, y, r, ry = _batch(seed, n, m, d, kind)
    out = NCALoss(softmax_scale=scale, backend=backend)(x, y, ref_emb=r, ref_labels=ry)
    x64 = x.astype(np.float64)
    same = r is None
    r64 = None if same else r.astype(np.float64)
    rl = y if same else ry
    want = nca_ref(x64, r64, y, rl, same, scale)
    fd = _fd(lambda z: nca_ref(z, r64, y, rl, same, scale), x64)
    fd_r = None if same else _fd(lambda z: nca_ref(x64, z, y, ry, False, scale), r64)
    _check(out, want, fd, fd_r)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 8),
    d=st.integers(2, 4),
    kind=st.sampled_from(["random", "one_class", "distinct", "dups"]),
)
def test_npairs_grad(backend, seed, n, d, kind):
    x, y, _, _ = _batch(seed, n, None, d, kind)
    out = NPairsLoss(backend=backend)(x, y)
    x64 = x.astype(np.float64)
    _check(out, npairs_ref(x64, y), _fd(lambda z: npairs_ref(z, y), x64))


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(
    gamma=st.sampled_from([64.0, 2.0]),
    seed=st.integers(0, 2**31),
    n=st.integers(0, 7),
    d=st.integers(2, 4),
    kind=st.sampled_from(["random", "one_class", "distinct", "dups"]),
)
def test_instance_grad(backend, gamma, seed, n, d, kind):
    x, y, _, _ = _batch(seed, n, None, d, kind)
    out = InstanceLoss(gamma=gamma, backend=backend)(x, y)
    x64 = x.astype(np.float64)
    _check(out, instance_ref(x64, y, gamma), _fd(lambda z: instance_ref(z, y, gamma), x64))


@pytest.mark.parametrize("symmetric", [True, False])
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 5),
    d=st.integers(2, 4),
    inner=st.sampled_from(["ntxent", "supcon"]),
)
def test_self_supervised_grad(symmetric, seed, n, d, inner):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    v = (x + 0.3 * rng.standard_normal((n, d))).astype(np.float32)
    cls, ref_fn, T = (NTXentLoss, ntxent_ref, 0.2) if inner == "ntxent" else (SupConLoss, supcon_ref, 0.3)
    out = SelfSupervisedLoss(cls(temperature=T), symmetric=symmetric)(x, v)
    lab = np.arange(n)

    def f(a, b):
        if symmetric:
            ll = np.concatenate([lab, lab])
            return ref_fn(np.concatenate([a, b]), None, ll, ll, True, T)
        return ref_fn(a, b, lab, lab.copy(), False, T)

    x64, v64 = x.astype(np.float64), v.astype(np.float64)
    _check(out, f(x64, v64), _fd(lambda z: f(z, v64), x64), _fd(lambda z: f(x64, z), v64))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cls", [NTXentLoss, SupConLoss])
def test_pair_losses_with_euclidean_distance(backend, cls):
    """z = -d / T with a distance (LpDistance): checked on a batch without duplicates."""
    x, y, r, ry = _batch(3, 7, 5, 3, "random")
    loss = cls(temperature=0.3, distance=distances.LpDistance(), backend=backend)
    x64, r64 = x.astype(np.float64), r.astype(np.float64)

    def ref(a, b):
        d = np.sqrt(_sqeuc(a, b))
        # reuse the references through a cosine stand-in: z = -d / T
        pos, neg = _pairs(y, ry, False)
        z = -d / 0.3
        if cls is NTXentLoss:
            return float(
                np.mean(
                    [
                        -np.log(np.exp(z[i, j]) / (np.exp(z[i, j]) + np.exp(z[i][neg[i]]).sum()) + TINY)
                        for i, j in zip(*np.nonzero(pos))
                    ]
                )
            )
        ls = np.array(
            [
                (_lse(z[i][pos[i] | neg[i]]) - z[i][pos[i]].mean()) if pos[i].any() else 0.0
                for i in range(len(y))
            ]
        )
        return float(ls[ls > 0].mean())

    out = loss(x, y, ref_emb=r, ref_labels=ry)
    _check(out, ref(x64, r64), _fd(lambda z: ref(z, r64), x64), _fd(lambda z: ref(x64, z), r64))
