"""The convolutions of a ResNet one by one: eval forward (and with ``--train`` the backward) of
every distinct convolution shape of ``models.resnet18`` / ``resnet50``, with GFLOP/s and the
percentage of the measured FMA peak, per shape and in aggregate for the 3x3 and 1x1 layers.

FLOPs are those of the direct convolution counted from the shapes (2 x F x C x KH x KW x HO x WO
per image), so a Winograd layer is credited with the products it avoids. Each shape runs
``engine.conv2d_forward`` with a ReLU (the act the fused eval path applies) on random inputs,
its workspace and output allocated before the clock; the time is the minimum of ``--repeats``
calls after one warm-up call. The backward (``--train``) is ``engine.conv2d_backward`` with dx
(but for the 3-channel stem) and dw. A shape that occurs k times counts k times in the
aggregate.

Usage::

    python benchmarks/bench_conv_layers.py                                  # ResNet-50, 224 px, batch 16
    python benchmarks/bench_conv_layers.py --model resnet18 --size 112 --batch 32 --train

Run on an idle machine.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def conv_shapes(net):
    """``{(input (C, H, W), weight shape, stride, pad): count}`` of every Conv2D of a built net."""
    from compare_torch_backbones import leaf_layers
    from mantissa_embed.layers import Conv2D

    return collections.Counter(
        (shape, layer.weight.shape, layer.stride, layer.pad)
        for layer, shape in leaf_layers(net)
        if isinstance(layer, Conv2D)
    )


def best_ms(fn, repeats):
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet50", choices=("resnet18", "resnet34", "resnet50"))
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--train", action="store_true", help="also time the backward (dx and dw)")
    p.add_argument("--no-peak", action="store_true", help="do not measure the FMA peak")
    args = p.parse_args()

    import mantissa_embed as me
    from _machine import cpu_model
    from mantissa_embed import engine, models

    me.set_num_threads(args.threads)
    peak = None
    if not args.no_peak:
        import fma_peak

        peak = fma_peak.measure(args.threads)
    net = getattr(models, args.model)(128, input_shape=(3, args.size, args.size), seed=0)
    net.build((3, args.size, args.size))
    print(
        f"# bench_conv_layers: {args.model}, {args.size} px, batch {args.batch}, {args.threads} threads; "
        f"CPU {cpu_model()}; SGEMM kernel {engine.gemm_kernel_name()}; FMA peak "
        f"{'not measured' if peak is None else f'{peak:.0f} GFLOP/s'}"
    )
    rng = np.random.default_rng(0)
    agg = collections.defaultdict(lambda: [0.0, 0.0])  # kind -> [flops, seconds]
    n = args.batch
    for (xs, ws, stride, pad), count in conv_shapes(net).items():
        x = rng.standard_normal((n,) + xs).astype(np.float32)
        w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32)
        ho, wo = (xs[1] + 2 * pad - ws[2]) // stride + 1, (xs[2] + 2 * pad - ws[3]) // stride + 1
        y = np.empty((n, ws[0], ho, wo), np.float32)
        work = np.empty(engine.conv2d_workspace_size(x.shape, ws, stride, pad), np.float32)
        flops = 2.0 * n * ws[0] * ws[1] * ws[2] * ws[3] * ho * wo
        fwd = best_ms(
            lambda: engine.conv2d_forward(x, w, None, stride, pad, out=y, workspace=work, act="relu"),
            args.repeats,
        )
        kind = "stem" if xs[0] == 3 else f"{ws[2]}x{ws[3]}"
        agg[kind][0] += flops * count
        agg[kind][1] += fwd * count / 1e3
        line = (
            f"x{count:<2d} {str(xs):>16} -> {ws[0]:4d} {ws[2]}x{ws[3]}/{stride}: fwd {fwd:7.2f} ms "
            f"{flops / fwd / 1e6:6.1f} GFLOP/s"
        )
        if peak:
            line += f" {100 * flops / fwd / 1e6 / peak:4.0f}%"
        if args.train:
            dy = rng.standard_normal(y.shape).astype(np.float32)
            dx = None if xs[0] == 3 else np.empty_like(x)
            dw = np.empty(ws, np.float32)
            bwd = best_ms(
                lambda: engine.conv2d_backward(
                    x, w, dy, stride, pad, dx=dx, dw=dw, need_dx=dx is not None, need_db=False, workspace=work
                ),
                args.repeats,
            )
            bflops = flops * (1 if dx is None else 2)
            agg[kind + " bwd"][0] += bflops * count
            agg[kind + " bwd"][1] += bwd * count / 1e3
            line += f" | bwd {bwd:7.2f} ms {bflops / bwd / 1e6:6.1f} GFLOP/s"
        print(line)
    for kinds, label in (
        (("3x3", "1x1"), "3x3 and 1x1 forward"),
        (("3x3 bwd", "1x1 bwd"), "3x3 and 1x1 backward"),
    ):
        flops = sum(agg[k][0] for k in kinds if k in agg)
        secs = sum(agg[k][1] for k in kinds if k in agg)
        if secs:
            pct = f", {100 * flops / secs / 1e9 / peak:.0f}% of the FMA peak" if peak else ""
            print(f"{label}: {secs * 1e3:.1f} ms, {flops / secs / 1e9:.1f} GFLOP/s{pct}")


if __name__ == "__main__":
    main()
