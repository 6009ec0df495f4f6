"""Face verification on real faces: ORL / AT&T (40 subjects x 10 images), unseen identities.

Protocol (documented in ``docs/evaluation.md``):

* Data: ``mantissa_embed.datasets.load("orl_faces", data_dir=...)``, 400 grey images of
  112x92 in [0, 1], area-downscaled to ``--size`` (default 56x46, an exact 2x2 block mean).
  Subject ``sK`` has label ``K - 1``.
* Training: subjects 1-30 (labels 0-29, 300 images), all of them; nothing of subjects 31-40
  is seen in training or in the choice of the recipe (it was chosen on a validation split
  of subjects 25-30 trained on 1-24; see ``docs/evaluation.md``).
* Test: every unordered pair of the 100 images of subjects 31-40: C(100, 2) = 4,950 pairs,
  450 same-identity and 4,500 different. Distance: Euclidean between L2-normalized
  embeddings (the distance the triplet loss trains); for raw pixels, Euclidean between the
  flattened images. Metrics: :func:`mantissa_embed.evaluation.verification.verification_metrics`
  (ROC AUC, EER, TAR@FAR=1e-2, best accuracy) and
  :func:`mantissa_embed.evaluation.retrieval_metrics` (precision@1, MAP@R; each of the 100
  images queries the 99 others).
* Baselines: raw pixels, and the same network with its initial (untrained) weights.
* Outputs in ``--out``: ``roc.png`` (the three ROC curves, log FAR), ``gallery.png`` (one
  query per unseen subject and its 5 nearest unseen faces, green = same subject) and
  ``metrics.json``.

Run::

    python benchmarks/orl_verification.py --data-dir ../shared/data/orl_faces --out orl_out
    python benchmarks/orl_verification.py --quick          # a few seconds, for the test
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "orl_faces"

#: The recipe (chosen on the validation split; see docs/evaluation.md).
RECIPE = dict(
    width=16,
    embed_dim=64,
    loss="triplet",
    margin=None,
    optimizer="adam",
    lr=3e-4,
    weight_decay=0.0,
    batch_size=60,
    epochs=20,
    seed=0,
)
QUICK_EPOCHS = 6


def build_layers(width, embed_dim):
    """Conv(w)-Pool-Conv(2w)-Pool-Conv(2w)-Pool-Flatten-Dense(embed_dim); 3x3 convs, pad 1, ReLU."""
    from mantissa_embed.layers import Conv2D, Dense, Flatten, MaxPool2D

    return [
        Conv2D(width, 3, pad=1, act="relu"),
        MaxPool2D(2),
        Conv2D(2 * width, 3, pad=1, act="relu"),
        MaxPool2D(2),
        Conv2D(2 * width, 3, pad=1, act="relu"),
        MaxPool2D(2),
        Flatten(),
        Dense(embed_dim),
    ]


def all_pairs(n):
    """Indices (i, j), i < j, of every unordered pair of n items."""
    return np.triu_indices(n, 1)


def pair_distances(Z):
    """Euclidean distance of every unordered pair of rows (float64), in ``all_pairs`` order."""
    Z = np.asarray(Z, dtype=np.float64)
    sq = (Z * Z).sum(1)
    D = np.sqrt(np.maximum(sq[:, None] + sq[None] - 2.0 * Z @ Z.T, 0.0))
    i, j = all_pairs(len(Z))
    return D[i, j]


def l2n(Z):
    Z = np.asarray(Z, dtype=np.float64)
    return Z / np.maximum(np.linalg.norm(Z, axis=1, keepdims=True), 1e-12)


def evaluate(Z, y):
    """Verification + retrieval metrics of embeddings Z (rows) of the images with labels y."""
    from mantissa_embed.evaluation import retrieval_metrics
    from mantissa_embed.evaluation.verification import verification_metrics

    i, j = all_pairs(len(y))
    m = verification_metrics(pair_distances(Z), y[i] == y[j])
    r = retrieval_metrics(
        np.ascontiguousarray(Z, dtype=np.float32),
        y,
        include=("precision_at_1", "mean_average_precision_at_r"),
    )
    m.update(r)
    return m


SHOWN = (
    "roc_auc",
    "eer",
    "tar_at_far_1e-2",
    "tar_at_far_1e-3",
    "best_accuracy",
    "precision_at_1",
    "mean_average_precision_at_r",
)


def run(
    data_dir=DEFAULT_DATA,
    out=None,
    epochs=None,
    quick=False,
    size=(56, 46),
    seed=None,
    verbose=True,
    threads=None,
):
    """Train, evaluate, plot. Returns ``{"raw": {...}, "untrained": {...}, "trained": {...}, "info": {...}}``.

    ``threads``: engine threads for the run (restored afterwards); 1 is faster on a machine
    where other processes keep the cores busy (see docs/architecture.md, "Threads and load").
    """
    from mantissa_embed import engine

    old_threads = engine.get_num_threads()
    if threads is not None:
        engine.set_num_threads(threads)
    try:
        return _run(data_dir, out, epochs, quick, size, seed, verbose)
    finally:
        engine.set_num_threads(old_threads)


def _run(data_dir, out, epochs, quick, size, seed, verbose):
    from mantissa_embed import Embedder, datasets
    from mantissa_embed.evaluation import knn

    t0 = time.perf_counter()
    rec = dict(RECIPE)
    if seed is not None:
        rec["seed"] = seed
    if epochs is None:
        epochs = QUICK_EPOCHS if quick else rec["epochs"]
    rec["epochs"] = epochs
    X, y = datasets.load("orl_faces", data_dir=data_dir, size=size)
    train = y < 30
    Xtr, ytr = X[train], y[train]
    Xte, yte = X[~train], y[~train]
    assert len(ytr) == 300 and len(yte) == 100, (len(ytr), len(yte))

    emb = Embedder(
        build_layers(rec["width"], rec["embed_dim"]),
        loss=rec["loss"],
        margin=rec["margin"],
        seed=rec["seed"],
        optimizer=rec["optimizer"],
        weight_decay=rec["weight_decay"],
    )
    emb.net.build(Xte.shape[1:])
    emb.net.eval()
    Z_untrained = l2n(np.concatenate([emb.net.forward(Xte[s : s + 50]) for s in range(0, len(Xte), 50)]))
    t1 = time.perf_counter()
    emb.fit(Xtr, ytr, epochs=epochs, batch_size=rec["batch_size"], lr=rec["lr"], augment=None, schedule=None)
    train_s = time.perf_counter() - t1
    Z_trained = emb.embed(Xte)

    results = {
        "raw": evaluate(Xte.reshape(len(Xte), -1), yte),
        "untrained": evaluate(Z_untrained, yte),
        "trained": evaluate(Z_trained, yte),
    }
    summary = {
        name: {k: float(v[k]) for k in SHOWN + ("eer_threshold", "best_threshold")}
        for name, v in results.items()
    }
    info = {
        "recipe": rec,
        "size": list(size),
        "train_seconds": round(train_s, 2),
        "final_train_loss": float(emb.history_["loss"][-1]),
        "n_pairs": 4950,
        "n_same_pairs": 450,
        "total_seconds": None,
    }

    if verbose:
        print(
            f"ORL faces {size[0]}x{size[1]}: train subjects 1-30 (300 images), test subjects 31-40 "
            f"(100 images, 4950 pairs: 450 same / 4500 different)"
        )
        print(f"recipe: {rec}; training {train_s:.1f} s, final loss {info['final_train_loss']:.4f}")
        head = f"{'':10s}" + "".join(
            f"{k:>14s}" for k in ("ROC AUC", "EER", "TAR@1e-2", "TAR@1e-3", "best acc", "P@1", "MAP@R")
        )
        print(head)
        for name in ("raw", "untrained", "trained"):
            print(f"{name:10s}" + "".join(f"{summary[name][k]:14.4f}" for k in SHOWN))

    if out is not None:
        from mantissa_embed import viz

        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        names = ("trained", "untrained", "raw")
        labels = [f"{n} (AUC {summary[n]['roc_auc']:.3f}, EER {summary[n]['eer']:.3f})" for n in names]
        viz.plot_roc(
            [results[n]["fpr"] for n in names],
            [results[n]["tpr"] for n in names],
            out / "roc.png",
            title="ORL faces, unseen subjects 31-40 (4,950 pairs)",
            label=labels,
        )
        queries = np.array([np.flatnonzero(yte == c)[0] for c in np.unique(yte)])
        Z32 = np.ascontiguousarray(Z_trained, dtype=np.float32)
        nb, _ = knn(Z32, Z32, 6, exclude_self=True)
        viz.plot_retrieval_gallery(Xte, yte, queries, nb[queries, :5], out / "gallery.png")
        info["total_seconds"] = round(time.perf_counter() - t0, 2)
        with open(out / "metrics.json", "w", encoding="utf-8") as f:
            json.dump({"metrics": summary, **info}, f, indent=2)
        if verbose:
            print(f"wrote {out / 'roc.png'}, {out / 'gallery.png'}, {out / 'metrics.json'}")
    info["total_seconds"] = round(time.perf_counter() - t0, 2)
    return {**summary, "info": info}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--data-dir", default=str(DEFAULT_DATA), help="folder holding s1/ ... s40/ (default %(default)s)"
    )
    p.add_argument("--out", default="orl_out", help="output folder for roc.png, gallery.png, metrics.json")
    p.add_argument(
        "--epochs",
        type=int,
        default=None,
        help=f"training epochs (default {RECIPE['epochs']}, {QUICK_EPOCHS} with --quick)",
    )
    p.add_argument("--quick", action="store_true", help="the short version (used by the test)")
    p.add_argument(
        "--seed", type=int, default=None, help=f"initialization/sampling seed (default {RECIPE['seed']})"
    )
    p.add_argument("--threads", type=int, default=None, help="engine threads (default: all cores)")
    args = p.parse_args(argv)
    if not Path(args.data_dir).is_dir():
        print(f"SKIPPED: ORL data folder not found: {args.data_dir}", file=sys.stderr)
        return 0
    run(args.data_dir, args.out, epochs=args.epochs, quick=args.quick, seed=args.seed, threads=args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
