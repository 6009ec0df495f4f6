"""Distance matrices equal an independent float64 computation; constructor contracts."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed.distances import CosineSimilarity, DotProductSimilarity, LpDistance


def _emb(seed, n, d):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def _norm64(x):
    x = x.astype(np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _lp64(q, r, normalize=True):
    if normalize:
        q, r = _norm64(q), _norm64(r)
    return np.linalg.norm(q.astype(np.float64)[:, None, :] - r.astype(np.float64)[None, :, :], axis=2)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 15),
    m=st.one_of(st.none(), st.integers(0, 15)),
    d=st.integers(1, 20),
    power=st.sampled_from([1, 2, 0.5, 3]),
    normalize=st.booleans(),
    backend=st.sampled_from(["mantissa", "numpy"]),
)
def test_lp_distance_matches_float64(seed, n, m, d, power, normalize, backend):
    q = _emb(seed, n, d)
    r = None if m is None else _emb(seed + 1, m, d)
    mat = LpDistance(power=power, normalize_embeddings=normalize, backend=backend)(q, r)
    want = _lp64(q, q if r is None else r, normalize) ** power
    assert mat.dtype == np.float32 and mat.shape == want.shape
    np.testing.assert_allclose(mat, want, rtol=1e-4, atol=1e-4 * (1 if normalize else 10))


def test_duplicates_and_self_are_exactly_zero():
    q = _emb(0, 6, 16)
    q[3] = q[1]
    for backend in ("mantissa", "numpy"):
        mat = LpDistance(backend=backend)(q)
        assert np.all(np.diag(mat) == 0)
        assert mat[1, 3] == 0 and mat[3, 1] == 0
        # a near-duplicate keeps its small distance (no cancellation)
        q2 = q.copy()
        q2[3] += 1e-4
        mat = LpDistance(normalize_embeddings=False, backend=backend)(q2)
        assert mat[1, 3] == pytest.approx(1e-4 * np.sqrt(16), rel=1e-2)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 12),
    m=st.integers(0, 12),
    d=st.integers(1, 10),
    normalize=st.booleans(),
)
def test_dot_and_cosine_match_float64(seed, n, m, d, normalize):
    q, r = _emb(seed, n, d), _emb(seed + 1, m, d)
    dot = DotProductSimilarity(normalize_embeddings=normalize)(q, r)
    qq, rr = (_norm64(q), _norm64(r)) if normalize else (q.astype(np.float64), r.astype(np.float64))
    np.testing.assert_allclose(dot, qq @ rr.T, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(CosineSimilarity()(q, r), _norm64(q) @ _norm64(r).T, rtol=1e-5, atol=1e-5)


def test_pml_helpers():
    lp, cs = LpDistance(), CosineSimilarity()
    a, b = np.array([1.0, 3.0]), np.array([2.0, 2.0])
    assert not lp.is_inverted and cs.is_inverted
    np.testing.assert_array_equal(lp.smallest_dist(a, b), [1, 2])
    np.testing.assert_array_equal(cs.smallest_dist(a, b), [2, 3])
    np.testing.assert_array_equal(lp.largest_dist(a, b), [2, 3])
    np.testing.assert_array_equal(lp.margin(a, b), a - b)
    np.testing.assert_array_equal(cs.margin(a, b), b - a)
    x = _emb(1, 4, 3)
    np.testing.assert_allclose(
        lp.pairwise_distance(x, x[::-1]), np.linalg.norm(x - x[::-1], axis=1), rtol=1e-6
    )
    np.testing.assert_allclose(np.linalg.norm(lp.normalize(x), axis=1), 1, rtol=1e-6)


def test_constructor_errors():
    with pytest.raises(ValueError, match="p must be >= 1"):  # any p >= 1 is implemented
        LpDistance(p=0.5)
    with pytest.raises(ValueError, match="p=3"):
        DotProductSimilarity(p=3)
    with pytest.raises(ValueError, match="is_inverted"):
        LpDistance(is_inverted=True)
    with pytest.raises(ValueError, match="is_inverted"):
        DotProductSimilarity(is_inverted=False)
    with pytest.raises(ValueError, match="normalize_embeddings"):
        CosineSimilarity(normalize_embeddings=False)
    with pytest.raises(ValueError, match="power"):
        LpDistance(power=0)
    with pytest.raises(ValueError, match="backend"):
        LpDistance(backend="torch")
    with pytest.raises(TypeError, match="normalize_embeddings"):
        LpDistance(normalize_embeddings="yes")
    with pytest.raises(TypeError):
        LpDistance(q=2)


def test_call_errors():
    lp = LpDistance()
    with pytest.raises(ValueError, match="query_emb"):
        lp(np.full((2, 3), np.nan, np.float32))
    with pytest.raises(ValueError, match="query_emb must be 2-D"):
        lp(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="ref_emb"):
        lp(np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32))
    with pytest.raises(TypeError, match="query_emb"):
        lp("abc")
    with pytest.raises(RuntimeError, match="before"):
        LpDistance().backward(np.zeros((1, 1), np.float32))
    lp(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="dmat"):
        lp.backward(np.zeros((3, 3), np.float32))
