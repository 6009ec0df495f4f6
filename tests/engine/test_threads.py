"""Engine thread count and kernel selection: API, environment variables, and results that
do not depend on the number of threads."""

import os
import subprocess
import sys

import numpy as np
import pytest

from mantissa_embed import _reference as ref, engine


@pytest.fixture
def restore_threads():
    before = engine.get_num_threads()
    yield
    engine.set_num_threads(before)


def test_default_is_at_least_one():
    assert isinstance(engine.get_num_threads(), int) and engine.get_num_threads() >= 1


@pytest.mark.parametrize("backend", [engine, ref], ids=["engine", "numpy"])
def test_set_get_roundtrip(backend, restore_threads):
    before = backend.get_num_threads()
    try:
        for n in (1, 3, 2):
            backend.set_num_threads(n)
            assert backend.get_num_threads() == n
        backend.set_num_threads(np.int64(2))
        assert backend.get_num_threads() == 2
    finally:
        backend.set_num_threads(before)


@pytest.mark.parametrize("backend", [engine, ref], ids=["engine", "numpy"])
@pytest.mark.parametrize(
    "bad,exc",
    [
        (0, ValueError),
        (-3, ValueError),
        (5000, ValueError),
        (1.5, TypeError),
        (True, TypeError),
        ("2", TypeError),
        (None, TypeError),
    ],
)
def test_set_num_threads_rejects(backend, bad, exc, restore_threads):
    before = backend.get_num_threads()
    with pytest.raises(exc, match="n must"):
        backend.set_num_threads(bad)
    assert backend.get_num_threads() == before


# Shapes on both sides of the threading threshold and of every path (packed, B in place,
# dot product), with odd sizes so the per-thread rectangles have ragged edges.
SHAPES = [
    (150, 130, 70, False, False),
    (333, 47, 129, True, False),
    (61, 517, 90, False, True),
    (64, 64, 784, False, True),
    (2100, 20, 9, False, False),
    (45, 300, 260, True, True),
]


KERNELS = ["generic"] + [
    k
    for k, ok in [
        ("avx2", engine.cpu_features()["avx2"] and engine.cpu_features()["fma"]),
        ("avx512", engine.cpu_features()["avx512f"] and engine.cpu_features()["fma"]),
    ]
    if ok
]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("M,N,K,ta,tb", SHAPES)
def test_sgemm_bitwise_identical_across_thread_counts(M, N, K, ta, tb, kernel, restore_threads):
    rng = np.random.default_rng(M + N + K)
    A = rng.standard_normal((K, M) if ta else (M, K)).astype(np.float32)
    B = rng.standard_normal((N, K) if tb else (K, N)).astype(np.float32)
    C0 = rng.standard_normal((M, N)).astype(np.float32)
    previous = engine._set_gemm_kernel(kernel)
    try:
        results = []
        for n in (1, 2, 3, 4):
            engine.set_num_threads(n)
            for _ in range(2):
                results.append(engine.sgemm(A, B, C0.copy(), trans_a=ta, trans_b=tb, alpha=1.5, beta=0.5))
    finally:
        engine._set_gemm_kernel(previous)
    for r in results[1:]:
        assert np.array_equal(r, results[0])
    expect = ref.sgemm(A, B, C0.copy(), trans_a=ta, trans_b=tb, alpha=1.5, beta=0.5)
    np.testing.assert_allclose(results[0], expect, rtol=1e-4, atol=1e-4 * np.sqrt(K))


def _run(code, **env):
    full = dict(os.environ)
    for k in ("MANTISSA_EMBED_NUM_THREADS", "MANTISSA_EMBED_GEMM_KERNEL"):
        full.pop(k, None)
    full.update(env)
    out = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_num_threads_env_var():
    code = "from mantissa_embed import engine; print(engine.get_num_threads())"
    assert _run(code, MANTISSA_EMBED_NUM_THREADS="3") == "3"
    default = _run(code)
    assert int(default) >= 1
    # an invalid value is ignored (the default is used)
    assert _run(code, MANTISSA_EMBED_NUM_THREADS="zero") == default
    assert _run(code, MANTISSA_EMBED_NUM_THREADS="0") == default


def test_gemm_kernel_env_var():
    code = "from mantissa_embed import engine; print(engine.gemm_kernel_name())"
    best = _run(code)
    assert best in ("generic", "avx2", "avx512")
    order = ["generic", "avx2", "avx512"]
    for name in order:
        got = _run(code, MANTISSA_EMBED_GEMM_KERNEL=name)
        # a lower kernel is honoured, a higher one is clamped to the best available
        assert got == (name if order.index(name) <= order.index(best) else best)
    assert _run(code, MANTISSA_EMBED_GEMM_KERNEL="bogus") == best
