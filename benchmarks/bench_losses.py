"""Forward + backward time of the two pair losses: mantissa-embed vs pytorch-metric-learning.

For each batch size N (default 64 and 1024; D=128, 16 classes, seeded normal embeddings) it
times one loss call that returns the loss and dL/d embeddings:

- mantissa-embed: ``TripletMarginLoss()(x, y)`` (all triplets, fused engine kernel) and
  ``ContrastiveLoss()(x, y)`` (all pairs), which include the normalization, the distance matrix,
  the reduction and the backward;
- PML: the same losses on ``torch.tensor(x, requires_grad=True)``, then ``loss.backward()``
  (PML enumerates the triplets: at N=1024 it materializes an N^3 mask and ~63M index triplets).

Repeats alternate between the libraries so that a slow patch of the machine hits both; the table
prints the median and minimum (ms) and the ratio of the medians. Threads: ``--threads`` for both
(``torch.set_num_threads`` and ``engine.set_num_threads``).

Usage::

    python benchmarks/bench_losses.py                     # N = 64 and 1024, 2 threads
    python benchmarks/bench_losses.py --n 64 256 --repeats 9 --threads 1

Runs the mantissa side alone when torch or pytorch-metric-learning is not installed.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _timeit(fn, repeats):
    fn()  # warm-up (allocations, OpenMP pool)
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e3)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[64, 1024])
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--classes", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)

    from mantissa_embed import engine
    from mantissa_embed.losses import ContrastiveLoss, TripletMarginLoss

    engine.set_num_threads(args.threads)
    try:
        import torch
        from pytorch_metric_learning import losses as pml

        torch.set_num_threads(args.threads)
    except ImportError:
        torch = pml = None
        print("torch / pytorch-metric-learning not installed: mantissa side only")

    print(
        f"threads={args.threads} D={args.d} classes={args.classes} repeats={args.repeats} "
        f"gemm={engine.gemm_kernel_name()}"
    )
    print(
        f"{'loss':<20}{'N':>6}{'mantissa med':>14}{'min':>11}{'PML med':>12}{'min':>11}{'PML/mantissa':>14}"
    )
    rng = np.random.default_rng(0)
    for n in args.n:
        x = rng.standard_normal((n, args.d)).astype(np.float32)
        y = rng.integers(0, args.classes, n)
        for name, ours, theirs in (
            ("TripletMarginLoss", TripletMarginLoss(), None if pml is None else pml.TripletMarginLoss()),
            ("ContrastiveLoss", ContrastiveLoss(), None if pml is None else pml.ContrastiveLoss()),
        ):

            def run_ours():
                return ours(x, y).grad

            def run_theirs():
                xt = torch.tensor(x, requires_grad=True)
                loss = theirs(xt, torch.tensor(y))
                loss.backward()
                return xt.grad

            if theirs is not None:  # same value and gradient before timing anything
                o, g = ours(x, y), run_theirs().numpy()
                assert np.allclose(o.grad, g, rtol=1e-3, atol=1e-3 * np.abs(g).max()), name
            t_ours, t_theirs = [], []
            for _ in range(args.repeats):  # alternate
                t_ours += _timeit(run_ours, 1)
                if theirs is not None:
                    t_theirs += _timeit(run_theirs, 1)
            mo = statistics.median(t_ours)
            row = f"{name:<20}{n:>6}{mo:>14.3f}{min(t_ours):>11.3f}"
            if t_theirs:
                mt = statistics.median(t_theirs)
                row += f"{mt:>12.3f}{min(t_theirs):>11.3f}{mt / mo:>13.1f}x"
            print(row, flush=True)


if __name__ == "__main__":
    main()
