"""evaluation.knn: exact tiled k-NN vs brute force (stable order, ties by index), and its errors."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed.evaluation.knn import METRICS, knn

BACKENDS = ["mantissa", "numpy"]


def brute_force(q, r, k, metric, exclude_self):
    """float64 full score matrix, stable argsort (ties by lower index)."""
    q = q.astype(np.float64)
    r = r.astype(np.float64)
    if metric in ("euclidean", "sqeuclidean"):
        d = ((q[:, None, :] - r[None, :, :]) ** 2).sum(-1)
        if metric == "euclidean":
            d = np.sqrt(d)
        key = d
    elif metric == "inner_product":
        d = q @ r.T
        key = -d
    else:
        qn = np.linalg.norm(q, axis=1, keepdims=True)
        rn = np.linalg.norm(r, axis=1, keepdims=True)
        d = 1.0 - (q / np.where(qn > 0, qn, 1)) @ (r / np.where(rn > 0, rn, 1)).T
        key = d
    if exclude_self:
        i = np.arange(q.shape[0])
        key = key.copy()
        key[i, i] = np.inf
    idx = np.argsort(key, axis=1, kind="stable")[:, :k]
    return idx, np.take_along_axis(d, idx, axis=1)


@st.composite
def int_case(draw):
    """Small integer coordinates: every score is exact in float32, so ties are real ties."""
    D = draw(st.integers(1, 6))
    n = draw(st.integers(1, 40))
    exclude_self = draw(st.booleans())
    M = draw(st.integers(max(2, n if exclude_self else 1), 70))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    lo = draw(st.integers(-4, 0))
    r = rng.integers(lo, 3, (M, D)).astype(np.float32)
    if exclude_self:
        q = r[:n].copy()
    else:
        q = rng.integers(lo, 3, (n, D)).astype(np.float32)
    k = draw(st.integers(1, M - int(exclude_self)))
    tile = draw(st.sampled_from([1, 3, 7, 16, 4096]))
    return q, r, k, exclude_self, tile


@settings(max_examples=120, deadline=None)
@given(int_case(), st.sampled_from(["euclidean", "sqeuclidean", "inner_product"]), st.sampled_from(BACKENDS))
def test_knn_equals_stable_brute_force_on_exact_data(case, metric, backend):
    q, r, k, exclude_self, tile = case
    idx, dist = knn(q, r, k, exclude_self=exclude_self, metric=metric, tile=tile, backend=backend)
    ref_idx, ref_d = brute_force(q, r, k, metric, exclude_self)
    assert idx.dtype == np.int64 and dist.dtype == np.float32
    assert idx.shape == dist.shape == (q.shape[0], k)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_d, rtol=1e-6, atol=1e-6)
    if exclude_self:
        assert not (idx == np.arange(q.shape[0])[:, None]).any()


@st.composite
def float_case(draw):
    D = draw(st.integers(1, 12))
    n = draw(st.integers(1, 30))
    M = draw(st.integers(max(n, 2), 60))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    scale = draw(st.sampled_from([1e-3, 1.0, 50.0]))
    r = (rng.standard_normal((M, D)) * scale).astype(np.float32)
    q = (rng.standard_normal((n, D)) * scale).astype(np.float32)
    exclude_self = draw(st.booleans())
    if exclude_self:
        q = r[:n].copy()
    k = draw(st.integers(1, M - int(exclude_self)))
    return q, r, k, exclude_self, draw(st.sampled_from([2, 5, 4096]))


@settings(max_examples=80, deadline=None)
@given(float_case(), st.sampled_from(METRICS), st.sampled_from(BACKENDS))
def test_knn_is_a_valid_knn_on_float_data(case, metric, backend):
    """Values match the float64 truth of the returned pairs and the k smallest, within the
    documented GEMM-expansion error (about 1e-7 * (|q|^2 + |r|^2) on squared distances)."""
    q, r, k, exclude_self, tile = case
    idx, dist = knn(q, r, k, exclude_self=exclude_self, metric=metric, tile=tile, backend=backend)
    _, ref_d = brute_force(q, r, k, metric, exclude_self)
    q64, r64 = q.astype(np.float64), r.astype(np.float64)
    rows = np.arange(q.shape[0])[:, None]
    if metric in ("euclidean", "sqeuclidean"):
        truth = ((q64[:, None] - r64[None]) ** 2).sum(-1)[rows, idx]
        got = dist.astype(np.float64) ** (2 if metric == "euclidean" else 1)
        ref = ref_d ** (2 if metric == "euclidean" else 1)
        tol = 4e-6 * ((q64**2).sum(1).max() + (r64**2).sum(1).max())
    elif metric == "inner_product":
        truth, got, ref = (q64 @ r64.T)[rows, idx], dist, ref_d
        tol = 4e-6 * np.sqrt((q64**2).sum(1).max() * (r64**2).sum(1).max())
    else:
        qn = np.linalg.norm(q64, axis=1, keepdims=True)
        rn = np.linalg.norm(r64, axis=1, keepdims=True)
        truth, got, ref = (1 - (q64 / qn) @ (r64 / rn).T)[rows, idx], dist, ref_d
        tol = 4e-6
    np.testing.assert_allclose(got, truth, atol=tol, rtol=0)
    np.testing.assert_allclose(got, ref, atol=tol, rtol=0)  # the k best values of brute force
    step = np.diff(dist, axis=1)
    assert (step <= 0).all() if metric == "inner_product" else (step >= 0).all()
    assert all(len(set(row)) == k for row in idx.tolist())
    if exclude_self:
        assert not (idx == np.arange(q.shape[0])[:, None]).any()


def test_ties_broken_by_lower_index_across_tiles():
    r = np.zeros((10, 2), np.float32)  # ten identical references
    q = np.zeros((3, 2), np.float32)
    for tile in (1, 3, 4, 100):
        for backend in BACKENDS:
            idx, dist = knn(q, r, 4, tile=tile, backend=backend)
            np.testing.assert_array_equal(idx, np.tile(np.arange(4), (3, 1)))
            np.testing.assert_array_equal(dist, 0)
            idx, _ = knn(r, r, 4, exclude_self=True, tile=tile, backend=backend)
            assert idx[0].tolist() == [1, 2, 3, 4] and idx[2].tolist() == [0, 1, 3, 4]
    # many ties in a wide block (threshold-and-filter selection path)
    r = np.zeros((300, 3), np.float32)
    r[::7] = 5.0
    for backend in BACKENDS:
        idx, _ = knn(np.zeros((4, 3), np.float32), r, 3, backend=backend)
        np.testing.assert_array_equal(idx, np.tile([1, 2, 3], (4, 1)))
        idx, _ = knn(r[:4], r, 3, exclude_self=True, backend=backend)
        assert idx[1].tolist() == [2, 3, 4] and idx[0].tolist() == [7, 14, 21]
    # a tie exactly at the k-th place: equal values beyond k must not displace lower indices
    r = np.array([[3.0], [1.0], [2.0], [1.0], [2.0], [2.0], [1.0]], np.float32)
    idx, d = knn(np.zeros((1, 1), np.float32), r, 4, tile=100)
    assert idx[0].tolist() == [1, 3, 6, 2] and d[0].tolist() == [1, 1, 1, 2]


def test_backends_and_tiles_agree():
    rng = np.random.default_rng(3)
    r = rng.standard_normal((500, 8)).astype(np.float32)
    q = r[:200]
    base = knn(q, r, 7, exclude_self=True, backend="numpy", tile=4096)
    for backend in BACKENDS:
        for tile in (13, 64, 4096):
            idx, dist = knn(q, r, 7, exclude_self=True, backend=backend, tile=tile)
            np.testing.assert_array_equal(idx, base[0])
            np.testing.assert_allclose(dist, base[1], rtol=1e-6)


def test_self_is_nearest_with_float_rounding_sized_distance():
    rng = np.random.default_rng(4)
    r = (rng.standard_normal((50, 16)) * 100).astype(np.float32)
    for backend in BACKENDS:
        idx, dist = knn(r, r, 2, backend=backend)
        np.testing.assert_array_equal(idx[:, 0], np.arange(50))
        np.testing.assert_array_equal(dist[:, 0], 0.0)  # recomputed: no GEMM-expansion error
        assert (dist[:, 1] > 100).all()


def test_cosine_zero_rows_and_values():
    r = np.array([[1, 0], [0, 2], [0, 0], [-3, 0]], np.float32)
    idx, d = knn(np.array([[2, 0]], np.float32), r, 4, metric="cosine")
    assert idx[0].tolist() == [0, 1, 2, 3]
    np.testing.assert_allclose(d[0], [0, 1, 1, 2], atol=1e-7)
    idx, s = knn(np.array([[1, 1]], np.float32), r, 2, metric="inner_product")
    assert idx[0].tolist() == [1, 0] and s[0].tolist() == [2.0, 1.0]


def test_empty_query():
    idx, d = knn(np.zeros((0, 3), np.float32), np.ones((4, 3), np.float32), 2)
    assert idx.shape == d.shape == (0, 2) and idx.dtype == np.int64 and d.dtype == np.float32


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(k=6), ValueError, "k must be <= 5"),
        (dict(k=5, exclude_self=True), ValueError, "k must be <= 4"),
        (dict(k=0), ValueError, "k must be >= 1"),
        (dict(k=2.0), TypeError, "k must be an int"),
        (dict(k=2, metric="manhattan"), ValueError, "metric"),
        (dict(k=2, backend="torch"), ValueError, "backend"),
        (dict(k=2, tile=0), ValueError, "tile"),
        (dict(k=2, exclude_self="yes"), TypeError, "exclude_self"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    r = np.ones((5, 3), np.float32)
    with pytest.raises(exc, match=match):
        knn(r[:2], r, **kwargs)


def test_bad_arrays():
    r = np.ones((5, 3), np.float32)
    with pytest.raises(ValueError, match="same number of columns"):
        knn(np.ones((2, 4)), r, 1)
    with pytest.raises(ValueError, match="query contains NaN"):
        knn(np.array([[np.nan, 0, 0]]), r, 1)
    with pytest.raises(ValueError, match="reference contains NaN or Inf"):
        knn(r, np.array([[np.inf, 0, 0]]), 1)
    with pytest.raises(ValueError, match="query must be 2-D"):
        knn(np.ones(3), r, 1)
    with pytest.raises(TypeError, match="query"):
        knn("abc", r, 1)
    with pytest.raises(ValueError, match="exclude_self"):
        knn(np.ones((6, 3)), r, 1, exclude_self=True)
    with pytest.raises(ValueError, match="at least one column"):
        knn(np.ones((2, 0)), np.ones((3, 0)), 1)
    with pytest.raises(ValueError, match="overflow"):
        knn(np.full((2, 3), 1e19, np.float32), r, 1)


def test_returned_values_are_exact_for_near_duplicates():
    """Far from the origin, |q|^2 + |r|^2 - 2 q.r loses every digit of a 1e-2 distance; the
    returned values are recomputed from the vectors (float64) for both backends."""
    rng = np.random.default_rng(5)
    base = (rng.standard_normal((30, 32)) * 1000).astype(np.float32)
    near = base + np.float32(0.01)
    truth = np.sqrt(((near.astype(np.float64) - base) ** 2).sum(1))
    for backend in BACKENDS:
        for metric, want in (("euclidean", truth), ("sqeuclidean", truth**2)):
            idx, dist = knn(base, near, 1, metric=metric, backend=backend)
            np.testing.assert_array_equal(idx[:, 0], np.arange(30))
            np.testing.assert_allclose(dist[:, 0], want, rtol=1e-6)


def test_same_result_for_any_engine_thread_count():
    from mantissa_embed import engine

    before = engine.get_num_threads()
    rng = np.random.default_rng(6)
    r = rng.standard_normal((2000, 16)).astype(np.float32)
    q = rng.standard_normal((101, 16)).astype(np.float32)
    try:
        outs = []
        for nt in (1, 2, 3):
            engine.set_num_threads(nt)
            outs.append(knn(q, r, 5, tile=256))
    finally:
        engine.set_num_threads(before)
    for idx, dist in outs[1:]:
        np.testing.assert_array_equal(idx, outs[0][0])
        np.testing.assert_array_equal(dist, outs[0][1])
