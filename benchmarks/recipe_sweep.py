"""Sweep of training recipes on a validation split of the *training* classes only.

The default recipe (``Embedder(models.cnn_embedder())`` with every argument at its default,
``mantissa_embed.embedder.DEFAULTS``) was chosen with this script; the evaluation classes (MNIST 5-9, ORL
subjects 31-40) are never loaded here.

* ``--dataset mnist``: the MNIST test set's digits 0-2 train, 3-4 validate (each validation
  image queries the others, self excluded): precision@1 and MAP@R.
* ``--dataset orl``: ORL subjects 1-24 train, 25-30 validate (56x46): ROC AUC and EER over
  every pair of the validation images, and MAP@R.
* ``--folds K``: K-fold cross-validation over the training classes instead (MNIST 0-4, ORL
  subjects 1-30): each fold validates on 1/K of them and trains on the rest; the summary runs
  over folds and seeds. How the face preset was chosen::

    python benchmarks/recipe_sweep.py --dataset orl --folds 3 --seeds 1 --threads 1 \
        '{"fit": {"augment": "hflip"}}' '{"m_per_class": 5, "fit": {"augment": "hflip", "batch_size": 40}}'

Each positional argument is a JSON dict: ``{"model": {...cnn_embedder kwargs...}, "fit":
{...Embedder.fit kwargs...}, ...Embedder kwargs...}``; ``"trunk": "resnet"`` picks
``resnet_embedder``. Example::

    python benchmarks/recipe_sweep.py --seeds 2 '{}' '{"fit": {"augment": null}}' \\
        '{"loss": "multi_similarity"}' '{"model": {"batch_norm": false}}'

Prints one line per seed and a summary line per recipe (mean and minimum over seeds).
"""

import argparse
import json
import pathlib
import time

import numpy as np

from mantissa_embed import Embedder, datasets, engine, models
from mantissa_embed.evaluation.retrieval import retrieval_metrics
from mantissa_embed.evaluation.verification import verification_metrics

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def load(dataset, data_dir, folds=0):
    """``([(X_train, y_train, X_val, y_val), ...], default fit kwargs)``: the validation split,
    or the ``folds`` cross-validation splits of the training classes."""
    if dataset == "mnist":
        X, y = datasets.load("mnist", split="test", data_dir=data_dir or DATA / "mnist")
        keep = y <= 4  # the evaluation classes 5-9 are dropped before anything else
        fixed, fit = [0, 1, 2], {"epochs": 8}
    else:
        X, y = datasets.load("orl_faces", data_dir=data_dir or DATA / "orl_faces", size=(56, 46))
        keep = y < 30  # subjects 31-40 are dropped before anything else
        fixed, fit = list(range(24)), {"epochs": 200}
    X, y = X[keep], y[keep]
    classes = np.unique(y)
    if not folds:
        return [datasets.split_by_class(X, y, fixed)], fit
    return [
        datasets.split_by_class(X, y, sorted(set(classes) - set(va))) for va in np.array_split(classes, folds)
    ], fit


def evaluate(Z, y, dataset):
    m = retrieval_metrics(Z, y)
    out = {"P@1": m["precision_at_1"], "MAP@R": m["mean_average_precision_at_r"]}
    if dataset == "orl":
        i, j = np.triu_indices(len(y), 1)
        d = np.linalg.norm(Z[i] - Z[j], axis=1)
        v = verification_metrics(d, y[i] == y[j])
        out.update(AUC=v["roc_auc"], EER=v["eer"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recipes", nargs="*", default=["{}"], help="JSON dicts (see the module docstring)")
    ap.add_argument("--dataset", choices=("mnist", "orl"), default="mnist")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--folds", type=int, default=0, help="K-fold cross-validation over the training classes")
    args = ap.parse_args()
    if args.threads:
        engine.set_num_threads(args.threads)
    splits, fit_defaults = load(args.dataset, args.data_dir, args.folds)
    for k, (Xtr, ytr, Xva, yva) in enumerate(splits):
        print(
            f"{args.dataset} split {k}: train {len(ytr)} images of {len(np.unique(ytr))} classes, "
            f"validate {len(yva)} images of classes {np.unique(yva).tolist()}; CPU {engine.cpu_features()}",
            flush=True,
        )
    for text in args.recipes:
        kw = json.loads(text)
        model_kw = kw.pop("model", {})
        fit_kw = {**fit_defaults, **kw.pop("fit", {})}
        make = models.resnet_embedder if kw.pop("trunk", "cnn") == "resnet" else models.cnn_embedder
        rows = []
        for k, (Xtr, ytr, Xva, yva) in enumerate(splits):
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                emb = Embedder(make(seed=seed, **model_kw), seed=seed, **kw)
                t0 = time.perf_counter()
                emb.fit(Xtr, ytr, **fit_kw)
                fit_s = time.perf_counter() - t0
                rows.append(evaluate(emb.embed(Xva), yva, args.dataset))
                print(
                    f"  {text} split {k} seed {seed}: "
                    + "  ".join(f"{m} {v:.4f}" for m, v in rows[-1].items())
                    + f"  (fit {fit_s:.1f} s)",
                    flush=True,
                )
        keys = rows[0].keys()
        summary = "  ".join(
            f"{k} mean {np.mean([r[k] for r in rows]):.4f} "
            f"{'max' if k == 'EER' else 'min'} "
            f"{(max if k == 'EER' else min)(r[k] for r in rows):.4f}"
            for k in keys
        )
        print(f"{text}: {summary}", flush=True)


if __name__ == "__main__":
    main()
