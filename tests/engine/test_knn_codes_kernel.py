"""engine.knn_codes_search (knn_codes*.c) against its numpy twin on every ranking mode and SIMD
path this CPU runs, against a float64 brute force, across tiles and thread counts; argument
errors."""

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mantissa_embed import _reference as ref, engine

from .conftest import CONV_KERNELS

_CPU = engine.cpu_features()
#: the ranking modes each dtype may use, kept to those this CPU runs
_RUNS = {"f32": True, "u7dot": _CPU["avx2"], "bf16dot": _CPU["avx512bf16"], "u8dot": _CPU["avx512vnni"]}
MODES = {
    "float32": ["f32"],
    "float16": [m for m in ("f32", "bf16dot") if _RUNS[m]],
    "bfloat16": [m for m in ("f32", "bf16dot") if _RUNS[m]],
    "int8": [m for m in ("f32", "u8dot", "u7dot") if _RUNS[m]],
}
CASES = [(dt, m) for dt, ms in MODES.items() for m in ms]
METRICS = ("sqeuclidean", "euclidean", "inner_product", "cosine")


def encode_exact(x, dtype, rng):
    """Small-integer rows (every product and sum exact) as codes of dtype, scales powers of 2."""
    if dtype == "float32":
        return x.astype(np.float32), None
    if dtype == "float16":
        return x.astype(np.float16).view(np.uint16), None
    if dtype == "bfloat16":
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16), None
    return x.astype(np.int8), (2.0 ** rng.integers(-3, 3, x.shape[0])).astype(np.float32)


