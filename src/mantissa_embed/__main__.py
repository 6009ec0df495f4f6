"""Command line: ``python -m mantissa_embed demo [options]`` (the main job).

The demo trains ``models.small_cnn_embedder`` by metric learning on the digit classes 0-4,
embeds the classes 5-9 it never saw, and reports retrieval quality on them (precision@1,
R-precision, MAP@R; each image queries all the others, itself excluded), next to the same
metrics computed on raw pixels and on the untrained network. It writes two pictures into
``--out``: ``embedding_manifold.png`` (2-D PCA of the unseen-class embeddings, coloured by
digit) and ``retrieval_gallery.png`` (five queries, each with its five nearest neighbours;
green frame = same digit, red = different).

Datasets
--------
``digits`` (default): scikit-learn's bundled 8x8 digits (1,797 images, no download),
upsampled bilinearly to 24x24 and zero-padded to 28x28, so that the network is exactly the
MNIST one (52,528 parameters for ``--embed-dim 16``) and a digit sits in its frame as in MNIST
(20x20 digit in a 28x28 image). Runs in seconds.

``mnist``: the standard IDX files from ``--data-dir`` or ``$MANTISSA_EMBED_DATA`` (fetch them
with ``python -m mantissa_embed.datasets download mnist``). ``--split test`` (default) uses the
10,000-image test set, i.e. the protocol of the project's reference figures: train on its
digits 0-4, evaluate on its digits 5-9.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from . import datasets, engine, models, viz
from .embedder import Embedder
from .evaluation import retrieval_metrics

TRAIN_CLASSES = (0, 1, 2, 3, 4)


def _positive_int(s):
    v = int(s)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def _thread_count(s):
    v = _positive_int(s)
    if v > 4096:  # engine.set_num_threads's limit
        raise argparse.ArgumentTypeError(f"must be <= 4096, got {v}")
    return v


def _nonneg_int(s):
    v = int(s)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {v}")
    return v


def _positive_float(s):
    v = float(s)
    if not (v > 0 and np.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {s}")
    return v


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m mantissa_embed",
        description="mantissa-embed: CPU-native metric learning (C engine, no PyTorch).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    demo = sub.add_parser(
        "demo", help="train on digits 0-4, evaluate retrieval on the unseen digits 5-9, write two plots",
        description=("Train small_cnn_embedder by metric learning on the digit classes 0-4, embed the unseen "
                     "classes 5-9, print per-epoch loss and unseen-class precision@1 / R-precision / MAP@R "
                     "(self excluded) next to raw pixels, and write embedding_manifold.png and "
                     "retrieval_gallery.png."))
    demo.add_argument("--dataset", choices=("digits", "mnist"), default="digits",
                      help="digits: scikit-learn's bundled 8x8 digits upsampled to 28x28 (no download; default); "
                           "mnist: IDX files from --data-dir or $MANTISSA_EMBED_DATA")
    demo.add_argument("--data-dir", default=None,
                      help="MNIST directory (holding the IDX files or a mnist/ folder); default $MANTISSA_EMBED_DATA")
    demo.add_argument("--split", choices=("test", "train"), default="test",
                      help="MNIST split to use (default: test, the 10,000-image set)")
    demo.add_argument("--out", default="demo_out", help="output directory for the two PNGs (default: demo_out/)")
    demo.add_argument("--epochs", type=_positive_int, default=8, help="training epochs (default 8)")
    demo.add_argument("--batch-size", type=_positive_int, default=64, help="batch size (default 64)")
    demo.add_argument("--lr", type=_positive_float, default=0.05, help="SGD learning rate (default 0.05)")
    demo.add_argument("--seed", type=_nonneg_int, default=0, help="seed of the initialization and batches (default 0)")
    demo.add_argument("--embed-dim", type=_positive_int, default=16, help="embedding size (default 16)")
    demo.add_argument("--loss", choices=("triplet", "contrastive"), default="triplet", help="metric loss (default triplet)")
    demo.add_argument("--backend", choices=("mantissa", "numpy"), default="mantissa",
                      help="mantissa: the C engine (default); numpy: the reference kernels (slow)")
    demo.add_argument("--threads", type=_thread_count, default=None, help="engine threads (default: all cores)")
    return parser


def load_demo_data(dataset, data_dir=None, split="test"):
    """``(X_train, y_train, X_unseen, y_unseen)``: classes 0-4 and 5-9 of the demo dataset.

    ``digits``: bilinear 8x8 -> 24x24, zero-padded to 28x28. ``mnist``: ``split`` of the IDX
    files in ``data_dir`` (or ``$MANTISSA_EMBED_DATA``). Raises FileNotFoundError (with the
    command that fetches the files) when MNIST is missing.
    """
    if dataset == "digits":
        X, y = datasets.load("digits")
        X = datasets.pad_or_resize(datasets.pad_or_resize(X, 24, mode="bilinear"), 28, mode="pad")
    elif dataset == "mnist":
        X, y = datasets.load("mnist", split=split, data_dir=data_dir)
    else:
        raise ValueError(f"dataset must be 'digits' or 'mnist', got {dataset!r}")
    Xtr, ytr, Xte, yte = datasets.split_by_class(X, y, TRAIN_CLASSES)
    return Xtr, ytr, Xte, yte


def _fmt(m):
    return (f"precision@1 {m['precision_at_1']:.3f}   R-precision {m['r_precision']:.3f}   "
            f"MAP@R {m['mean_average_precision_at_r']:.3f}")


def _gallery_queries(y, seed, n=5):
    """One query per class for the first ``n`` classes present (deterministic)."""
    rng = np.random.default_rng(seed)
    classes = np.unique(y)[:n]
    q = [int(rng.choice(np.flatnonzero(y == c))) for c in classes]
    while len(q) < min(n, len(y)):
        q.append(int(rng.integers(len(y))))
    return np.array(q, dtype=np.int64)


def run_demo(args, out=sys.stdout):
    """Run the demo for parsed ``args``; returns the process exit code."""
    def say(*a):
        print(*a, file=out, flush=True)

    try:  # fail fast, before training and before creating --out
        viz._import_matplotlib()
    except ImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if os.path.exists(args.out) and not os.path.isdir(args.out):  # before training, not after
        print(f"error: --out {args.out!r} exists and is not a directory", file=sys.stderr)
        return 2
    if args.threads is not None:
        engine.set_num_threads(args.threads)
    try:
        Xtr, ytr, Xte, yte = load_demo_data(args.dataset, args.data_dir, args.split)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    name = "scikit-learn digits (8x8 -> 28x28)" if args.dataset == "digits" else f"MNIST {args.split} set"
    say(f"mantissa-embed demo: {name}")
    say(f"  train: classes 0-4, {len(ytr)} images | evaluate: unseen classes 5-9, {len(yte)} images")

    trunk = models.small_cnn_embedder(args.embed_dim, seed=args.seed, backend=args.backend)
    emb = Embedder(trunk, loss=args.loss, seed=args.seed, backend=args.backend)
    trunk.build(Xtr.shape[1:])
    untrained = models.small_cnn_embedder(args.embed_dim, seed=args.seed, backend=args.backend).build(Xtr.shape[1:])
    untrained.load_state_arrays(trunk.state_arrays())
    say(f"  model: small_cnn_embedder(embed_dim={args.embed_dim}), {trunk.num_parameters():,} parameters")
    for line in emb.summary().splitlines():
        if line.startswith(("Loss:", "Miner:", "Optimizer:")):
            say(f"  {line}")
    say(f"  training: {args.epochs} epochs, batch {args.batch_size}, lr {args.lr:g}, seed {args.seed}, "
        f"backend {args.backend}")

    t0 = time.perf_counter()

    def on_epoch(epoch, loss):
        say(f"  epoch {epoch + 1:>2}/{args.epochs}  loss {loss:.4f}  ({time.perf_counter() - t0:.1f}s)")

    try:
        emb.fit(Xtr, ytr, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, callback=on_epoch)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    fit_s = time.perf_counter() - t0

    Z = emb.embed(Xte)
    m_emb = retrieval_metrics(Z, yte, backend=args.backend)
    Z0 = np.concatenate([untrained.forward(Xte[i:i + 256]) for i in range(0, len(Xte), 256)])
    Z0 /= np.maximum(np.linalg.norm(Z0, axis=1, keepdims=True), 1e-12)
    m_init = retrieval_metrics(Z0, yte, backend=args.backend)
    m_raw = retrieval_metrics(Xte.reshape(len(Xte), -1), yte, backend=args.backend)
    say(f"unseen classes 5-9 ({len(yte)} images, each querying the others, self excluded):")
    say(f"  trained embedding ({Z.shape[1]}-D):  {_fmt(m_emb)}")
    say(f"  untrained network ({Z.shape[1]}-D):  {_fmt(m_init)}")
    say(f"  raw pixels ({Xte[0].size}-D):       {_fmt(m_raw)}")
    say(f"  (fit {fit_s:.1f}s; distances: Euclidean between L2-normalized embeddings, Euclidean on raw pixels)")

    try:
        os.makedirs(args.out, exist_ok=True)
        p1 = viz.plot_embedding_manifold(
            Z, yte, os.path.join(args.out, "embedding_manifold.png"),
            title=f"unseen digits 5-9: 2-D PCA of the {Z.shape[1]}-D embeddings ({args.dataset})")
        q = _gallery_queries(yte, args.seed)
        idx, _ = emb.retrieve(Z[q], Z, k=6)
        nbrs = np.array([[j for j in row if j != qi][:5] for qi, row in zip(q, idx)], dtype=np.int64)
        p2 = viz.plot_retrieval_gallery(Xte, yte, q, nbrs, os.path.join(args.out, "retrieval_gallery.png"))
    except ImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    say(f"wrote {p1}")
    say(f"wrote {p2}")
    return 0


def main(argv=None):
    """Entry point of ``python -m mantissa_embed``; returns the exit code."""
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        return run_demo(args)
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
