"""Command line: ``python -m mantissa_embed demo [options]`` (the main job).

The demo trains the default recipe, ``Embedder(models.cnn_embedder())``, by metric learning on
the training classes and reports retrieval quality (precision@1, R-precision, MAP@R; each image
queries all the others, itself excluded) for two protocols, next to raw pixels and to the same
network untrained:

* **unseen classes**: classes never seen in training (digits 5-9; ORL subjects 31-40), what
  metric learning is for;
* **held-out images of the training classes** (20% of each training class, kept out of
  training), the protocol of the package README.

It writes ``embedding_manifold.png`` (2-D PCA of the unseen-class embeddings) and
``retrieval_gallery.png`` (five unseen queries and their five nearest neighbours; green frame =
same class) into ``--out``.

Datasets
--------
``digits`` (default): scikit-learn's bundled 8x8 digits (1,797 images, no download), upsampled
bilinearly to 24x24 and zero-padded to 28x28 as MNIST digits sit in their frame. Under a minute
on two cores. ``mnist``: the IDX files from ``--data-dir`` or ``$MANTISSA_EMBED_DATA``
(``python -m mantissa_embed.datasets download mnist``); ``--split test`` (default) is the
10,000-image test set: digits 0-4 train, 5-9 unseen. ``orl_faces``: ORL / AT&T faces at 56x46
from ``--data-dir``: subjects 1-30 train, 31-40 unseen; also prints ROC AUC and EER over every
pair of unseen faces. It trains with the face preset (``embedder.FACE_PRESET``:
``Embedder(..., m_per_class=5).fit(..., batch_size=40, augment="hflip")``). ``folder``: any
image folder at ``--data-dir``, streamed from its files (``mantissa_embed._demo_folder``).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from sklearn.model_selection import train_test_split

from . import datasets, engine, models, viz
from ._checks.distance import l2_normalize_rows
from ._demo_folder import fit_saying_epochs, gallery_neighbours, run_folder_demo
from .embedder import FACE_PRESET, Embedder
from .embedder._recipe import LOSSES
from .evaluation import retrieval_metrics
from .evaluation.verification import verification_metrics

TRAIN_CLASSES = (0, 1, 2, 3, 4)
#: the held-out fraction of every training class (the seen-class protocol)
HELD_OUT = 0.2
#: per dataset: the training classes, the default epochs, and the names of the class groups
PROTOCOLS = {
    "digits": (TRAIN_CLASSES, 8, "classes 0-4", "classes 5-9"),
    "mnist": (TRAIN_CLASSES, 8, "classes 0-4", "classes 5-9"),
    "orl_faces": (tuple(range(30)), 200, "subjects 1-30", "subjects 31-40"),
}


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


def _image_size(s):
    try:
        parts = [int(v) for v in s.lower().split("x")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int or HxW, got {s!r}") from None
    if len(parts) not in (1, 2) or min(parts) < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1 or HxW, got {s!r}")
    return parts[0] if len(parts) == 1 else tuple(parts)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m mantissa_embed",
        description="mantissa-embed: CPU-native metric learning (C engine, no PyTorch).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    demo = sub.add_parser(
        "demo",
        help="train on digits 0-4, evaluate retrieval on the unseen digits 5-9, write two plots",
        description=(
            "Train the default recipe (cnn_embedder) by metric learning on the training classes, print "
            "precision@1 / R-precision / MAP@R (self excluded) on unseen classes and on held-out images "
            "of the training classes, next to raw pixels and the untrained network, and write "
            "embedding_manifold.png and retrieval_gallery.png."
        ),
    )
    demo.add_argument(
        "--dataset",
        choices=tuple(PROTOCOLS) + ("folder",),
        default="digits",
        help="digits: scikit-learn's bundled 8x8 digits upsampled to 28x28 (no download; default); "
        "mnist: IDX files from --data-dir, else $MANTISSA_EMBED_DATA, else ~/.cache/mantissa-embed; orl_faces: ORL faces at "
        "56x46 from --data-dir; folder: any image folder (one sub-folder per class) at --data-dir, "
        "streamed from the files",
    )
    demo.add_argument(
        "--image-size",
        type=_image_size,
        default=112,
        help="folder: an int S (shorter side to S, central square; default 112) or HxW (exact)",
    )
    demo.add_argument(
        "--channels", type=int, choices=(1, 3), default=3, help="folder: 3 (RGB, default) or 1 (grey)"
    )
    demo.add_argument(
        "--skip-bad",
        action="store_true",
        help="folder: leave out (and report) files that cannot be read, instead of stopping",
    )
    demo.add_argument(
        "--data-dir",
        default=None,
        help="data directory (the IDX files, the ORL s1..s40 folders, or their parent); "
        "default $MANTISSA_EMBED_DATA, else ~/.cache/mantissa-embed",
    )
    demo.add_argument(
        "--split",
        choices=("test", "train"),
        default="test",
        help="MNIST split to use (default: test, the 10,000-image set)",
    )
    demo.add_argument(
        "--out", default="demo_out", help="output directory for the two PNGs (default: demo_out/)"
    )
    demo.add_argument(
        "--epochs",
        type=_positive_int,
        default=None,
        help="training epochs (default 8; 200 for orl_faces; 20 for folder)",
    )
    demo.add_argument(
        "--batch-size",
        type=_positive_int,
        default=None,
        help="batch size (default 64; 40 for orl_faces, the face preset)",
    )
    demo.add_argument(
        "--lr",
        type=_positive_float,
        default=None,
        help="learning rate (default: the optimizer's, 1e-3 for AdamW)",
    )
    demo.add_argument(
        "--seed", type=_nonneg_int, default=0, help="seed of the initialization and batches (default 0)"
    )
    demo.add_argument("--embed-dim", type=_positive_int, default=64, help="embedding size (default 64)")
    demo.add_argument(
        "--loss",
        choices=("default",) + LOSSES,
        default="default",
        help="metric loss (default: the default recipe's, proxy_anchor)",
    )
    demo.add_argument(
        "--backend",
        choices=("mantissa", "numpy"),
        default="mantissa",
        help="mantissa: the C engine (default); numpy: the reference kernels (slow)",
    )
    demo.add_argument(
        "--threads", type=_thread_count, default=None, help="engine threads (default: all cores)"
    )
    return parser


def _load_images(dataset, data_dir=None, split: str = "test"):
    if dataset == "digits":
        X, y = datasets.load("digits")
        return datasets.pad_or_resize(datasets.pad_or_resize(X, 24, mode="bilinear"), 28, mode="pad"), y
    if dataset == "mnist":
        return datasets.load("mnist", split=split, data_dir=data_dir)
    if dataset == "orl_faces":
        return datasets.load("orl_faces", data_dir=data_dir, size=(56, 46))
    raise ValueError(f"dataset must be one of {tuple(PROTOCOLS)}, got {dataset!r}")


def load_demo_data(dataset, data_dir=None, split: str = "test"):
    """``(X_train, y_train, X_unseen, y_unseen)``: the training classes and the unseen ones.

    ``digits``: bilinear 8x8 -> 24x24, zero-padded to 28x28. ``mnist``: ``split`` of the IDX
    files in ``data_dir`` (or ``$MANTISSA_EMBED_DATA``). ``orl_faces``: 56x46 faces, subjects
    1-30 / 31-40. Raises FileNotFoundError (with the command that fetches the files) when the
    data is missing.
    """
    X, y = _load_images(dataset, data_dir, split)
    return datasets.split_by_class(X, y, PROTOCOLS[dataset][0])


def hold_out(X, y, seed=0, fraction=HELD_OUT):
    """``(X_fit, y_fit, X_held, y_held)``: ``fraction`` of every class held out (stratified,
    seeded; scikit-learn's ``train_test_split``)."""
    Xf, Xh, yf, yh = train_test_split(X, y, test_size=fraction, stratify=y, random_state=seed)
    return Xf, yf, Xh, yh


def _fmt(m) -> str:
    return (
        f"precision@1 {m['precision_at_1']:.3f}   R-precision {m['r_precision']:.3f}   "
        f"MAP@R {m['mean_average_precision_at_r']:.3f}"
    )


def _gallery_queries(y, seed, n=5):
    """One query per class for the first ``n`` classes present (deterministic)."""
    rng = np.random.default_rng(seed)
    classes = np.unique(y)[:n]
    q = [int(rng.choice(np.flatnonzero(y == c))) for c in classes]
    while len(q) < min(n, len(y)):
        q.append(int(rng.integers(len(y))))
    return np.array(q, dtype=np.int64)


def run_demo(args, out=sys.stdout) -> int:
    """Run the demo for parsed ``args``; returns the process exit code."""

    def say(*a) -> None:
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
    if args.dataset == "folder":
        if args.data_dir is None:
            print(
                "error: --dataset folder needs --data-dir DIR (one sub-folder of images per class)",
                file=sys.stderr,
            )
            return 2
        return run_folder_demo(args, say, _fmt, HELD_OUT)
    try:
        Xtr, ytr, Xte, yte = load_demo_data(args.dataset, args.data_dir, args.split)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    names = {
        "digits": "scikit-learn digits (8x8 -> 28x28)",
        "mnist": f"MNIST {args.split} set",
        "orl_faces": "ORL / AT&T faces (56x46)",
    }
    _, default_epochs, seen_name, unseen_name = PROTOCOLS[args.dataset]
    epochs = default_epochs if args.epochs is None else args.epochs
    Xfit, yfit, Xheld, yheld = hold_out(Xtr, ytr, args.seed)
    say(f"mantissa-embed demo: {names[args.dataset]}")
    say(
        f"  train: {seen_name}, {len(yfit)} images ({100 * HELD_OUT:.0f}% of each class held out: {len(yheld)}) | "
        f"unseen: {unseen_name}, {len(yte)} images"
    )

    def trunk():
        return models.cnn_embedder(args.embed_dim, seed=args.seed, backend=args.backend).build(Xtr.shape[1:])

    faces = args.dataset == "orl_faces"
    emb_kw, fit_kw = (
        (FACE_PRESET["embedder"], dict(FACE_PRESET["fit"])) if faces else ({}, {"batch_size": 64})
    )
    if args.batch_size is not None:
        fit_kw["batch_size"] = args.batch_size
    emb = Embedder(trunk(), loss=args.loss, seed=args.seed, backend=args.backend, **emb_kw)
    untrained = trunk().eval()
    say(f"  model: cnn_embedder(embed_dim={args.embed_dim}), {emb.net.num_parameters():,} parameters")
    for line in emb.summary().splitlines():
        if line.startswith(("Loss:", "Miner:", "Optimizer:")):
            say(f"  {line}")
    say(
        f"  training: {epochs} epochs, batch {fit_kw['batch_size']}, lr {'default' if args.lr is None else args.lr}, "
        f"seed {args.seed}, backend {args.backend}"
    )

    fit_s = fit_saying_epochs(emb, say, Xfit, yfit, epochs=epochs, lr=args.lr, **fit_kw)
    if fit_s is None:
        return 2

    def untrained_embed(X):
        Z0 = np.concatenate([untrained.forward(X[i : i + 256]) for i in range(0, len(X), 256)])
        return l2_normalize_rows(Z0, out=Z0)[0]

    Z = emb.embed(Xte)
    for title, Xe, ye, Ze in (
        (f"unseen {unseen_name}", Xte, yte, Z),
        (f"held-out images of the training {seen_name}", Xheld, yheld, emb.embed(Xheld)),
    ):
        rows = (
            ("trained embedding", Ze),
            ("untrained network", untrained_embed(Xe)),
            ("raw pixels", Xe.reshape(len(Xe), -1)),
        )
        say(f"{title} ({len(ye)} images, each querying the others, self excluded):")
        for label, F in rows:
            dim = f"({F.shape[1]}-D):"
            line = f"  {label + ' ' + dim:<36}{_fmt(retrieval_metrics(F, ye, backend=args.backend))}"
            if args.dataset == "orl_faces":
                i, j = np.triu_indices(len(ye), 1)
                v = verification_metrics(
                    np.linalg.norm(F[i].astype(np.float64) - F[j], axis=1), ye[i] == ye[j]
                )
                line += f"   ROC AUC {v['roc_auc']:.4f}   EER {v['eer']:.4f}"
            say(line)
    say(
        f"  (fit {fit_s:.1f}s; distances: Euclidean between L2-normalized embeddings, Euclidean on raw pixels; "
        f"CPU features {engine.cpu_features()})"
    )

    try:
        os.makedirs(args.out, exist_ok=True)
        p1 = viz.plot_embedding_manifold(
            Z,
            yte,
            os.path.join(args.out, "embedding_manifold.png"),
            title=f"unseen {unseen_name}: 2-D PCA of the {Z.shape[1]}-D embeddings ({args.dataset})",
        )
        q = _gallery_queries(yte, args.seed)
        nbrs = gallery_neighbours(emb, Z, q)
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
