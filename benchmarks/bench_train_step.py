"""One training step of small_cnn_embedder(16) on a batch of 64 (forward in train mode, then
``backward(dY, need_dx=False)``), and the forward alone, timed by **thread CPU time** on one
thread: insensitive to other processes on the machine, so it can compare engine versions
(install each in its own virtual environment and run this script in both, alternately).

Usage::

    python benchmarks/bench_train_step.py            # best of 7 x 50 steps, prints JSON (ms)
    python benchmarks/bench_train_step.py --steps 100 --repeats 9
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args(argv)

    import mantissa_embed
    from mantissa_embed import models

    mantissa_embed.set_num_threads(1)  # thread CPU time measures the whole work only on 1 thread
    rng = np.random.default_rng(0)
    X = rng.random((args.batch, 1, 28, 28)).astype(np.float32)
    net = models.small_cnn_embedder(16)
    net.train()
    dY = rng.standard_normal(net.forward(X).shape).astype(np.float32)

    def step():
        net.forward(X)
        net.backward(dY, need_dx=False)

    def forward():
        net.forward(X)

    out = {}
    for name, fn in (("forward+backward", step), ("forward", forward)):
        fn()
        best = float("inf")
        for _ in range(args.repeats):
            t = time.thread_time()
            for _ in range(args.steps):
                fn()
            best = min(best, (time.thread_time() - t) / args.steps)
        out[name + " ms"] = round(best * 1e3, 4)
    out["backward ms"] = round(out["forward+backward ms"] - out["forward ms"], 4)
    out["version"] = mantissa_embed.__version__
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
