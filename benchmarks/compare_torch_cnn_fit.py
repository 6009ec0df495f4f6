"""One ``fit`` epoch of the default recipe, mantissa-embed vs PyTorch + pytorch-metric-learning.

Both sides train ``cnn_embedder()`` (3x3 convs 32/64/128, BatchNorm, ReLU, 2x2 max pooling,
global average pooling, Linear(128 -> 64); 101,152 parameters) on the MNIST test set's digits
0-4 (5,139 images) for one epoch of the default recipe: class-balanced batches of 64 (16 per
class), a random affine per image (rotation +-12 deg, translation +-9%, scale 0.9-1.1, bilinear,
zero fill; torch: ``affine_grid`` + ``grid_sample`` on the batch), ProxyAnchorLoss(margin 0.1,
alpha 32) with the proxies at 100x the lr, AdamW(lr 1e-3, weight decay 1e-4), cosine decay
per step.

Every measurement runs in its own subprocess, alternating torch, mantissa, torch, ... so that a
slow patch of the machine hits both. In each (``_fit_timing``), the setup (imports, model, loss,
optimizer, data tensors) and one warm-up step on a batch of the same shape run before the clock
starts (torch: one ``step``; mantissa: the same ``Embedder`` fitted on one batch, which builds the
layers and their buffers); then ``--epochs`` (3) consecutive epochs of one training run (the
cosine decay spans them all, on both sides) are each timed. Each child reports the epochs' wall
times and the process's peak RSS (``VmHWM`` of ``/proc/self/status``, imports included; not
``ru_maxrss``, which Linux carries over ``fork`` + ``execve`` from the parent, so a child of a
parent that imported torch would report the parent's RSS; the parent never imports torch). The table
gives medians over every timed epoch of every repeat, the ratio of the medians, and the fraction of the machine's float32 FMA peak
(measured by ``benchmarks/fma_peak.py``'s loop of independent FMAs) that the epoch's flops
(counted from the shapes: forward + backward = 3x the forward multiply-adds x 2) reach. Each child
then embeds the images (eval mode, batches of 256; torch: ``model(x)`` + ``normalize`` under
``no_grad``; one untimed pass over a full batch and the last partial one first), timed and
reported the same way.

Check: on each side the median first timed epoch may be at most 25% (``--steady-tol``) slower
than the median of the later ones; otherwise a one-time cost is inside the timed region and the
script exits with status 1.

    python benchmarks/compare_torch_cnn_fit.py --repeats 3 --threads 2
    python benchmarks/compare_torch_cnn_fit.py --repeats 1 --epochs 2     # a quick check
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("MANTISSA_EMBED_DATA", os.path.join(HERE, "..", "..", "shared", "data", "mnist"))
BATCH, M, EMBED = 64, 16, 64
EMBED_BATCH = 256


def forward_macs(h=28, w=28, c_in=1, widths=(32, 64, 128), embed=EMBED):
    """Multiply-adds of one image's forward pass through cnn_embedder (convs + head)."""
    macs, c = 0, c_in
    for i, wd in enumerate(widths):
        macs += h * w * wd * c * 9
        c = wd
        if i < len(widths) - 1:
            h, w = h // 2, w // 2
    return macs + c * embed


def _data():
    sys.path.insert(0, HERE)
    import _torch_reference as R

    X, y = R.load_mnist(DATA)
    keep = y <= 4
    return np.ascontiguousarray(X[keep]), y[keep]


