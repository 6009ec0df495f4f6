"""The convolutions of ``cnn_embedder`` (batch 64, 3x3, pad 1) on every SGEMM kernel path of this CPU.

For each layer (1 -> 32 on 28x28, 32 -> 64 on 14x14, 64 -> 128 on 7x7) and each kernel the CPU
runs (``generic``: im2col + the portable SGEMM; ``avx2``: the AVX2 direct kernels and dot-product
weight gradients; ``avx512``: the AVX-512 ones), the forward, the weight gradient alone and the
input gradient (full backward minus the weight gradient) are timed: the minimum over
``--rounds`` rounds in which the kernels alternate, so that a slow patch of the machine hits
every path. GFLOP/s from the shapes (2 flops per multiply-add), and the fraction of the FMA peak
that ``benchmarks/fma_peak.py`` measures on the same thread count.

    python benchmarks/bench_conv_paths.py --threads 2 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from mantissa_embed import engine

HERE = os.path.dirname(os.path.abspath(__file__))
LAYERS = ((1, 28, 32), (32, 14, 64), (64, 7, 128))  # (C, H = W, F)
N = 64


def _cases(rng):
    out = []
    for C, H, F in LAYERS:
        x = rng.standard_normal((N, C, H, H), dtype=np.float32)
        w = (rng.standard_normal((F, C, 3, 3)) / np.sqrt(9 * C)).astype(np.float32)
        y = np.empty((N, F, H, H), np.float32)
        dy = rng.standard_normal(y.shape, dtype=np.float32)
        dx, dw = np.empty_like(x), np.empty_like(w)
        ws = np.empty(engine.conv2d_workspace_size(x.shape, w.shape, 1, 1), np.float32)
        ops = {
            "forward": lambda x=x, w=w, y=y, ws=ws: engine.conv2d_forward(
                x, w, None, 1, 1, out=y, workspace=ws
            ),
            "dw": lambda x=x, w=w, dy=dy, dw=dw, ws=ws: engine.conv2d_backward(
                x, w, dy, 1, 1, dw=dw, need_dx=False, need_db=False, workspace=ws
            ),
            "backward": lambda x=x, w=w, dy=dy, dx=dx, dw=dw, ws=ws: engine.conv2d_backward(
                x, w, dy, 1, 1, dx=dx, dw=dw, need_db=False, workspace=ws
            ),
        }
        out.append(((C, H, F), N * H * H * F * C * 9, ops))
    return out


def _time(f, n=10):
    f()
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t0) / n


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    engine.set_num_threads(args.threads)
    feats = engine.cpu_features()
    kernels = (
        ["generic"]
        + (["avx2"] if feats["avx2"] and feats["fma"] else [])
        + (["avx512"] if feats["avx512f"] and feats["fma"] else [])
    )
    cases = _cases(np.random.default_rng(0))
    best = {}
    previous = engine.gemm_kernel_name()
    try:
        for _ in range(args.rounds):
            for k in kernels:
                engine._set_gemm_kernel(k)
                for shape, macs, ops in cases:
                    for name, f in ops.items():
                        t = _time(f)
                        best[k, shape, name] = min(best.get((k, shape, name), np.inf), t)
    finally:
        engine._set_gemm_kernel(previous)
    sys.path.insert(0, HERE)
    import fma_peak

    peak = fma_peak.measure(args.threads)
    print(
        f"conv2d 3x3 pad 1, batch {N}, {args.threads} threads, min of {args.rounds} alternated rounds; "
        f"CPU {feats}; FMA peak {peak:.0f} GFLOP/s"
    )
    print(
        f"{'layer':>16} {'kernel':>8} {'forward ms':>11} {'dw ms':>8} {'dx ms':>8} {'fwd GF/s':>9} "
        f"{'dw GF/s':>8} {'dx GF/s':>8} {'fwd % peak':>10}"
    )
    for shape, macs, _ in cases:
        for k in kernels:
            f, dw, b = (best[k, shape, n] for n in ("forward", "dw", "backward"))
            dx = max(b - dw, 1e-9)
            g = [2 * macs / t / 1e9 for t in (f, dw, dx)]
            name = f"{shape[0]}x{shape[1]}x{shape[1]}->{shape[2]}"
            print(
                f"{name:>16} {k:>8} {f * 1e3:>11.2f} "
                f"{dw * 1e3:>8.2f} {dx * 1e3:>8.2f} {g[0]:>9.0f} {g[1]:>8.0f} {g[2]:>8.0f} {100 * g[0] / peak:>9.0f}%"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
