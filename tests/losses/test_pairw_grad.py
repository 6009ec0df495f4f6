"""MultiSimilarity, Circle, LiftedStructure, GeneralizedLiftedStructure and SNR contrastive losses:
value against a brute-force float64 computation written from the papers / PML's definitions, and
gradient against central finite differences of it, on hypothesis batches (one class, all classes
distinct, duplicates, large and tiny norms, N=0, N=1, with ref_emb, with an indices_tuple), for
both backends. CircleLoss's weights are constants for its gradient (PML detaches them), so its
finite differences freeze them at the evaluation point."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from _helpers import central_diff, grad_batch
from mantissa_embed import losses

BACKENDS = ["mantissa", "numpy"]
KINK = 2e-3
LOSSES = ["ms", "circle", "lifted", "glifted", "snr"]


# ----------------------------------------------------------------------------- brute force


def _norm(z):
    return z / np.linalg.norm(z, axis=1, keepdims=True)


def _mat(kind, x, r):
    q = _norm(x)
    rr = q if r is None else _norm(r)
    if kind == "cos":
        return q @ rr.T
    diff = q[:, None, :] - rr[None, :, :]
    if kind == "snr":
        return np.var(diff, axis=2, ddof=1) / np.var(q, axis=1, ddof=1)[:, None]
    return np.sqrt(np.sum(diff**2, axis=2))


def _pairs(y, ry, same, it):
    if it is not None:
        return (it[0], it[1], it[0], it[2]) if len(it) == 3 else it
    eq = y[:, None] == ry[None, :]
    pos = eq.copy()
    if same:
        np.fill_diagonal(pos, False)
    a1, p = np.nonzero(pos)
    a2, n = np.nonzero(~eq)
    return a1, p, a2, n


def _lse(v):
    v = np.asarray(v, dtype=np.float64)
    if len(v) == 0:
        return 0.0
    m = v.max()
    return m + np.log(np.sum(np.exp(v - m)))


def _rows(pairs, N):
    """Per anchor row: the unique positive and negative columns (PML's masks)."""
    a1, p, a2, n = pairs
    return [(np.unique(p[a1 == i]), np.unique(n[a2 == i])) for i in range(N)]


def _ms(mat, pairs, N, check, alpha=2.0, beta=50.0, base=0.5):
    tot = 0.0
    for i, (P, Ng) in enumerate(_rows(pairs, N)):
        lp = np.log1p(np.sum(np.exp(-alpha * (mat[i, P] - base)))) / alpha if len(P) else 0.0
        ln = np.log1p(np.sum(np.exp(beta * (mat[i, Ng] - base)))) / beta if len(Ng) else 0.0
        tot += lp + ln
    return tot / N


def _circle(mat, pairs, N, check, frozen, m=0.4, gamma=80.0):
    vals = []
    for i, (P, Ng) in enumerate(_rows(pairs, N)):
        if len(P) == 0 or len(Ng) == 0:
            continue
        ap = np.maximum(1 + m - frozen[i, P], 0)
        an = np.maximum(frozen[i, Ng] + m, 0)
        z = _lse(-gamma * ap * (mat[i, P] - (1 - m))) + _lse(gamma * an * (mat[i, Ng] - m))
        vals.append(np.logaddexp(0.0, z))
    vals = [v for v in vals if v > 0]
    return float(np.mean(vals)) if vals else 0.0


def _glifted(mat, pairs, N, check, pm=0.0, nm=1.0):
    tot = 0.0
    for i, (P, Ng) in enumerate(_rows(pairs, N)):
        z = _lse(mat[i, P] - pm) + _lse(nm - mat[i, Ng])
        if check is not None and (len(P) or len(Ng)):
            check.append(abs(z))
        tot += max(z, 0.0)
    return tot / N


def _lifted(mat, pairs, N, check, pm=0.0, nm=1.0):
    a1, p, a2, n = pairs
    if len(a1) == 0 or len(a2) == 0:
        return 0.0
    tot = 0.0
    for i, j in zip(a1, p):
        keep = (a2 == i) | (a2 == j)
        u = _lse(nm - mat[a2[keep], n[keep]])
        tot += max(u + mat[i, j] - pm, 0.0) ** 2 / 2
    return tot / len(a1)


def _snr(mat, pairs, N, check, pm=0.0, nm=1.0):
    a1, p, a2, n = pairs
    vp, vn = mat[a1, p] - pm, nm - mat[a2, n]
    if check is not None:
        check.extend(np.abs(np.concatenate([vp, vn])))
    tp, tn = vp[vp > 0], vn[vn > 0]
    return (tp.mean() if len(tp) else 0.0) + (tn.mean() if len(tn) else 0.0)


DIST = {"ms": "cos", "circle": "cos", "lifted": "lp", "glifted": "lp", "snr": "snr"}
CLS = {
    "ms": losses.MultiSimilarityLoss,
    "circle": losses.CircleLoss,
    "lifted": losses.LiftedStructureLoss,
    "glifted": losses.GeneralizedLiftedStructureLoss,
    "snr": losses.SignalToNoiseRatioContrastiveLoss,
}


def _brute(name, x, r, y, ry, same, it, check=None, frozen=None):
    pairs = _pairs(y, ry, same, it)
    if all(len(t) <= 1 for t in pairs):
        return 0.0
    mat = _mat(DIST[name], x, r)
    N = x.shape[0]
    if name == "circle":
        return _circle(mat, pairs, N, check, mat if frozen is None else frozen)
    return {"ms": _ms, "lifted": _lifted, "glifted": _glifted, "snr": _snr}[name](mat, pairs, N, check)


def _fd(f, x, h):
    return central_diff(f, x, h)


# ----------------------------------------------------------------------------- fixtures


def _batch(seed, n, d, kind, scale):
    x, y, _ = grad_batch(seed, n, d, kind, scale=scale)
    if kind == "dups_same" and n >= 2:
        y[n - 1] = y[0]
    return x, y


def _check(name, out, want, fd, shape):
    assert out.grad.shape == shape and out.grad.dtype == np.float32
    assert np.isfinite(out.loss) and np.all(np.isfinite(out.grad))
    assert out.loss == pytest.approx(want, rel=2e-4, abs=1e-5)
    assert sum(out.terms.values()) == pytest.approx(out.loss)
    np.testing.assert_allclose(out.grad, fd, rtol=2e-3, atol=2e-3 * max(1.0, np.abs(fd).max(initial=0)))


def _run(name, backend, x32, y, r32=None, ry=None, it=None, scale=1.0):
    """Compare one call with the brute force and its finite differences (x and r)."""
    x = x32.astype(np.float64)
    r = None if r32 is None else r32.astype(np.float64)
    same = r is None
    yy, rr = (y, y if ry is None else ry) if y is not None else (None, None)
    check = []
    want = _brute(name, x, r, yy, rr, same, it, check)
    assume(not check or min(check) > KINK)
    frozen = None
    if name == "circle":
        frozen = _mat("cos", x, r)
    out = CLS[name](backend=backend)(x32, y, indices_tuple=it, ref_emb=r32, ref_labels=ry)
    h = 1e-6 * scale
    fx = _fd(lambda z: _brute(name, z, r, yy, rr, same, it, frozen=frozen), x, h)
    _check(name, out, want, fx, x32.shape)
    if r is None:
        assert out.ref_grad is None
    else:
        fr = _fd(lambda z: _brute(name, x, z, yy, rr, same, it, frozen=frozen), r, h)
        np.testing.assert_allclose(
            out.ref_grad, fr, rtol=2e-3, atol=2e-3 * max(1.0, np.abs(fr).max(initial=0))
        )


# ----------------------------------------------------------------------------- tests


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", LOSSES)
@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 7),
    d=st.integers(2, 4),
    kind=st.sampled_from(["random", "one_class", "distinct", "dups_same", "dups_diff"]),
    scale=st.sampled_from([1.0, 1e-3, 1e3]),
)
def test_all_pairs(name, backend, seed, n, d, kind, scale):
    x32, y = _batch(seed, n, d, kind, scale)
    _run(name, backend, x32, y, scale=scale)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", LOSSES)
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 5), m=st.integers(1, 5), d=st.integers(2, 4))
def test_with_ref_emb(name, backend, seed, n, m, d):
    rng = np.random.default_rng(seed)
    x32 = rng.standard_normal((n, d)).astype(np.float32)
    r32 = rng.standard_normal((m, d)).astype(np.float32)
    y, ry = rng.integers(0, 2, n), rng.integers(0, 2, m)
    _run(name, backend, x32, y, r32, ry)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", LOSSES)
