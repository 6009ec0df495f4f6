"""engine.knn_search (knn.c) == its numpy twin == a brute-force stable argsort; exclude_self,
ties, thread-count determinism, exact values and argument errors."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import _reference as ref, engine

KMETRICS = ("sqeuclidean", "euclidean", "inner_product")
IMPLS = [engine, ref]


def brute(q, r, k, metric, exclude_self):
    """float64 full score matrix, stable argsort (ties by lower index)."""
    q64, r64 = q.astype(np.float64), r.astype(np.float64)
    if metric == "inner_product":
        val = q64 @ r64.T
        key = -val
    else:
        val = ((q64[:, None, :] - r64[None]) ** 2).sum(-1)
        if metric == "euclidean":
            val = np.sqrt(val)
        key = val.copy()
    if exclude_self:
        i = np.arange(q.shape[0])
        key[i, i] = np.inf
    idx = np.argsort(key, axis=1, kind="stable")[:, :k]
    return idx, np.take_along_axis(val, idx, axis=1).astype(np.float32)


@st.composite
def int_case(draw):
    """Small integers (every score exact in float32: ties are real ties) with duplicate rows."""
    D = draw(st.integers(1, 9))
    exclude_self = draw(st.booleans())
    n = draw(st.integers(1, 45))
    M = draw(st.integers(max(2, n if exclude_self else 1), 90))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    hi = draw(st.integers(1, 4))
    r = rng.integers(-hi, hi + 1, (M, D)).astype(np.float32)
    ndup = draw(st.integers(0, M // 2))
    if ndup:  # copy some rows onto others: exact ties between distinct indices
        r[rng.integers(0, M, ndup)] = r[rng.integers(0, M, ndup)]
    q = r[:n].copy() if exclude_self else rng.integers(-hi, hi + 1, (n, D)).astype(np.float32)
    k = draw(st.integers(1, M - int(exclude_self)))
    tile_q = draw(st.sampled_from([1, 2, 5, 16, 256]))
    tile_r = draw(st.sampled_from([1, 3, 8, 33, 4096]))
    return q, r, k, exclude_self, tile_q, tile_r


@settings(max_examples=150, deadline=None)
@given(int_case(), st.sampled_from(KMETRICS))
def test_kernel_equals_twin_equals_brute_force(case, metric):
    q, r, k, exclude_self, tile_q, tile_r = case
    bi, bd = brute(q, r, k, metric, exclude_self)
    for impl in IMPLS:
        idx, dist = impl.knn_search(
            q, r, k, metric=metric, exclude_self=exclude_self, tile_q=tile_q, tile_r=tile_r
        )
        assert idx.dtype == np.int64 and dist.dtype == np.float32 and idx.shape == (q.shape[0], k)
        np.testing.assert_array_equal(idx, bi)
        np.testing.assert_array_equal(dist, bd)  # exact data, values recomputed exactly
        if exclude_self:
            assert not (idx == np.arange(q.shape[0])[:, None]).any()


@st.composite
def float_case(draw):
    D = draw(st.integers(1, 40))
    n = draw(st.integers(1, 60))
    M = draw(st.integers(max(n, 2), 150))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    r = rng.standard_normal((M, D)).astype(np.float32)
    q = rng.standard_normal((n, D)).astype(np.float32)
    exclude_self = draw(st.booleans())
    if exclude_self:
        q = r[:n].copy()
    k = draw(st.integers(1, min(20, M - int(exclude_self))))
    return q, r, k, exclude_self, draw(st.sampled_from([1, 7, 64])), draw(st.sampled_from([5, 32, 1000]))


@settings(max_examples=60, deadline=None)
@given(float_case(), st.sampled_from(KMETRICS))
def test_kernel_matches_twin_on_float_data(case, metric):
    """Random floats: same neighbours as the twin and brute force up to GEMM-rounding swaps of
    near-equal scores; values are exact (float64 recomputation) and sorted."""
    q, r, k, exclude_self, tq, tr = case
    idx, dist = engine.knn_search(q, r, k, metric=metric, exclude_self=exclude_self, tile_q=tq, tile_r=tr)
    tidx, tdist = ref.knn_search(q, r, k, metric=metric, exclude_self=exclude_self, tile_q=tq, tile_r=tr)
    bi, bd = brute(q, r, k, metric, exclude_self)
    scale = 1e-5 * float((q.astype(np.float64) ** 2).sum(1).max() + (r.astype(np.float64) ** 2).sum(1).max())
    np.testing.assert_allclose(dist, bd, atol=scale, rtol=0)
    np.testing.assert_allclose(tdist, bd, atol=scale, rtol=0)
    # the returned values are the exact values of the returned pairs
    _, full = brute(q, r, r.shape[0], metric, False)
    q64, r64 = q.astype(np.float64), r.astype(np.float64)
    rows = np.arange(q.shape[0])[:, None]
    if metric == "inner_product":
        exact = (q64 @ r64.T)[rows, idx]
    else:
        exact = ((q64[:, None] - r64[None]) ** 2).sum(-1)[rows, idx]
        if metric == "euclidean":
            exact = np.sqrt(exact)
    np.testing.assert_allclose(dist, exact.astype(np.float32), rtol=1e-6, atol=1e-30)
    step = np.diff(dist, axis=1)
    assert (step <= 0).all() if metric == "inner_product" else (step >= 0).all()
    assert (np.mean(idx == bi) > 0.95) and (np.mean(tidx == bi) > 0.95)


def test_near_duplicates_have_exact_distances():
    """|q|^2 + |r|^2 - 2 q.r cancels for far-from-origin near-duplicates; the kernel's values
    do not (the float64 recomputation)."""
    rng = np.random.default_rng(0)
    base = (rng.standard_normal((40, 16)) * 1000).astype(np.float32)
    r = np.concatenate([base, base + np.float32(0.01)])
    for impl in IMPLS:
        idx, dist = impl.knn_search(base, r, 2, metric="euclidean")
        np.testing.assert_array_equal(idx[:, 0], np.arange(40))
        np.testing.assert_array_equal(dist[:, 0], 0.0)
        truth = np.sqrt(((r[40:].astype(np.float64) - base) ** 2).sum(1))
        np.testing.assert_array_equal(idx[:, 1], np.arange(40, 80))
        np.testing.assert_allclose(dist[:, 1], truth, rtol=1e-6)


def test_large_k_and_all_neighbours():
    rng = np.random.default_rng(1)
    r = rng.integers(-3, 4, (300, 4)).astype(np.float32)
    for exclude_self in (False, True):
        k = 300 - int(exclude_self)
        bi, bd = brute(r, r, k, "sqeuclidean", exclude_self)
        idx, dist = engine.knn_search(r, r, k, exclude_self=exclude_self, tile_q=32, tile_r=64)
        np.testing.assert_array_equal(idx, bi)
        np.testing.assert_array_equal(dist, bd)


@pytest.fixture
def restore_threads():
    before = engine.get_num_threads()
    yield
    engine.set_num_threads(before)


def test_deterministic_and_thread_count_independent(restore_threads):
    rng = np.random.default_rng(2)
    r = rng.standard_normal((3000, 24)).astype(np.float32)
    q = rng.standard_normal((333, 24)).astype(np.float32)
    outs = []
    for nt in (1, 2, 3, 2):
        engine.set_num_threads(nt)
        outs.append(engine.knn_search(q, r, 10, metric="euclidean", tile_q=16, tile_r=500))
    for idx, dist in outs[1:]:
        np.testing.assert_array_equal(idx, outs[0][0])
        np.testing.assert_array_equal(dist, outs[0][1])


def test_output_buffers_written_in_place():
    r = np.arange(12, dtype=np.float32).reshape(6, 2)
    for impl in IMPLS:
        idx = np.empty((3, 2), np.int64)
        Dd = np.empty((3, 2), np.float32)
        oi, od = impl.knn_search(r[:3], r, 2, exclude_self=True, indices=idx, distances=Dd)
        assert oi is idx and od is Dd
        assert idx.tolist() == [[1, 2], [0, 2], [1, 3]]
        np.testing.assert_array_equal(Dd, [[8, 32], [8, 8], [8, 8]])


def test_empty_query():
    for impl in IMPLS:
        idx, dist = impl.knn_search(np.zeros((0, 3), np.float32), np.ones((4, 3), np.float32), 2)
        assert idx.shape == dist.shape == (0, 2)


@pytest.mark.parametrize("impl", IMPLS, ids=["engine", "numpy"])
@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(k=6), ValueError, "k must be <= 5"),
        (dict(k=5, exclude_self=True), ValueError, "k must be <= 4"),
        (dict(k=0), ValueError, "k must be >= 1"),
        (dict(k=True), TypeError, "k must be an int"),
        (dict(k=2, metric="cosine"), ValueError, "metric"),
        (dict(k=2, tile_q=0), ValueError, "tile_q"),
        (dict(k=2, tile_r=1.5), TypeError, "tile_r"),
        (dict(k=2, exclude_self=1), TypeError, "exclude_self"),
        (dict(k=2, indices=np.empty((2, 2), np.int32)), TypeError, "indices"),
        (dict(k=2, distances=np.empty((2, 3), np.float32)), ValueError, "distances"),
    ],
)
def test_bad_arguments(impl, kwargs, exc, match):
    r = np.ones((5, 3), np.float32)
    with pytest.raises(exc, match=match):
        impl.knn_search(r[:2], r, **kwargs)


@pytest.mark.parametrize("impl", IMPLS, ids=["engine", "numpy"])
def test_bad_arrays(impl):
    r = np.ones((5, 3), np.float32)
    with pytest.raises(ValueError, match="same number of columns"):
        impl.knn_search(np.ones((2, 4), np.float32), r, 1)
    with pytest.raises(ValueError, match="query must be 2-D"):
        impl.knn_search(np.ones(3, np.float32), r, 1)
    with pytest.raises(ValueError, match="exclude_self"):
        impl.knn_search(np.ones((6, 3), np.float32), r, 1, exclude_self=True)
    with pytest.raises(ValueError, match="at least one column"):
        impl.knn_search(np.ones((2, 0), np.float32), np.ones((3, 0), np.float32), 1)
    with pytest.raises(ValueError, match="must not share memory"):
        buf = np.zeros((2, 1), np.float32)
        impl.knn_search(buf, np.ones((3, 1), np.float32), 1, distances=buf[:, :1])