def decoded(c, s, dtype):
    """The stored rows, decoded independently of the package."""
    if dtype == "float32":
        return c.astype(np.float64)
    if dtype == "float16":
        return c.view(np.float16).astype(np.float64)
    if dtype == "bfloat16":
        return (c.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return c.astype(np.float64) * s[:, None].astype(np.float64)


def brute(q, R, k, metric):
    """float64 values of every pair, stable order (ties by lower index); the k best."""
    q64 = q.astype(np.float64)
    if metric == "inner_product":
        val = q64 @ R.T
        key = -val
    elif metric == "cosine":
        nrm = np.sqrt((R * R).sum(1))
        val = np.clip(np.where(nrm > 0, 1 - (q64 @ R.T) / np.where(nrm > 0, nrm, 1), 1.0), 0, 2)
        key = val
    else:
        val = ((q64[:, None, :] - R[None]) ** 2).sum(-1)
        val = np.sqrt(val) if metric == "euclidean" else val
        key = val
    idx = np.argsort(key.astype(np.float32), axis=1, kind="stable")[:, :k]
    return idx, np.take_along_axis(val, idx, axis=1).astype(np.float32)


#: the ``kernel`` fixture (conftest) holds for every example of a test
_FIXED = [HealthCheck.function_scoped_fixture]


@pytest.fixture
def threads():
    before = engine.get_num_threads()
    yield
    engine.set_num_threads(before)


@st.composite
def exact_case(draw):
    dtype, mode = draw(st.sampled_from(CASES))
    D = draw(st.integers(1, 37))
    M = draw(st.integers(1, 140))
    n = draw(st.integers(1, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    hi = draw(st.integers(1, 4))
    x = rng.integers(-hi, hi + 1, (M, D))
    ndup = draw(st.integers(0, M // 2))
    if ndup:  # duplicate rows: exact ties between distinct indices
        x[rng.integers(0, M, ndup)] = x[rng.integers(0, M, ndup)]
    c, s = encode_exact(x, dtype, rng)
    q = rng.integers(-5, 6, (n, D)).astype(np.float32)
    if mode in ("u8dot", "u7dot"):  # queries the quantization keeps exactly
        q[:, rng.integers(0, D)] = 127 if mode == "u8dot" else 63
    k = draw(st.integers(1, M))
    tile_r = draw(st.sampled_from([0, 1, 16, 17, 48, 4096]))
    return dtype, mode, q, c, s, k, tile_r


@settings(max_examples=120, deadline=None, suppress_health_check=_FIXED)
@given(exact_case(), st.sampled_from(METRICS), st.sampled_from([1, 2, 3]))
def test_kernel_equals_twin_on_exact_data(kernel, threads, case, metric, nt):
    """Every score exact: the same ids and values bit for bit, whatever the tile and threads."""
    dtype, mode, q, c, s, k, tile_r = case
    engine.set_num_threads(nt)
    idx, dist = engine.knn_codes_search(q, c, s, k, dtype, metric, mode=mode, tile_r=tile_r)
    tidx, tdist = ref.knn_codes_search(q, c, s, k, dtype, metric, mode=mode, tile_r=tile_r)
    assert idx.dtype == np.int64 and dist.dtype == np.float32 and idx.shape == (q.shape[0], k)
    np.testing.assert_array_equal(idx, tidx)
    np.testing.assert_array_equal(dist, tdist)
    if mode == "f32" or metric in ("sqeuclidean", "euclidean"):
        # exact rankings (the bfloat16 / int8 rankings are exact on these integers too)
        bi, bd = brute(q, decoded(c, s, dtype), k, metric)
        np.testing.assert_array_equal(dist, bd)
        if metric != "cosine":  # cosine scores round 1/|r|: equal values may swap
            np.testing.assert_array_equal(idx, bi)


@st.composite
def float_case(draw):
    dtype, mode = draw(st.sampled_from(CASES))
    D = draw(st.integers(1, 70))
    M = draw(st.integers(2, 300))
    n = draw(st.integers(1, 20))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    x = rng.standard_normal((M, D)).astype(np.float32)
    if dtype == "float32":
        c, s = x, None
    elif dtype == "float16":
        c, s = x.astype(np.float16).view(np.uint16), None
    elif dtype == "bfloat16":
        c, s = (x.view(np.uint32) >> 16).astype(np.uint16), None
    else:
        s = (np.abs(x).max(1) / 127).astype(np.float32)
        c, s = np.clip(np.rint(x / s[:, None]), -127, 127).astype(np.int8), s
    q = rng.standard_normal((n, D)).astype(np.float32)
    return dtype, mode, q, c, s, draw(st.integers(1, min(M, 25)))


@settings(max_examples=80, deadline=None, suppress_health_check=_FIXED)
@given(float_case(), st.sampled_from(METRICS))
def test_values_are_exact_and_rankings_close(kernel, case, metric):
    """Random floats: each returned value is the float64 value of its pair, rows sorted; the ids
    are the brute force's but for near-equal scores (the mode's rounding)."""
    dtype, mode, q, c, s, k = case
    if metric == "cosine":
        q /= np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-30)
    R = decoded(c, s, dtype)
    idx, dist = engine.knn_codes_search(q, c, s, k, dtype, metric, mode=mode)
    _, full = brute(q, R, R.shape[0], metric)
    order_all, _ = brute(q, R, R.shape[0], metric)
    val = np.empty_like(full)
    np.put_along_axis(val, order_all, full, axis=1)  # val[i, j]: the value of pair (i, j)
    rows = np.arange(q.shape[0])[:, None]
    np.testing.assert_allclose(dist, val[rows, idx], rtol=1e-6, atol=1e-6)
    step = np.diff(dist, axis=1)
    assert (step <= 0).all() if metric == "inner_product" else (step >= 0).all()
    bi, bd = brute(q, R, k, metric)
    scale = 1.0 + float((q.astype(np.float64) ** 2).sum(1).max() + (R**2).sum(1).max())
    tol = {"f32": 1e-5, "bf16dot": 3e-2, "u8dot": 5e-2, "u7dot": 1e-1}[mode] * scale
    np.testing.assert_allclose(dist, bd, rtol=0, atol=tol)
    tidx, tdist = ref.knn_codes_search(q, c, s, k, dtype, metric, mode=mode)
    np.testing.assert_allclose(tdist, dist, rtol=0, atol=tol)


def test_float16_special_values_decode_exactly(kernel, threads):
    """Subnormal, largest and negative-zero float16 codes are the values they stand for (the
    portable, F16C and AVX-512 packings)."""
    vals = np.array([[6e-8, -6e-8, 65504.0, -0.0], [1e-5, 0.0, -65504.0, 3.0]], np.float16)
    q = np.array([[0.0, 0.0, 0.0, 0.0]], np.float32)
    for nt in (1, 2):
        engine.set_num_threads(nt)
        idx, dist = engine.knn_codes_search(q, vals, None, 2, "float16", "sqeuclidean", mode="f32")
        want = (vals.astype(np.float64) ** 2).sum(1)
        np.testing.assert_array_equal(idx[0], np.argsort(want))
        np.testing.assert_array_equal(dist[0], np.sort(want).astype(np.float32))


@pytest.mark.skipif(not _CPU["avx512bf16"], reason="CPU lacks AVX-512 BF16")
def test_bf16dot_reads_subnormals_as_zero():
    """vdpbf16ps flushes subnormal inputs; the twin models it, so the rankings agree."""
    x = np.array([[1e-39, 1.0], [2e-39, 1.0], [0.0, 1.0]], np.float32)
    c = (x.view(np.uint32) >> 16).astype(np.uint16)
    q = np.array([[3e-39, 1.0]], np.float32)
    a = engine.knn_codes_search(q, c, None, 3, "bfloat16", "inner_product", mode="bf16dot")
    b = ref.knn_codes_search(q, c, None, 3, "bfloat16", "inner_product", mode="bf16dot")
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_modes_follow_the_cpu_and_the_kernel():
    for kern in CONV_KERNELS:
        prev = engine._set_gemm_kernel(kern)
        try:
            assert engine.knn_codes_mode("float32", 64) == "f32"
            want16 = "bf16dot" if kern == "avx512" and _CPU["avx512bf16"] else "f32"
            assert engine.knn_codes_mode("float16", 64) == want16
            assert engine.knn_codes_mode("bfloat16", 64) == want16
            want8 = (
                "u8dot"
                if kern == "avx512" and _CPU["avx512vnni"]
                else "u7dot"
                if kern != "generic"
                else "f32"
            )
            assert engine.knn_codes_mode("int8", 64) == want8
            assert engine.knn_codes_mode("int8", 9000) == "f32"  # int32 sums could overflow
        finally:
            engine._set_gemm_kernel(prev)
    assert ref.knn_codes_mode("int8", 64) == "f32"
    for impl in (engine, ref):
        for bad, err in ((0, ValueError), (-5, ValueError), (64.5, TypeError), (True, TypeError)):
            with pytest.raises(err, match="D must"):
                impl.knn_codes_mode("int8", bad)


@pytest.mark.parametrize("impl", [engine, ref])
def test_argument_errors(impl):
    q = np.zeros((2, 4), np.float32)
    c8 = np.zeros((5, 4), np.int8)
    s = np.ones(5, np.float32)
    with pytest.raises(ValueError, match="dtype"):
        impl.knn_codes_search(q, c8, s, 1, "int4")
    with pytest.raises(TypeError, match="codes"):
        impl.knn_codes_search(q, c8.astype(np.int16), s, 1, "int8")
    with pytest.raises(ValueError, match="scales"):
        impl.knn_codes_search(q, c8, s[:3], 1, "int8")
    with pytest.raises(ValueError, match="scales"):
        impl.knn_codes_search(q, np.zeros((5, 4), np.float32), s, 1, "float32")
    with pytest.raises(ValueError, match="k must"):
        impl.knn_codes_search(q, c8, s, 6, "int8")
    with pytest.raises(TypeError, match="k must"):
        impl.knn_codes_search(q, c8, s, 1.0, "int8")
    with pytest.raises(ValueError, match="columns"):
        impl.knn_codes_search(np.zeros((2, 3), np.float32), c8, s, 1, "int8")
    with pytest.raises(ValueError, match="metric"):
        impl.knn_codes_search(q, c8, s, 1, "int8", metric="manhattan")
    with pytest.raises(ValueError, match="mode"):
        impl.knn_codes_search(q, c8, s, 1, "int8", mode="bf16dot")
    with pytest.raises(ValueError, match="tile_r"):
        impl.knn_codes_search(q, c8, s, 1, "int8", tile_r=-1)
    with pytest.raises(TypeError, match="indices"):
        impl.knn_codes_search(q, c8, s, 1, "int8", indices=np.zeros((2, 1), np.int32))
    with pytest.raises(ValueError, match="D <="):
        impl.knn_codes_search(
            np.zeros((1, 9000), np.float32), np.zeros((2, 9000), np.int8), s[:2], 1, "int8", mode="u7dot"
        )


def test_a_nan_query_gets_empty_slots_not_a_crash(kernel):
    """The kernel does not scan for NaN (Index.search does); a NaN row reaches no stored row."""
    c = np.arange(12, dtype=np.float32).reshape(6, 2)
    q = np.array([[np.nan, 0.0], [1.0, 1.0]], np.float32)
    idx, dist = engine.knn_codes_search(q, c, None, 3, "float32", "euclidean")
    np.testing.assert_array_equal(idx[0], -1)
    assert np.isinf(dist[0]).all()
    np.testing.assert_array_equal(idx[1], [0, 1, 2])


def test_a_smaller_openmp_team_still_reads_every_tile():
    """OpenMP may give the region fewer threads than asked (OMP_THREAD_LIMIT here): the tiles are
    shared out over the team it got, not the one asked for."""
    code = (
        "import numpy as np\n"
        "from mantissa_embed import engine, _reference as ref\n"
        "engine.set_num_threads(4)\n"
        "g = np.random.default_rng(0)\n"
        "c = g.integers(-3, 4, (500, 8)).astype(np.float32)\n"
        "q = g.integers(-3, 4, (5, 8)).astype(np.float32)\n"
        "a = engine.knn_codes_search(q, c, None, 7, 'float32', 'sqeuclidean', tile_r=16)\n"
        "b = ref.knn_codes_search(q, c, None, 7, 'float32', 'sqeuclidean')\n"
        "assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])\n"
    )
    env = dict(os.environ, OMP_THREAD_LIMIT="1")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)


@pytest.mark.parametrize("mode", [m for m in MODES["int8"] if m != "f32"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_nan_or_inf_query_gets_empty_slots_in_the_int8_modes(kernel, mode, bad):
    """The quantized modes: a NaN / Inf value gives the query no scale (no NaN -> int conversion),
    so it reaches no stored row, as in the float modes."""
    rng = np.random.default_rng(0)
    c = rng.integers(-127, 128, (40, 5)).astype(np.int8)
    s = np.ones(40, np.float32)
    q = rng.standard_normal((3, 5)).astype(np.float32)
    q[0, 2] = bad
    idx, dist = engine.knn_codes_search(q, c, s, 4, "int8", mode=mode)
    np.testing.assert_array_equal(idx[0], -1)
    assert np.isinf(dist[0]).all()
    good, _ = engine.knn_codes_search(q[1:], c, s, 4, "int8", mode=mode)
    np.testing.assert_array_equal(idx[1:], good)


def test_distances_may_not_share_memory_with_the_scales():
    c = np.zeros((12, 4), np.int8)
    buf = np.ones(12, np.float32)
    with pytest.raises(ValueError, match="scales"):
        engine.knn_codes_search(np.ones((3, 4), np.float32), c, buf, 4, "int8", distances=buf.reshape(3, 4))


def test_the_default_mode_reads_d_from_the_codes():
    """mode=None with a list query: the width comes from the codes, not the query (whose shape a
    list does not carry), so int8 past D = 8192 ranks in float32."""
    c, s = np.zeros((3, 9000), np.int8), np.ones(3, np.float32)
    idx, _ = engine.knn_codes_search(np.zeros((1, 9000)).tolist(), c, s, 1, "int8")
    np.testing.assert_array_equal(idx, [[0]])