@settings(max_examples=6, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 6),
    k1=st.integers(0, 7),
    k2=st.integers(0, 7),
    triplets=st.booleans(),
)
def test_with_indices_tuple(name, backend, seed, n, k1, k2, triplets):
    rng = np.random.default_rng(seed)
    x32 = rng.standard_normal((n, 3)).astype(np.float32)

    def other(a):  # never the anchor itself (d = 0 sits on a kink of the hinges)
        return (a + rng.integers(1, n, len(a))) % n

    if triplets:
        a = rng.integers(0, n, k1)
        it = (a, other(a), other(a))
    else:
        a1, a2 = rng.integers(0, n, k1), rng.integers(0, n, k2)
        it = (a1, other(a1), a2, other(a2))
    a1, p, a2, nn = _pairs(None, None, True, it)
    if name in ("ms", "circle", "glifted"):  # mat-based: a pair may not be both positive and negative
        assume(not (set(zip(a1.tolist(), p.tolist())) & set(zip(a2.tolist(), nn.tolist()))))
    _run(name, backend, x32, None, it=it)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", LOSSES)
def test_n0_and_n1(name, backend):
    loss = CLS[name](backend=backend)
    out = loss(np.zeros((0, 4), np.float32), np.zeros(0, np.int64))
    assert out.loss == 0.0 and out.grad.shape == (0, 4)
    out = loss(np.arange(4, dtype=np.float32)[None], np.array([3]))
    assert out.loss == 0.0 and out.grad.shape == (1, 4) and not out.grad.any()
