"""The machine's float32 FMA peak, measured: a loop of independent fused multiply-adds.

Compiles a small C kernel with the system C compiler (``cc``, ``-O2 -march=native -fopenmp``)
into a temporary directory and runs it on ``threads`` OpenMP threads: each thread keeps 12
independent vector accumulators (enough to hide the FMA latency on current x86 cores) and
runs ``iters`` rounds. Returns GFLOP/s (2 flops per FMA lane).

    python benchmarks/fma_peak.py --threads 2
"""

from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import tempfile

SOURCE = r"""
#include <omp.h>
volatile float fma_peak_sink;
double fma_peak(long iters, int threads) {
    double best = 0.0;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = omp_get_wtime();
        float sink = 0.0f;
        #pragma omp parallel num_threads(threads) reduction(+:sink)
        {
            typedef float v8 __attribute__((vector_size(32)));
            v8 b = {0.9999f, 0.9999f, 0.9999f, 0.9999f, 0.9999f, 0.9999f, 0.9999f, 0.9999f};
            v8 c = {1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f};
            v8 a0 = c, a1 = c * 2, a2 = c * 3, a3 = c * 4, a4 = c * 5, a5 = c * 6;
            v8 a6 = c * 7, a7 = c * 8, a8 = c * 9, a9 = c * 10, a10 = c * 11, a11 = c * 12;
            for (long i = 0; i < iters; i++) {
                a0 = a0 * b + c; a1 = a1 * b + c; a2 = a2 * b + c; a3 = a3 * b + c;
                a4 = a4 * b + c; a5 = a5 * b + c; a6 = a6 * b + c; a7 = a7 * b + c;
                a8 = a8 * b + c; a9 = a9 * b + c; a10 = a10 * b + c; a11 = a11 * b + c;
            }
            v8 s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
            for (int l = 0; l < 8; l++) sink += s[l];
        }
        double dt = omp_get_wtime() - t0;
        fma_peak_sink = sink;
        double g = 2.0 * 8 * 12 * (double)iters * threads / dt / 1e9;
        if (g > best) best = g;
    }
    return best;
}
"""


def measure(threads=1, iters=20_000_000):
    """float32 FMA peak in GFLOP/s on ``threads`` threads (256-bit vectors; a CPU whose FMA
    units are 512-bit wide reaches twice this only with AVX-512 code, which the engine's
    AVX-512 kernels use)."""
    with tempfile.TemporaryDirectory() as d:
        src, lib = os.path.join(d, "peak.c"), os.path.join(d, "peak.so")
        with open(src, "w") as f:
            f.write(SOURCE)
        subprocess.run(
            ["cc", "-O2", "-march=native", "-mfma", "-fopenmp", "-shared", "-fPIC", src, "-o", lib],
            check=True,
        )
        fn = ctypes.CDLL(lib).fma_peak
        fn.restype = ctypes.c_double
        fn.argtypes = [ctypes.c_long, ctypes.c_int]
        return fn(iters, threads)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    print(f"float32 FMA peak: {measure(a.threads):.1f} GFLOP/s on {a.threads} thread(s)")
