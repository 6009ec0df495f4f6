"""Angular / Margin / TupletMargin / IntraPairVariance / VICReg losses: value against a from-scratch
float64 loop implementation, gradient (and MarginLoss's beta gradient) against its central finite
differences, on hypothesis batches (random labels, one class, all classes distinct, N=1, N=0,
duplicate embeddings, with ref_emb), for both backends."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from _helpers import central_diff, grad_batch
from mantissa_embed.distances import CosineSimilarity
from mantissa_embed.losses import AngularLoss, IntraPairVarianceLoss, MarginLoss, TupletMarginLoss, VICRegLoss

BACKENDS = ["mantissa", "numpy"]
H = 1e-6
KINK = 2e-3
KINDS = ["random", "one_class", "distinct", "dups_same", "dups_diff", "ref"]


# ----------------------------------------------------------------------------- brute force (float64)
def _nrm(z):
    return z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)


def _pairs(y, ry, same):
    pos = [(i, j) for i in range(len(y)) for j in range(len(ry)) if y[i] == ry[j] and not (same and i == j)]
    neg = [(i, j) for i in range(len(y)) for j in range(len(ry)) if y[i] != ry[j]]
    return pos, neg


def _trips(y, ry, same):
    pos, _ = _pairs(y, ry, same)
    return [(a, p, n) for a, p in pos for n in range(len(ry)) if ry[n] != y[a]]


def _mat(x, r, cosine):
    q, rr = _nrm(x), _nrm(x if r is None else r)
    if cosine:
        return q @ rr.T
    return np.sqrt(np.maximum(((q[:, None, :] - rr[None, :, :]) ** 2).sum(-1), 0))


def angular_brute(x, r, y, ry, alpha=40.0):
    R = x if r is None else r
    pos, neg = _pairs(y, ry, r is None)
    if not pos or not neg:
        return 0.0
    t = math.tan(math.radians(alpha)) ** 2
    xh, rh = _nrm(x), _nrm(R)
    out = []
    for a, p in pos:
        s = 1.0
        for n in range(len(ry)):
            if ry[n] != y[a]:
                s += math.exp(4 * t * (xh[a] + rh[p]) @ R[n] - 2 * (1 + t) * xh[a] @ rh[p])
        out.append(math.log(s))
    return float(np.mean(out))


def margin_brute(x, r, y, ry, beta, margin=0.2, nu=0.0, learn=False, cosine=False, kinks=None):
    trips = _trips(y, ry, r is None)
    if not trips:
        return 0.0
    D = _mat(x, r, cosine)
    sg = -1.0 if cosine else 1.0
    tot, div, reg = 0.0, 0, 0.0
    for a, p, n in trips:
        b = beta[y[a]] if len(beta) > 1 else beta[0]
        vp, vn = sg * (D[a, p] - b) + margin, sg * (b - D[a, n]) + margin
        if kinks is not None:
            kinks += [abs(vp), abs(vn)]
        tot += max(vp, 0) + max(vn, 0)
        div += int(vp > 0) + int(vn > 0)
        reg += nu * b
    ml = tot / div if div else 0.0
    if learn:
        ml += nu * beta[0] if len(beta) == 1 else (reg / div if div else 0.0)
    return ml


def tuplet_brute(x, r, y, ry, margin=5.73, scale=64.0):
    pos, neg = _pairs(y, ry, r is None)
    if len(pos) <= 1 and len(neg) <= 1 or not pos or not neg:
        return 0.0
    S = _mat(x, r, True)
    m = math.radians(margin)
    out = []
    for a, p in pos:
        c = math.cos(math.acos(min(1.0, S[a, p])) - m)
        out.append(math.log(1 + sum(math.exp(scale * (S[a2, n] - c)) for a2, n in neg if a2 == a)))
    return float(np.mean(out))


def ipv_brute(x, r, y, ry, pos_eps=0.01, neg_eps=0.01, kinks=None):
    pos, neg = _pairs(y, ry, r is None)
    if len(pos) <= 1 and len(neg) <= 1:
        return 0.0
    S = _mat(x, r, True)
    tot = 0.0
    if pos:
        s = np.array([S[i, j] for i, j in pos])
        v = (1 - pos_eps) * s.mean() - s
        tot += np.mean(np.maximum(v, 0) ** 2)
        if kinks is not None:
            kinks += list(np.abs(v))
    if neg:
        s = np.array([S[i, j] for i, j in neg])
        v = s - (1 + neg_eps) * s.mean()
        tot += np.mean(np.maximum(v, 0) ** 2)
        if kinks is not None:
            kinks += list(np.abs(v))
    return float(tot)


def vicreg_brute(x, r, lam=25.0, mu=25.0, v=1.0, eps=1e-4):
    R = x if r is None else r
    N, D = x.shape
    if N == 0:
        return 0.0
    inv = lam * np.mean(np.mean((x - R) ** 2, axis=1))
    if N < 2:
        return inv

    def var(z):
        return mu * np.mean(np.maximum(1 - np.sqrt(z.var(axis=0, ddof=1) + eps), 0) / 2)

    def cov(z):
        c = np.cov(z, rowvar=False).reshape(D, D)
        return (np.sum(c**2) - np.sum(np.diag(c) ** 2)) / D

    return inv + var(x) + var(R) + v * (cov(x) + cov(R))


def _fd(f, x):
    return central_diff(f, x, H)


def _batch(seed, n, d, kind, k=3):
    x, y, rng = grad_batch(seed, n, d, kind, k)
    if kind.startswith("dups") and n >= 2:
        y[n - 1] = y[0] if kind == "dups_same" else (y[0] + 1) % k
    r = ry = None
    if kind == "ref":
        m = int(rng.integers(1, 7))
        r = rng.standard_normal((m, d)).astype(np.float32)
        ry = rng.integers(0, k, m)
    return x, y, r, ry


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3 * max(1.0, np.abs(b).max(initial=0)))


def _run(loss, brute, x32, y, r32, ry, check_grad=True, abs_tol=1e-5):
    """Call the loss, compare value and gradients with the brute force and its finite differences."""
    kw = {} if r32 is None else {"ref_emb": r32, "ref_labels": ry}
    out = loss(x32, y, **kw)
    x = x32.astype(np.float64)
    r = None if r32 is None else r32.astype(np.float64)
    want = brute(x, r)
    assert out.loss == pytest.approx(want, rel=1e-4, abs=abs_tol)
    assert out.loss == pytest.approx(sum(out.terms.values()), rel=1e-9, abs=1e-12)
    assert out.grad.shape == x32.shape and out.grad.dtype == np.float32 and np.isfinite(out.grad).all()
    if r32 is None:
        assert out.ref_grad is None
    else:
        assert out.ref_grad.shape == r32.shape and np.isfinite(out.ref_grad).all()
    if check_grad:
        _close(out.grad, _fd(lambda z: brute(z, r), x))
        if r is not None:
            _close(out.ref_grad, _fd(lambda z: brute(x, z), r))
    if want == 0.0:
        assert not out.grad.any()
    return out


COMMON = dict(
    seed=st.integers(0, 2**31), n=st.integers(0, 7), d=st.integers(2, 4), kind=st.sampled_from(KINDS)
)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(alpha=st.sampled_from([20.0, 40.0, 55.0]), **COMMON)
def test_angular(backend, seed, n, d, kind, alpha):
    x, y, r, ry = _batch(seed, n, d, kind)
    _run(
        AngularLoss(alpha=alpha, backend=backend),
        lambda a, b: angular_brute(a, b, y, y if b is None else ry, alpha),
        x,
        y,
        r,
        ry,
    )


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=30, deadline=None)
@given(
    margin=st.sampled_from([0.1, 0.4]),
    nu=st.sampled_from([0.0, 0.3]),
    beta=st.sampled_from([0.6, 1.2]),
    learn=st.booleans(),
    per_class=st.booleans(),
    cosine=st.booleans(),
    **COMMON,
)
def test_margin(backend, seed, n, d, kind, margin, nu, beta, learn, per_class, cosine):
    x, y, r, ry = _batch(seed, n, d, kind)
    if kind == "distinct" and per_class:
        y = y % 3
    assume(not (kind.startswith("dups") and not cosine))  # a zero Euclidean distance is a kink
    k = 3 if per_class else None
    b0 = np.linspace(beta, beta + 0.2, 3) if per_class else np.array([beta])
    if cosine:
        b0 = b0 - 1.0  # similarities live in [-1, 1]
    loss = MarginLoss(
        margin=margin,
        nu=nu,
        beta=float(b0[0]),
        learn_beta=learn,
        num_classes=k,
        backend=backend,
        distance=CosineSimilarity() if cosine else None,
    )
    if per_class:
        (loss.beta.data if learn else loss.beta)[...] = b0
    ry_ = y if r is None else ry
    kinks = []
    margin_brute(
        x.astype(np.float64),
        None if r is None else r.astype(np.float64),
        y,
        ry_,
        b0,
        margin,
        nu,
        learn,
        cosine,
        kinks,
    )
    assume(not kinks or min(kinks) > KINK)
    _run(loss, lambda a, b: margin_brute(a, b, y, ry_, b0, margin, nu, learn, cosine), x, y, r, ry)
    if learn:
        xx, rr = x.astype(np.float64), None if r is None else r.astype(np.float64)
        fd = _fd(lambda bb: margin_brute(xx, rr, y, ry_, bb, margin, nu, True, cosine), b0.astype(np.float64))
        np.testing.assert_allclose(loss.beta.grad, fd, rtol=1e-4, atol=1e-5)
        assert loss.parameters() == [loss.beta]
    else:
        assert loss.parameters() == []


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(margin=st.sampled_from([5.73, 20.0]), scale=st.sampled_from([4.0, 16.0, 64.0]), **COMMON)
def test_tuplet(backend, seed, n, d, kind, margin, scale):
    x, y, r, ry = _batch(seed, n, d, kind)
    # identical positives sit on the cone point of arccos (gradient taken as 0): value only, and
    # the float32 cosine of two identical directions (1 - 6e-8) is an angle of ~3.5e-4 rad there,
    # which moves the value by up to scale * sin(margin) * 3.5e-4
    smooth = kind != "dups_same"
    _run(
        TupletMarginLoss(margin=margin, scale=scale, backend=backend),
        lambda a, b: tuplet_brute(a, b, y, y if b is None else ry, margin, scale),
        x,
        y,
        r,
        ry,
        check_grad=smooth,
        abs_tol=1e-5 if smooth else 4e-4 * scale * np.sin(np.radians(margin)) + 1e-5,
    )


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(eps=st.sampled_from([0.0, 0.01, 0.2]), **COMMON)
def test_intra_pair_variance(backend, seed, n, d, kind, eps):
    x, y, r, ry = _batch(seed, n, d, kind)
    ry_ = y if r is None else ry
    kinks = []
    ipv_brute(x.astype(np.float64), None if r is None else r.astype(np.float64), y, ry_, eps, eps, kinks)
    assume(not kinks or min(kinks) > KINK)
    _run(
        IntraPairVarianceLoss(pos_eps=eps, neg_eps=eps, backend=backend),
        lambda a, b: ipv_brute(a, b, y, ry_, eps, eps),
        x,
        y,
        r,
        ry,
    )


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 7),
    d=st.integers(1, 4),
    ref=st.booleans(),
    dups=st.booleans(),
    scale=st.sampled_from([0.3, 1.0, 3.0]),
)
def test_vicreg(backend, seed, n, d, ref, dups, scale):
    rng = np.random.default_rng(seed)
    x = (scale * rng.standard_normal((n, d))).astype(np.float32)
    if dups and n >= 2:
        x[1] = x[0]
    r = (x + 0.5 * rng.standard_normal((n, d))).astype(np.float32) if ref else None
    xx = x.astype(np.float64)
    rr = None if r is None else r.astype(np.float64)
    for z in [xx] + ([rr] if ref else []):
        if n >= 2:  # keep off the kink of [1 - std]+
            assume(np.abs(1 - np.sqrt(z.var(axis=0, ddof=1) + 1e-4)).min() > KINK)
    loss = VICRegLoss(backend=backend)
    kw = {} if r is None else {"ref_emb": r}
    out = loss(x, **kw)
    want = vicreg_brute(xx, rr)
    assert out.loss == pytest.approx(want, rel=1e-4, abs=1e-5)
    assert set(out.terms) == {"invariance_loss", "variance_loss1", "variance_loss2", "covariance_loss"}
    _close(out.grad, _fd(lambda z: vicreg_brute(z, rr), xx))
    if ref:
        _close(out.ref_grad, _fd(lambda z: vicreg_brute(xx, z), rr))
    else:
        assert out.ref_grad is None


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(3, 7), k=st.integers(0, 10), pairs=st.booleans())
def test_indices_tuple(backend, seed, n, k, pairs):
    """Angular / Tuplet / IPV / Margin with a given indices_tuple: brute force over the same tuples."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = rng.integers(0, 2, n)
    a = rng.integers(0, n, k)
    p = (a + rng.integers(1, n, k)) % n
    nn = (a + rng.integers(1, n, k)) % n
    it = (a, p, a, nn) if pairs else (a, p, nn)
    xx = x.astype(np.float64)
    # IntraPairVariance over the given pairs (mean reducers)
    S = _mat(xx, None, True)

    def ipv(z):
        S = _mat(z, None, True)
        tot = 0.0
        if k:
            s = S[a, p]
            tot += np.mean(np.maximum(0.99 * s.mean() - s, 0) ** 2)
            s = S[a, nn]
            tot += np.mean(np.maximum(s - 1.01 * s.mean(), 0) ** 2)
        return tot if k > 1 else 0.0

    out = IntraPairVarianceLoss(backend=backend)(x, y, it)
    assert out.loss == pytest.approx(ipv(xx), rel=1e-4, abs=1e-6)
    s1, s2 = S[a, p], S[a, nn]
    if k > 1 and min(np.abs(0.99 * s1.mean() - s1).min(), np.abs(s2 - 1.01 * s2.mean()).min()) > KINK:
        _close(out.grad, _fd(ipv, xx))

    # MarginLoss over the triplets the tuple gives (pairs: every (a1[i], p[i], n[j]) with a1[i] == a2[j])
    trips = (
        [(a[i], p[i], nn[j]) for i in range(k) for j in range(k) if a[i] == a[j]]
        if pairs
        else list(zip(a, p, nn))
    )

    def margin(z):
        D = _mat(z, None, False)
        tot, div = 0.0, 0
        for ai, pi, ni in trips:
            vp, vn = D[ai, pi] - 1.2 + 0.2, 1.2 - D[ai, ni] + 0.2
            tot += max(vp, 0) + max(vn, 0)
            div += int(vp > 0) + int(vn > 0)
        return tot / div if div else 0.0

    out = MarginLoss(backend=backend)(x, y, it)
    assert out.loss == pytest.approx(margin(xx), rel=1e-4, abs=1e-6)
