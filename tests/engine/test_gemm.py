"""engine.sgemm against its numpy twin (float64 accumulation), on every micro-kernel path.

Expected values come from ``mantissa_embed._reference.sgemm`` (float64); the tolerance is
the float32 summation bound, scaled with K and with the magnitude of the terms.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mantissa_embed import _reference as ref, engine

SUPPORTED = ["generic"]
if engine.cpu_features()["avx2"] and engine.cpu_features()["fma"]:
    SUPPORTED.append("avx2")
if engine.cpu_features()["avx512f"] and engine.cpu_features()["fma"]:
    SUPPORTED.append("avx512")
ALL_KERNELS = ["generic", "avx2", "avx512"]


@pytest.fixture(params=ALL_KERNELS)
def kernel(request):
    """Run the test with each micro-kernel (skipping those this CPU lacks)."""
    if request.param not in SUPPORTED:
        pytest.skip(f"CPU lacks the {request.param} kernel")
    previous = engine._set_gemm_kernel(request.param)
    try:
        yield request.param
    finally:
        engine._set_gemm_kernel(previous)


def _operands(rng, M, N, K, ta, tb, scale=1.0):
    A = (scale * rng.standard_normal((K, M) if ta else (M, K))).astype(np.float32)
    B = rng.standard_normal((N, K) if tb else (K, N)).astype(np.float32)
    C0 = rng.standard_normal((M, N)).astype(np.float32)
    return A, B, C0


def _check(A, B, C0, ta, tb, alpha, beta, fn=engine.sgemm):
    M, N = C0.shape
    K = A.shape[0] if ta else A.shape[1]
    C = C0.copy()
    out = fn(A, B, C, trans_a=ta, trans_b=tb, alpha=alpha, beta=beta)
    assert out is C
    R = ref.sgemm(A, B, C0.copy(), trans_a=ta, trans_b=tb, alpha=alpha, beta=beta)
    a = np.abs((A.T if ta else A).astype(np.float64))
    b = np.abs((B.T if tb else B).astype(np.float64))
    mag = abs(alpha) * (a @ b) + abs(beta) * np.abs(C0.astype(np.float64))
    tol = (K + 4) * 2.0**-23 * mag + 1e-30
    err = np.abs(C.astype(np.float64) - R.astype(np.float64))
    bad = err > tol
    assert not bad.any(), (
        f"M={M} N={N} K={K} ta={ta} tb={tb} alpha={alpha} beta={beta}: "
        f"{bad.sum()} elements off, worst {err.max():.3g} (tol {tol[bad].min():.3g})"
    )
    assert np.isfinite(C).all()


dims = st.one_of(st.integers(0, 4), st.integers(1, 40), st.integers(0, 300))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)  # the kernel is fixed per test
@given(
    M=dims,
    N=dims,
    K=dims,
    ta=st.booleans(),
    tb=st.booleans(),
    alpha=st.sampled_from([1.0, -0.5, 2.0]),
    beta=st.sampled_from([0.0, 1.0, -1.5]),
    seed=st.integers(0, 2**32 - 1),
)
def test_sgemm_matches_twin(kernel, M, N, K, ta, tb, alpha, beta, seed):
    rng = np.random.default_rng(seed)
    A, B, C0 = _operands(rng, M, N, K, ta, tb)
    _check(A, B, C0, ta, tb, alpha, beta)


# Tile, block and path boundaries: MR (4, 6, 14), NR (8, 16, 32), KC (384), NC (512), the
# A panel (2016 rows), the dot-product path (A @ B^T, K >= 128), B read in place (small M).
EDGE_SHAPES = [
    (1, 1, 1),
    (13, 31, 7),
    (14, 32, 16),
    (15, 33, 17),
    (28, 64, 383),
    (29, 65, 384),
    (57, 97, 385),
    (5, 530, 20),
    (70, 530, 800),
    (2030, 3, 5),
    (3, 2, 2000),
    (8, 9, 784),
    (16, 72, 196),
    (64, 64, 784),
    (64, 16, 64),
    (72, 196, 16),
    (64, 64, 64),
    (5, 7, 131),
    (130, 126, 129),
]


@pytest.mark.parametrize("M,N,K", EDGE_SHAPES)
@pytest.mark.parametrize("ta,tb", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_sgemm_edges(kernel, M, N, K, ta, tb):
    rng = np.random.default_rng(M * 1000003 + N * 1009 + K)
    A, B, C0 = _operands(rng, M, N, K, bool(ta), bool(tb))
    _check(A, B, C0, bool(ta), bool(tb), 0.75, 0.0)
    _check(A, B, C0, bool(ta), bool(tb), 1.0, 1.0)


@pytest.mark.parametrize("M,N,K", [(37, 41, 1), (150, 130, 70), (16, 72, 196)])
def test_sgemm_st_is_bitwise_sgemm(kernel, M, N, K):
    """me_sgemm_st and the threaded me_sgemm compute every element identically."""
    rng = np.random.default_rng(3)
    for ta in (False, True):
        for tb in (False, True):
            A, B, C0 = _operands(rng, M, N, K, ta, tb)
            c1 = engine.sgemm(A, B, C0.copy(), trans_a=ta, trans_b=tb, alpha=0.5, beta=2.0)
            c2 = engine._sgemm_st(A, B, C0.copy(), trans_a=ta, trans_b=tb, alpha=0.5, beta=2.0)
            assert np.array_equal(c1, c2)
            _check(A, B, C0, ta, tb, 0.5, 2.0, fn=engine._sgemm_st)


def test_sgemm_repeated_calls_bitwise_identical(kernel):
    rng = np.random.default_rng(7)
    A, B, _ = _operands(rng, 300, 260, 500, False, True)
    first = engine.sgemm(A, B, trans_b=True)
    for _ in range(3):
        assert np.array_equal(engine.sgemm(A, B, trans_b=True), first)


@pytest.mark.parametrize("M,N,K", [(5, 7, 3), (40, 70, 300), (3, 3, 0)])
def test_beta_zero_ignores_nan_in_c(kernel, M, N, K):
    rng = np.random.default_rng(1)
    A, B, _ = _operands(rng, M, N, K, False, False)
    C = np.full((M, N), np.nan, np.float32)
    C[0, 0] = np.inf
    engine.sgemm(A, B, C, beta=0.0)
    assert np.isfinite(C).all()
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5 * (K + 1))


def test_alpha_zero_does_not_read_a_or_b(kernel):
    A = np.full((4, 6), np.nan, np.float32)
    B = np.full((6, 5), np.inf, np.float32)
    C = np.arange(20, dtype=np.float32).reshape(4, 5)
    engine.sgemm(A, B, C, alpha=0.0, beta=2.0)
    np.testing.assert_array_equal(C, 2.0 * np.arange(20, dtype=np.float32).reshape(4, 5))
    C[0, 0] = np.nan
    engine.sgemm(A, B, C, alpha=0.0, beta=0.0)
    np.testing.assert_array_equal(C, np.zeros((4, 5), np.float32))


@pytest.mark.parametrize("backend", [engine, ref], ids=["engine", "numpy"])
def test_empty_dimensions(backend):
    A = np.ones((3, 0), np.float32)
    B = np.ones((0, 4), np.float32)
    C = np.full((3, 4), np.nan, np.float32)
    assert backend.sgemm(A, B, C) is C
    np.testing.assert_array_equal(C, 0.0)
    C[:] = 2.0
    backend.sgemm(A, B, C, beta=3.0)
    np.testing.assert_array_equal(C, 6.0)
    assert backend.sgemm(np.ones((0, 5), np.float32), np.ones((5, 2), np.float32)).shape == (0, 2)
    assert backend.sgemm(np.ones((2, 5), np.float32), np.ones((5, 0), np.float32)).shape == (2, 0)
    assert backend.sgemm(np.ones((5, 0), np.float32), np.ones((5, 2), np.float32), trans_a=True).shape == (
        0,
        2,
    )


@pytest.mark.parametrize("backend", [engine, ref], ids=["engine", "numpy"])
def test_new_output_and_beta(backend):
    rng = np.random.default_rng(2)
    A, B, _ = _operands(rng, 6, 5, 4, False, False)
    C = backend.sgemm(A, B, alpha=2.0, beta=3.0)  # no C given: beta multiplies zeros
    assert C.dtype == np.float32 and C.shape == (6, 5) and C.flags.c_contiguous
    np.testing.assert_allclose(C, 2.0 * (A.astype(np.float64) @ B), rtol=1e-5, atol=1e-5)


def _bad_calls():
    f = np.ones((3, 4), np.float32)
    g = np.ones((4, 5), np.float32)
    ro = np.zeros((3, 5), np.float32)
    ro.flags.writeable = False
    return [
        ("A", TypeError, (f.astype(np.float64), g), {}),
        ("A", TypeError, (f.tolist(), g), {}),
        ("B", TypeError, (f, g.astype(np.int32)), {}),
        ("A", ValueError, (np.ones((3, 4, 1), np.float32), g), {}),
        ("B", ValueError, (f, np.ones(4, np.float32)), {}),
        ("A", ValueError, (np.ones((4, 3), np.float32).T, g), {}),
        ("inner dimensions", ValueError, (f, g.T.copy()), {}),
        ("inner dimensions", ValueError, (f, g), {"trans_a": True}),
        ("C", ValueError, (f, g, np.zeros((5, 3), np.float32)), {}),
        ("C", TypeError, (f, g, np.zeros((3, 5), np.float64)), {}),
        ("C", ValueError, (f, g, np.zeros((3, 10), np.float32)[:, ::2]), {}),
        ("C", ValueError, (f, g, ro), {}),
        ("alpha", ValueError, (f, g), {"alpha": float("nan")}),
        ("beta", ValueError, (f, g), {"beta": float("inf")}),
        ("alpha", ValueError, (f, g), {"alpha": 1e39}),
        ("alpha", TypeError, (f, g), {"alpha": "1"}),
        ("beta", TypeError, (f, g), {"beta": None}),
    ]


@pytest.mark.parametrize("backend", [engine, ref], ids=["engine", "numpy"])
@pytest.mark.parametrize("case", range(len(_bad_calls())))
def test_bad_input(backend, case):
    name, exc, args, kw = _bad_calls()[case]
    with pytest.raises(exc, match=name):
        backend.sgemm(*args, **kw)


@pytest.mark.parametrize("backend", [engine, ref], ids=["engine", "numpy"])
def test_c_overlapping_an_input_is_rejected(backend):
    buf = np.zeros((4, 4), np.float32)
    with pytest.raises(ValueError, match="share memory"):
        backend.sgemm(buf, buf, buf)
    big = np.zeros((8, 4), np.float32)
    A = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError, match="share memory"):
        backend.sgemm(A, big[:4], big[2:6], trans_b=True)
    out = backend.sgemm(A, big[:4], big[4:], beta=1.0)  # adjacent, not overlapping
    np.testing.assert_array_equal(out, 0.0)


def test_kernel_selection_api():
    assert engine.gemm_kernel_name() in ALL_KERNELS
    feats = engine.cpu_features()
    assert set(feats) == {
        "avx2",
        "fma",
        "avx512f",
        "avx512vl",
        "f16c",
        "avx512bw",
        "avx512vnni",
        "avx512bf16",
    } and all(isinstance(v, bool) for v in feats.values())
    assert set(ref.cpu_features()) == set(feats)
    with pytest.raises(ValueError, match="name"):
        engine._set_gemm_kernel("sse9")
    with pytest.raises(TypeError, match="name"):
        engine._set_gemm_kernel(2)
    for name in ALL_KERNELS:
        if name not in SUPPORTED:
            with pytest.raises(ValueError, match="not supported"):
                engine._set_gemm_kernel(name)
    previous = engine._set_gemm_kernel("generic")
    try:
        assert engine.gemm_kernel_name() == "generic"
    finally:
        engine._set_gemm_kernel(previous)
    assert engine.gemm_kernel_name() == previous


def test_read_only_operands_are_accepted():
    # A and B are only read: a read-only array (np.load(mmap_mode="r"), broadcast views made
    # contiguous, ...) is accepted, not refused with "buffer source array is read-only"
    rng = np.random.default_rng(0)
    A = rng.standard_normal((5, 4)).astype(np.float32)
    B = rng.standard_normal((4, 3)).astype(np.float32)
    A.flags.writeable = False
    B.flags.writeable = False
    np.testing.assert_allclose(engine.sgemm(A, B), A @ B, rtol=1e-5, atol=1e-5)
    C = np.zeros((5, 3), np.float32)
    C.flags.writeable = False
    with pytest.raises(ValueError, match=r"C must be writeable"):
        engine.sgemm(A, B, C)
