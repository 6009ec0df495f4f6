"""Side-by-side speed of ``fit`` and ``embed``: mantissa-embed vs PyTorch + pytorch-metric-learning.

Both sides train the same network, ``small_cnn_embedder(embed_dim=16)`` (52,528 parameters),
with the triplet recipe (batch 64, lr 0.05) on the same 6,000 MNIST images, then embed those
6,000 images.  The repeats alternate between the two libraries (torch fit, mantissa fit, torch
embed, mantissa embed, ...) so that a slow patch of the machine hits both; the table prints the
median and the minimum of every measurement and the ratio of the medians.

Every fit (``_fit_timing``): the setup (imports, model, loss, miner, optimizer, data tensors)
and one warm-up step on the epoch's batch shapes run before the clock starts (torch:
``_torch_reference.Trainer``; mantissa: the same ``Embedder`` fitted on one batch first), then
``--epochs`` (3) consecutive epochs are each timed on their own (mantissa: through ``fit``'s
``callback``). The fit row is the median over every timed epoch of every repeat. The script
exits with status 1 when, on either side, the median first timed epoch is more than 25%
(``--steady-tol``) slower than the median of the later ones: a one-time cost inside the timed
region. Each embed runs untimed once on its batch shapes (a full batch and the last partial one)
before it is timed. Every fit and embed starts after ``--settle`` seconds of sleep (0.2): after
its last call a library's idle worker threads keep spinning for a while, and the side timed next
would otherwise share the cores with them in its first epoch.

Data: the first 6,000 images of the MNIST *test* set taken stratified by class (every class
keeps its share of the 10,000, first-in-file; see ``_torch_reference.stratified_first``),
read from ``--data-dir`` (default ``$MANTISSA_EMBED_DATA`` or ``/work/shared/data/mnist``).

Recipe (PyTorch side) mirrors ``Embedder(loss="triplet")``: the margin, miner and momentum
are read from a freshly constructed Embedder (``FALLBACK`` below when mantissa_embed is not
importable), batches are class-balanced (m per class, the Embedder's rule for m), and PML's
``TripletMarginLoss(margin)`` runs on ``TripletMarginMiner(margin, type_of_triplets)``
triplets of each batch with ``torch.optim.SGD(lr, momentum)``.  ``--margin``, ``--miner``,
``--momentum``, ``--sampler``, ``--m`` override it.

Usage::

    python benchmarks/compare_torch_fit.py                  # 5 alternating repeats, 2 threads
    python benchmarks/compare_torch_fit.py --repeats 9 --threads 1
    python benchmarks/compare_torch_fit.py --torch-only     # when mantissa_embed is not built
    python benchmarks/compare_torch_fit.py --repeats 1 --epochs 2 --n 2000   # a quick check

Exits with status 0 and a message when torch or pytorch-metric-learning is not installed, 1 when
the steady-state check fails.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _fit_timing as FT  # noqa: E402
import _torch_reference as R  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default=None, help="folder with the MNIST IDX files")
    p.add_argument("--n", type=int, default=6000, help="number of training images (default 6000)")
    p.add_argument("--repeats", type=int, default=5, help="alternating repeats (default 5)")
    p.add_argument("--threads", type=int, default=2, help="threads for both libraries (default 2)")
    p.add_argument(
        "--epochs",
        type=int,
        default=3,
        help="timed epochs per fit after the untimed warm-up (default 3, at least 2: the "
        "first is checked against the later ones)",
    )
    p.add_argument(
        "--steady-tol",
        type=float,
        default=FT.STEADY_TOL,
        help="the first timed epoch may be this much slower than the later ones (default 0.25)",
    )
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument(
        "--embed-batch-size",
        type=int,
        default=256,
        help="batch size of the embed pass, both sides (default 256)",
    )
    p.add_argument(
        "--margin", type=float, default=None, help="PyTorch triplet margin (default: the Embedder's)"
    )
    p.add_argument(
        "--miner",
        default=None,
        help="PyTorch miner: semihard|hard|all|easy|batchhard|none (default: the Embedder's)",
    )
    p.add_argument(
        "--momentum", type=float, default=None, help="PyTorch SGD momentum (default: the Embedder's)"
    )
    p.add_argument(
        "--sampler",
        default=None,
        choices=("random", "mperclass"),
        help="PyTorch batches (default: mperclass, as the Embedder)",
    )
    p.add_argument(
        "--m", type=int, default=None, help="samples per class for mperclass (default: the Embedder's rule)"
    )
    p.add_argument(
        "--settle",
        type=float,
        default=0.2,
        help="seconds of sleep before each fit and embed (default 0.2), so that the other "
        "library's idle worker threads have stopped spinning",
    )
    p.add_argument("--torch-only", action="store_true", help="skip the mantissa_embed side")
    p.add_argument("--mantissa-only", action="store_true", help="skip the PyTorch side")
    args = p.parse_args(argv)
    if args.epochs < 2:
        p.error("--epochs must be at least 2 (the first timed epoch is checked against the later ones)")
    return args


def _embed_warm_rows(n, batch_size):
    """Rows whose embed runs every batch shape of an n-row embed: one full batch and the tail."""
    return min(n, batch_size + n % batch_size)


# ----------------------------------------------------------------------------- torch side
class TorchSide:
    name = "pytorch+pml"

    def __init__(self, args, X, y, recipe):
        import torch

        self.torch = torch
        torch.set_num_threads(args.threads)
        self.args, self.X, self.y = args, X, y
        self.recipe = recipe
        self.model = None
        self.last_loss = float("nan")

    def fit(self, seed):
        """Seconds of each timed epoch (setup and warm-up step untimed)."""
        self.torch.manual_seed(seed)
        model = R.small_cnn_embedder(16)
        trainer = R.Trainer(model, self.X, self.y, self.recipe, seed=seed)
        trainer.warm_up()
        times, self.last_loss = FT.torch_epochs(trainer, self.args.epochs)
        self.model = model
        return times

    def embed(self):
        R.embed(
            self.model,
            self.X[: _embed_warm_rows(len(self.X), self.args.embed_batch_size)],
            batch_size=self.args.embed_batch_size,
        )  # warm-up, untimed
        t0 = time.perf_counter()
        Z = R.embed(self.model, self.X, batch_size=self.args.embed_batch_size)
        dt = time.perf_counter() - t0
        assert Z.shape == (len(self.X), 16)
        return dt

    def describe(self):
        return (
            f"torch {self.torch.__version__}, threads={self.torch.get_num_threads()}, "
            f"recipe: {self.recipe.label()}"
        )


# -------------------------------------------------------------------------- mantissa side
class MantissaSide:
    name = "mantissa_embed"

    def __init__(self, args, X, y):
        import mantissa_embed
        from mantissa_embed import Embedder, engine, models

        engine.set_num_threads(args.threads)
        self.mantissa_embed, self.Embedder, self.models = mantissa_embed, Embedder, models
        self.engine = engine
        self.args, self.X, self.y = args, X, y
        self.emb = None
        self.last_loss = float("nan")

    def make_embedder(self, seed):
        # SGD, constant lr, no augmentation: the work the torch side does
        return self.Embedder(
            self.models.small_cnn_embedder(embed_dim=16), loss="triplet", seed=seed, optimizer="sgd"
        )

    def fit(self, seed):
        """Seconds of each timed epoch (Embedder construction and a one-batch warm-up fit untimed)."""
        emb = self.make_embedder(seed)
        times = FT.mantissa_epochs(
            emb,
            self.X,
            self.y,
            self.args.epochs,
            batch_size=self.args.batch_size,
            lr=self.args.lr,
            augment=None,
            schedule=None,
        )
        self.emb = emb
        hist = getattr(emb, "history_", {}).get("loss", [float("nan")])
        self.last_loss = float(hist[-1]) if len(hist) else float("nan")
        return times

    def embed(self):
        self.emb.embed(
            self.X[: _embed_warm_rows(len(self.X), self.args.embed_batch_size)],
            batch_size=self.args.embed_batch_size,
        )  # warm-up, untimed
        t0 = time.perf_counter()
        Z = self.emb.embed(self.X, batch_size=self.args.embed_batch_size)
        dt = time.perf_counter() - t0
        assert Z.shape == (len(self.X), 16)
        return dt

    def describe(self):
        ver = getattr(self.mantissa_embed, "__version__", "?")
        threads = getattr(self.engine, "get_num_threads", lambda: "?")()
        return f"mantissa_embed {ver}, threads={threads}"


# ------------------------------------------------------------------------------- recipe
#: what ``Embedder(loss="triplet")`` documents (embedder.DEFAULTS), used when mantissa_embed
#: cannot be imported (--torch-only on a machine without the library)
FALLBACK = {"margin": 0.1, "miner": None, "momentum": 0.0}


def torch_recipe(args, mantissa_side, n_classes):
    """The PyTorch recipe that mirrors ``Embedder(loss="triplet")``: read from a constructed
    Embedder when mantissa_embed is importable, else FALLBACK; CLI flags override."""
    if mantissa_side is not None:
        e = mantissa_side.make_embedder(seed=0)
        miner = e.miner_func
        if miner is None:
            miner_name = None
        elif hasattr(miner, "type_of_triplets"):
            miner_name = miner.type_of_triplets
        elif type(miner).__name__ == "BatchHardMiner":
            miner_name = "batchhard"
        else:
            raise SystemExit(f"cannot mirror the Embedder's miner {type(miner).__name__} in PyTorch")
        miner_margin = getattr(miner, "margin", None)
        base = {
            "margin": float(e.margin),
            "miner": miner_name,
            "momentum": float(e.momentum),
            "m": e.m_per_class,
            "miner_margin": miner_margin,
        }
    else:
        base = dict(FALLBACK, m=None, miner_margin=None)
    miner = base["miner"] if args.miner is None else (None if args.miner == "none" else args.miner)
    sampler = args.sampler or "mperclass"
    m = args.m or base["m"]
    if sampler == "mperclass" and m is None:
        m = R.default_m(args.batch_size, n_classes)
    margin = base["margin"] if args.margin is None else args.margin
    miner_margin = base["miner_margin"] if args.margin is None else None
    if miner_margin is not None and abs(miner_margin - margin) < 1e-12:
        miner_margin = None
    return R.Recipe(
        loss="triplet",
        margin=margin,
        miner=miner,
        miner_margin=miner_margin,
        sampler=sampler,
        m=m if sampler == "mperclass" else None,
        momentum=base["momentum"] if args.momentum is None else args.momentum,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
    )


# ---------------------------------------------------------------------------------- main
def _load():
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def main(argv=None):
    args = parse_args(argv)
    try:
        import pytorch_metric_learning  # noqa: F401
        import torch  # noqa: F401

        have_torch = True
    except ImportError as exc:
        have_torch = False
        torch_missing = str(exc)
    if not have_torch and not args.mantissa_only:
        print(
            f"SKIPPED: PyTorch / pytorch-metric-learning not installed ({torch_missing}); "
            "pip install torch pytorch-metric-learning to run this comparison."
        )
        return 0

    try:
        Xall, yall = R.load_mnist(args.data_dir, "test")
    except FileNotFoundError as exc:
        print(f"SKIPPED: {exc}")
        return 0
    X, y = R.stratified_first(Xall, yall, args.n)

    mantissa = None
    if not args.torch_only:
        try:
            mantissa = MantissaSide(args, X, y)
        except ImportError as exc:
            print(f"mantissa_embed side unavailable ({exc}); running the PyTorch side only.")
    sides = []
    if not args.mantissa_only:
        sides.append(TorchSide(args, X, y, torch_recipe(args, mantissa, len(np.unique(y)))))
    if mantissa is not None:
        sides.append(mantissa)

    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, "
        f"python {platform.python_version()}, numpy {np.__version__}"
    )
    if mantissa is not None:
        from _machine import describe

        print(describe(args.threads))
    else:
        from _machine import cpu_model

        print(f"CPU: {cpu_model()}")
    load_before = _load()
    print(f"data: {len(X)} MNIST test images (stratified first-in-file), classes {np.bincount(y).tolist()}")
    print(
        f"fit: {args.epochs} timed epochs per fit after an untimed setup + warm-up step, "
        f"batch_size={args.batch_size}, lr={args.lr}; "
        f"embed: {len(X)} images, batch {args.embed_batch_size}"
    )
    for s in sides:
        print(f"  {s.name}: {s.describe()}")

    # no warm-up round: every fit sets up and warms up untimed, every embed runs once untimed first
    times = {s.name: {"fit": [], "embed": []} for s in sides}
    epochs = {s.name: [] for s in sides}  # per repeat, the timed epochs of that fit
    losses = {s.name: [] for s in sides}
    for r in range(args.repeats):
        for s in sides:
            time.sleep(args.settle)
            epochs[s.name].append(s.fit(seed=r))
            times[s.name]["fit"].extend(epochs[s.name][-1])
            losses[s.name].append(s.last_loss)
        for s in sides:
            time.sleep(args.settle)
            times[s.name]["embed"].append(s.embed())
        line = "  ".join(
            f"{s.name} fit epochs "
            + " ".join(f"{x:.3f}" for x in epochs[s.name][-1])
            + f" s, embed {times[s.name]['embed'][-1]:.3f} s"
            for s in sides
        )
        print(f"repeat {r + 1}/{args.repeats}: {line}", flush=True)

    names = [s.name for s in sides]
    cols = ["op"]
    for n in names:
        cols += [f"{n} median", f"{n} min"]
    if len(names) == 2:
        cols.append("ratio (torch/mantissa)")
    rows = []
    for op, label in (("fit", f"fit 1 epoch x {len(X)}"), ("embed", f"embed {len(X)}")):
        row = [label]
        med = {}
        for n in names:
            med[n] = statistics.median(times[n][op])
            row += [f"{med[n]:.3f} s", f"{min(times[n][op]):.3f} s"]
        if len(names) == 2:
            row.append(f"{med[names[0]] / med[names[1]]:.2f}x")
        rows.append(row)
    widths = [max(len(r[i]) for r in [cols] + rows) for i in range(len(cols))]
    print()
    print(" | ".join(c.ljust(w) for c, w in zip(cols, widths)))
    print("-|-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))
    for n in names:
        fit_med = statistics.median(times[n]["fit"])
        print(
            f"{n}: {len(X) / fit_med:,.0f} training images/s, "
            f"{len(X) / statistics.median(times[n]['embed']):,.0f} embedded images/s, "
            f"last-epoch mean loss {np.nanmean(losses[n]):.4f}"
        )
    if len(names) == 2:
        print("ratio > 1: mantissa_embed is faster.")
    load_after = _load()
    if load_before is not None:
        print(f"load average (1 min) before / after: {load_before:.2f} / {load_after:.2f}")
        if max(load_before, load_after) > (os.cpu_count() or 1) + 0.5:
            print(
                "WARNING: the machine was busy with other work; OpenMP timings are unreliable "
                "when the cores are oversubscribed. Re-run on an idle machine."
            )
    print(f"fit row: median of {args.epochs} timed epochs x {args.repeats} repeat(s) per side")
    return FT.finish([FT.check_steady(f"fit, {n}", epochs[n], args.steady_tol) for n in names])


if __name__ == "__main__":
    sys.exit(main())
