"""SGEMM throughput: mantissa_embed.engine.sgemm against numpy's matmul (its BLAS), float32.

Usage::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_sgemm.py
    python benchmarks/bench_sgemm.py --sizes 256 512 --threads 1 --kernel avx2
    python benchmarks/bench_sgemm.py --shapes          # the small shapes the layers use

Prints, for each square size and thread count, the best-of-repeats GFLOP/s of both, their
ratio (engine / numpy) and the engine's fraction of peak (``--peak`` GFLOP/s per core).
The default peak, 117.5 GFLOP/s, was measured on the Zen 4 (EPYC Genoa) development
machine with a loop of independent 512-bit FMAs: Zen 4 runs a zmm FMA as two 256-bit
halves on its two FMA pipes, i.e. 32 flops/cycle at ~3.7 GHz (not 64: that would need two
full 512-bit FMA units). numpy's threads are set with threadpoolctl, the engine's with
``engine.set_num_threads``; the two are timed in alternation, best of 7.

On a shared machine, ``--clock cpu`` times single-threaded runs by the calling thread's
CPU time (time.thread_time), which other processes do not inflate; multi-threaded runs
always use wall time.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mantissa_embed import engine

SETTLE = 0.2  # seconds of pause before each timed block


def _best_times(fns, min_time=0.3, repeats=7, clock=time.perf_counter, settle=SETTLE):
    """Best seconds per call of each function; the functions are timed in alternation so
    that both see the same (shared machine) load.

    Each timed block starts after ``settle`` seconds of sleep: after its last call a
    library's idle worker threads keep spinning for a while (OpenBLAS: 2**28 cycles by
    default, ~0.1 s; libgomp: GOMP_SPINCOUNT), and without the pause the side timed second
    would share its cores with the first side's spinning threads."""
    reps = []
    for fn in fns:
        fn()  # warm-up (page faults, thread pool start)
        t = clock()
        fn()
        dt = clock() - t
        reps.append(max(1, int(min_time / repeats / max(dt, 1e-7))))
    best = [float("inf")] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            if settle:
                time.sleep(settle)
            t = clock()
            for _ in range(reps[i]):
                fn()
            best[i] = min(best[i], (clock() - t) / reps[i])
    return best


def _limits(n):
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(limits=n)


def bench(M, N, K, threads, ta=False, tb=False, min_time=0.3, cpu_clock=False):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((K, M) if ta else (M, K)).astype(np.float32)
    B = rng.standard_normal((N, K) if tb else (K, N)).astype(np.float32)
    C = np.empty((M, N), np.float32)
    a = A.T if ta else A
    b = B.T if tb else B
    engine.set_num_threads(threads)
    with _limits(threads):
        clock = time.thread_time if (cpu_clock and threads == 1) else time.perf_counter
        t_me, t_np = _best_times(
            [lambda: engine.sgemm(A, B, C, trans_a=ta, trans_b=tb), lambda: np.matmul(a, b, out=C)],
            min_time,
            clock=clock,
        )
    flops = 2.0 * M * N * K
    return flops / t_me / 1e9, flops / t_np / 1e9


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 768, 1024, 1536, 2048])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--kernel", choices=["avx512", "avx2", "generic"], default=None)
    p.add_argument("--peak", type=float, default=117.5, help="peak GFLOP/s per core")
    p.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="cpu: time 1-thread runs by thread CPU time (shared machines)",
    )
    p.add_argument("--min-time", type=float, default=0.3)
    p.add_argument("--shapes", action="store_true", help="also the small layer shapes")
    args = p.parse_args(argv)
    if args.kernel:
        engine._set_gemm_kernel(args.kernel)
    print(f"engine kernel: {engine.gemm_kernel_name()}  cpu: {engine.cpu_features()}  clock: {args.clock}")
    try:
        from threadpoolctl import threadpool_info

        print(
            "numpy BLAS:",
            ", ".join(
                f"{i['internal_api']} {i.get('version')} {i.get('architecture')}" for i in threadpool_info()
            ),
        )
    except ImportError:  # pragma: no cover
        pass
    hdr = f"{'shape':>22} {'thr':>3} {'engine GF/s':>11} {'numpy GF/s':>10} {'ratio':>6} {'peak%':>6}"
    print(hdr)
    print("-" * len(hdr))
    old = engine.get_num_threads()
    try:
        for t in args.threads:
            for n in args.sizes:
                g_me, g_np = bench(n, n, n, t, min_time=args.min_time, cpu_clock=args.clock == "cpu")
                print(
                    f"{f'{n}x{n}x{n}':>22} {t:>3} {g_me:>11.1f} {g_np:>10.1f} "
                    f"{g_me / g_np:>6.2f} {100 * g_me / (args.peak * t):>5.1f}%",
                    flush=True,
                )
        if args.shapes:
            # (M, N, K, trans_a, trans_b): dense forward/backward, conv im2col products
            shapes = [
                (64, 64, 784, False, True),
                (64, 784, 64, False, False),
                (64, 784, 64, True, False),
                (8, 784, 9, False, False),
                (16, 196, 72, False, False),
                (72, 196, 16, True, False),
                (16, 72, 196, False, True),
                (64, 16, 64, False, True),
                (1000, 1000, 16, False, True),
            ]
            for t in args.threads:
                for M, N, K, ta, tb in shapes:
                    g_me, g_np = bench(
                        M, N, K, t, ta, tb, min_time=args.min_time, cpu_clock=args.clock == "cpu"
                    )
                    name = f"{M}x{N}x{K}{'T' if ta else 'N'}{'T' if tb else 'N'}"
                    print(
                        f"{name:>22} {t:>3} {g_me:>11.1f} {g_np:>10.1f} "
                        f"{g_me / g_np:>6.2f} {100 * g_me / (args.peak * t):>5.1f}%",
                        flush=True,
                    )
    finally:
        engine.set_num_threads(old)


if __name__ == "__main__":
    main()
