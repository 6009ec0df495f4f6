"""Distance and normalization backward passes against finite differences in float64."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import central_diff
from mantissa_embed._reference import _distance as T
from mantissa_embed.distances import CosineSimilarity, DotProductSimilarity, LpDistance


def _fd(f, x, h=1e-6):
    return central_diff(f, x, h)


def _emb(seed, n, d):
    return np.random.default_rng(seed).standard_normal((n, d))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 6), d=st.integers(1, 5))
def test_l2_normalize_grad_float64(seed, n, d):
    x = _emb(seed, n, d)
    w = _emb(seed + 1, n, d)
    y, nrm = T._l2_normalize(x)
    g = T._l2_normalize_grad(w, y, nrm)
    np.testing.assert_allclose(g, _fd(lambda z: np.sum(w * T._l2_normalize(z)[0]), x), rtol=1e-5, atol=1e-7)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 6),
    m=st.integers(1, 6),
    d=st.integers(1, 5),
    squared=st.booleans(),
)
def test_euclidean_grad_float64(seed, n, m, d, squared):
    x, r = _emb(seed, n, d), _emb(seed + 1, m, d)
    w = _emb(seed + 2, n, m)
    dist = T._euclidean(x, r, squared)
    gx, gr = T._euclidean_grad(x, r, dist, w, squared)
    np.testing.assert_allclose(
        gx, _fd(lambda z: np.sum(w * T._euclidean(z, r, squared)), x), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        gr, _fd(lambda z: np.sum(w * T._euclidean(x, z, squared)), r), rtol=1e-5, atol=1e-6
    )


def _indep(kind, power, normalize):
    """Independent float64 formulas of the distance classes."""

    def f(q, r):
        if normalize:
            q = q / np.linalg.norm(q, axis=1, keepdims=True)
            r = r / np.linalg.norm(r, axis=1, keepdims=True)
        if kind == "lp":
            m = np.sqrt(np.sum((q[:, None, :] - r[None, :, :]) ** 2, axis=2))
        else:
            m = q @ r.T
        return m**power

    return f


CASES = [
    ("lp", LpDistance, 1, True),
    ("lp", LpDistance, 2, True),
    ("lp", LpDistance, 1, False),
    ("lp", LpDistance, 3, False),
    ("dot", DotProductSimilarity, 1, False),
    ("dot", DotProductSimilarity, 2, True),
    ("dot", CosineSimilarity, 1, True),
]


@pytest.mark.parametrize("kind,cls,power,normalize", CASES)
@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 5),
    m=st.one_of(st.none(), st.integers(1, 5)),
    d=st.integers(1, 4),
)
def test_class_backward_matches_fd(kind, cls, power, normalize, backend, seed, n, m, d):
    kw = {} if cls is CosineSimilarity else {"normalize_embeddings": normalize}
    dist = cls(power=power, backend=backend, **kw)
    q = _emb(seed, n, d)
    r = None if m is None else _emb(seed + 1, m, d)
    w = _emb(seed + 2, n, n if m is None else m)
    mat = dist(q.astype(np.float32), None if r is None else r.astype(np.float32))
    dq, dr = dist.backward(w.astype(np.float32))
    f = _indep(kind, power, normalize)
    if r is None:
        assert dr is None
        fd = _fd(lambda z: np.sum(w * f(z, z)), q)
        np.testing.assert_allclose(mat, f(q, q), rtol=1e-4, atol=1e-4)
        if kind == "lp":  # the diagonal (d = 0) is not differentiable: our subgradient is 0
            pass
    else:
        fd = _fd(lambda z: np.sum(w * f(z, r)), q)
        fdr = _fd(lambda z: np.sum(w * f(q, z)), r)
        scale = max(1.0, np.abs(fdr).max())
        np.testing.assert_allclose(dr, fdr, rtol=2e-3, atol=2e-3 * scale)
    scale = max(1.0, np.abs(fd).max())
    np.testing.assert_allclose(dq, fd, rtol=2e-3, atol=2e-3 * scale)


def test_functional_pair_is_reentrant():
    """forward_ctx/backward with explicit contexts: interleaved calls do not disturb each other."""
    lp = LpDistance()
    a, b = _emb(0, 4, 3).astype(np.float32), _emb(1, 5, 3).astype(np.float32)
    ma, ca = lp.forward_ctx(a)
    mb, cb = lp.forward_ctx(b)
    ga = lp.backward(np.ones_like(ma), ca)[0]
    lp2 = LpDistance()
    lp2(a)
    np.testing.assert_array_equal(ga, lp2.backward(np.ones_like(ma))[0])


def test_zero_distance_subgradient_is_zero():
    """Duplicate embeddings: d = 0 exactly and no gradient flows through that entry."""
    q = _emb(3, 3, 4).astype(np.float32)
    q[2] = q[0]
    for backend in ("mantissa", "numpy"):
        lp = LpDistance(backend=backend)
        mat = lp(q)
        assert mat[0, 2] == 0
        w = np.zeros_like(mat)
        w[0, 2] = 1.0
        dq, _ = lp.backward(w)
        assert not dq.any()