def _batches(y, rng, n_batches):
    classes = np.unique(y)
    idx = {c: np.flatnonzero(y == c) for c in classes}
    out = []
    for _ in range(n_batches):
        chosen = rng.permutation(classes)[: BATCH // M]
        out.append(np.concatenate([rng.choice(idx[c], M, replace=False) for c in chosen]))
    return out


def _embed_warm_rows(n):
    """Rows whose embed runs every batch shape of an n-row embed: one full batch and the tail."""
    return min(n, EMBED_BATCH + n % EMBED_BATCH)


def run_mantissa(threads, epochs):
    """(seconds of each timed epoch, embed seconds)."""
    import _fit_timing as FT
    from mantissa_embed import Embedder, engine, models

    engine.set_num_threads(threads)
    X, y = _data()
    emb = Embedder(models.cnn_embedder(), seed=0)
    # untimed: a fit of this Embedder on one batch (builds the layers, their buffers, the loss's
    # proxies, the first-call plans), then ``epochs`` timed epochs of one fit of the 5,139 images
    fit_s = FT.mantissa_epochs(emb, X, y, epochs, batch_size=BATCH)
    emb.embed(X[: _embed_warm_rows(len(X))], batch_size=EMBED_BATCH)  # warm-up
    t = time.perf_counter()
    emb.embed(X, batch_size=EMBED_BATCH)
    return fit_s, time.perf_counter() - t


def run_torch(threads, epochs):
    """(seconds of each timed epoch, embed seconds)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from pytorch_metric_learning import losses

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    X, y = _data()
    layers, c = [], 1
    for i, w in enumerate((32, 64, 128)):
        layers += [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU()]
        if i < 2:
            layers.append(nn.MaxPool2d(2))
        c = w
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, EMBED))
    loss_fn = losses.ProxyAnchorLoss(5, EMBED, margin=0.1, alpha=32)
    opt = torch.optim.AdamW(
        [{"params": model.parameters(), "lr": 1e-3}, {"params": loss_fn.parameters(), "lr": 0.1}],
        lr=1e-3,
        weight_decay=1e-4,
    )
    rng = np.random.default_rng(0)
    n_batches = -(-len(y) // BATCH)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)

    def step(idx, k, total):
        n = len(idx)
        a = torch.from_numpy(rng.uniform(-12, 12, n) * np.pi / 180)
        s = torch.from_numpy(rng.uniform(0.9, 1.1, n))
        t = torch.from_numpy(rng.uniform(-0.18, 0.18, (n, 2)))
        theta = torch.zeros(n, 2, 3, dtype=torch.float64)
        theta[:, 0, 0], theta[:, 0, 1] = torch.cos(a) / s, -torch.sin(a) / s
        theta[:, 1, 0], theta[:, 1, 1] = torch.sin(a) / s, torch.cos(a) / s
        theta[:, :, 2] = t
        xb = Xt[idx]
        grid = F.affine_grid(theta.float(), xb.shape, align_corners=False)
        xb = F.grid_sample(xb, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        f = 0.5 * (1 + np.cos(np.pi * k / total))
        opt.param_groups[0]["lr"], opt.param_groups[1]["lr"] = 1e-3 * f, 0.1 * f
        opt.zero_grad()
        loss = loss_fn(model(xb), yt[idx])
        loss.backward()
        opt.step()

    model.train()
    for idx in _batches(y, rng, 1):  # warm-up step on a batch of the epoch's shape, not timed
        step(idx, 0, 1)
    fit_s, total = [], epochs * n_batches
    for e in range(epochs):
        t0 = time.perf_counter()
        for k, idx in enumerate(_batches(y, rng, n_batches)):
            step(idx, e * n_batches + k, total)
        fit_s.append(time.perf_counter() - t0)
    model.eval()
    with torch.no_grad():
        for i in range(0, _embed_warm_rows(len(Xt)), EMBED_BATCH):  # warm-up: a full batch and the tail
            model(Xt[i : i + EMBED_BATCH])
        t0 = time.perf_counter()
        for i in range(0, len(Xt), EMBED_BATCH):
            F.normalize(model(Xt[i : i + EMBED_BATCH]), dim=1)
    return fit_s, time.perf_counter() - t0


def child(side, threads, epochs):
    sys.path.insert(0, HERE)
    secs, embed_s = (run_torch if side == "torch" else run_mantissa)(threads, epochs)
    from compare_torch import peak_rss_mb

    rss_mb = peak_rss_mb()
    print(json.dumps({"side": side, "epochs": secs, "embed_seconds": embed_s, "rss_mb": rss_mb}))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--epochs",
        type=int,
        default=3,
        help="timed epochs per child after the untimed warm-up (default 3, at least 2: the "
        "first is checked against the later ones)",
    )
    p.add_argument(
        "--steady-tol",
        type=float,
        default=0.25,
        help="the first timed epoch may be this much slower than the later ones (default 0.25)",
    )
    p.add_argument(
        "--peak-gflops",
        type=float,
        default=None,
        help="the machine's float32 FMA peak (default: measured by benchmarks/fma_peak.py)",
    )
    p.add_argument(
        "--busy-neighbour",
        action="store_true",
        help="keep one core busy with a spinning process (pinned to the last CPU) meanwhile",
    )
    p.add_argument("--child", choices=("torch", "mantissa"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args.child, args.threads, args.epochs)
    if args.epochs < 2:
        p.error("--epochs must be at least 2 (the first timed epoch is checked against the later ones)")
    missing = [m for m in ("torch", "pytorch_metric_learning") if importlib.util.find_spec(m) is None]
    if missing:  # found without importing: the children must not inherit torch's memory
        print(f"skipped: {', '.join(missing)} not installed")
        return 0
    sys.path.insert(0, HERE)
    import _fit_timing as FT
    import _machine
    import fma_peak

    peak = args.peak_gflops if args.peak_gflops is not None else fma_peak.measure(args.threads)
    print(_machine.describe(args.threads, peak))
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    res = {"torch": [], "mantissa": []}
    with _machine.busy_neighbour(args.busy_neighbour):
        if args.busy_neighbour:
            print("busy neighbour: one process spinning on the last CPU meanwhile")
        for r in range(args.repeats):
            for side in ("torch", "mantissa"):
                out = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--child",
                        side,
                        "--threads",
                        str(args.threads),
                        "--epochs",
                        str(args.epochs),
                    ],
                    capture_output=True,
                    text=True,
                    env=env,
                    check=True,
                )
                res[side].append(json.loads(out.stdout.strip().splitlines()[-1]))
                print(
                    f"  repeat {r + 1} {side:>8}: epochs "
                    + " ".join(f"{x:.2f}" for x in res[side][-1]["epochs"])
                    + f" s, peak RSS {res[side][-1]['rss_mb']:.0f} MB",
                    flush=True,
                )
    n = len(_data()[1])
    flops = 6 * forward_macs() * n  # forward + backward (dX and dW): 3x the forward, 2 flops per MAC
    t = {s: statistics.median(x for r in v for x in r["epochs"]) for s, v in res.items()}
    m = {s: statistics.median(r["rss_mb"] for r in v) for s, v in res.items()}
    print(
        f"\none fit epoch of cnn_embedder, {n} images, {args.threads} threads, {args.repeats} alternated repeats "
        f"(median of {args.epochs} timed epochs each, after an untimed setup and warm-up step)"
    )
    print(f"{'':>10} {'epoch s':>9} {'GFLOP/s':>9} {'of peak':>8} {'peak RSS MB':>12}")
    for s in ("torch", "mantissa"):
        g = flops / t[s] / 1e9
        print(f"{s:>10} {t[s]:>9.2f} {g:>9.1f} {100 * g / peak:>7.1f}% {m[s]:>12.0f}")
    print(
        f"speed-up {t['torch'] / t['mantissa']:.2f}x, RSS ratio {m['mantissa'] / m['torch']:.2f} "
        f"(FMA peak {peak:.0f} GFLOP/s on {args.threads} threads)"
    )
    e = {s: statistics.median(r["embed_seconds"] for r in v) for s, v in res.items()}
    eflops = 2 * forward_macs() * n  # the forward's multiply-adds, 2 flops each
    print(f"\nembed of the {n} images (eval mode, batches of {EMBED_BATCH})")
    print(f"{'':>10} {'embed ms':>9} {'GFLOP/s':>9} {'of peak':>8}")
    for s in ("torch", "mantissa"):
        g = eflops / e[s] / 1e9
        print(f"{s:>10} {e[s] * 1e3:>9.1f} {g:>9.1f} {100 * g / peak:>7.1f}%")
    print(f"embed speed-up {e['torch'] / e['mantissa']:.2f}x")
    return FT.finish(
        [
            FT.check_steady(f"fit, {s}", [r["epochs"] for r in res[s]], args.steady_tol)
            for s in ("torch", "mantissa")
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
