"""A fine-tuning training step against a full one: ResNet-18 (``models.resnet18(embed_dim=128,
input_shape=(3, 112, 112))``), batch 32 at 112 px, one step = forward in train mode, a random
loss gradient dY on the embeddings, ``backward(dY, need_dx=False)``, an AdamW step.

"finetune": everything but ``layer4`` and ``head`` frozen (``net.freeze(); net.unfreeze("layer4",
"head")``): the backward stops at ``layer4`` (no layer below it runs) and the optimizer holds
layer4's and the head's parameters only. "full": every parameter trains. The two alternate
within the run (so a drift of the machine hits both), one untimed warm-up step each; the
median wall-clock time of N steps each is printed with their ratio and the CPU. Run it on an
idle machine for numbers worth quoting.

Usage::

    python benchmarks/bench_finetune_step.py            # N = 15
    python benchmarks/bench_finetune_step.py --steps 3  # a quick check that it runs
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _machine import cpu_model  # noqa: E402


def make(frozen: bool, X, dY):
    """``step()`` of one configuration: its own model (same seed, same weights) and optimizer."""
    from mantissa_embed import models, optim

    net = models.resnet18(embed_dim=128, input_shape=X.shape[1:])
    if frozen:
        net.freeze()
        net.unfreeze("layer4", "head")
    net.train()
    opt = optim.AdamW([p for p in net.parameters() if p.requires_grad], lr=1e-4)

    def step():
        opt.zero_grad()
        net.forward(X)
        net.backward(dY, need_dx=False)
        opt.step()

    n_train = sum(p.size for p in net.parameters() if p.requires_grad)
    return step, n_train


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=15, help="timed steps of each configuration (N)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--size", type=int, default=112)
    args = p.parse_args(argv)

    import mantissa_embed

    rng = np.random.default_rng(0)
    X = rng.random((args.batch, 3, args.size, args.size)).astype(np.float32)
    dY = rng.standard_normal((args.batch, 128)).astype(np.float32)
    runs = {}
    for name, frozen in (("full", False), ("finetune", True)):
        step, n_train = make(frozen, X, dY)
        step()  # untimed warm-up (buffers, plans)
        runs[name] = {"step": step, "times": [], "trainable_params": n_train}
    for _ in range(args.steps):  # alternate the two
        for run in runs.values():
            t = time.perf_counter()
            run["step"]()
            run["times"].append(time.perf_counter() - t)
    med = {name: statistics.median(run["times"]) for name, run in runs.items()}
    out = {
        "cpu": cpu_model(),
        "threads": mantissa_embed.get_num_threads() if hasattr(mantissa_embed, "get_num_threads") else None,
        "batch": args.batch,
        "size": args.size,
        "steps": args.steps,
        "full ms (median)": round(med["full"] * 1e3, 2),
        "finetune ms (median)": round(med["finetune"] * 1e3, 2),
        "finetune / full": round(med["finetune"] / med["full"], 3),
        "trainable params": {name: run["trainable_params"] for name, run in runs.items()},
        "version": mantissa_embed.__version__,
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
