"""Sweep of training recipes on a validation split of the *training* classes only.

The default recipe (``Embedder(models.cnn_embedder())`` with every argument at its default,
``_recipe.DEFAULTS``) was chosen with this script; the evaluation classes (MNIST 5-9, ORL
subjects 31-40) are never loaded here.

* ``--dataset mnist``: the MNIST test set's digits 0-2 train, 3-4 validate (each validation
  image queries the others, self excluded): precision@1 and MAP@R.
* ``--dataset orl``: ORL subjects 1-24 train, 25-30 validate (56x46): ROC AUC and EER over
  every pair of the validation images, and MAP@R.

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


def load(dataset, data_dir):
    """``(X_train, y_train, X_val, y_val, default fit kwargs)`` of the validation split."""
    if dataset == "mnist":
        X, y = datasets.load("mnist", split="test", data_dir=data_dir or DATA / "mnist")
        keep = y <= 4  # the evaluation classes 5-9 are dropped before anything else
        X, y = X[keep], y[keep]
        Xtr, ytr, Xva, yva = datasets.split_by_class(X, y, [0, 1, 2])
        return Xtr, ytr, Xva, yva, {"epochs": 8}
    X, y = datasets.load("orl_faces", data_dir=data_dir or DATA / "orl_faces", size=(56, 46))
    keep = y < 30  # subjects 31-40 are dropped before anything else
    X, y = X[keep], y[keep]
    Xtr, ytr, Xva, yva = datasets.split_by_class(X, y, list(range(24)))
    return Xtr, ytr, Xva, yva, {"epochs": 200}


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
    args = ap.parse_args()
    if args.threads:
        engine.set_num_threads(args.threads)
    Xtr, ytr, Xva, yva, fit_defaults = load(args.dataset, args.data_dir)
    print(f"{args.dataset}: train {len(ytr)} images of {len(np.unique(ytr))} classes, "
          f"validate {len(yva)} images of {len(np.unique(yva))} classes; CPU {engine.cpu_features()}", flush=True)
    for text in args.recipes:
        kw = json.loads(text)
        model_kw = kw.pop("model", {})
        fit_kw = {**fit_defaults, **kw.pop("fit", {})}
        make = models.resnet_embedder if kw.pop("trunk", "cnn") == "resnet" else models.cnn_embedder
        rows = []
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            emb = Embedder(make(seed=seed, **model_kw), seed=seed, **kw)
            t0 = time.perf_counter()
            emb.fit(Xtr, ytr, **fit_kw)
            fit_s = time.perf_counter() - t0
            rows.append(evaluate(emb.embed(Xva), yva, args.dataset))
            print(f"  {text} seed {seed}: " + "  ".join(f"{k} {v:.4f}" for k, v in rows[-1].items())
                  + f"  (fit {fit_s:.1f} s)", flush=True)
        keys = rows[0].keys()
        summary = "  ".join(f"{k} mean {np.mean([r[k] for r in rows]):.4f} "
                            f"{'max' if k == 'EER' else 'min'} "
                            f"{(max if k == 'EER' else min)(r[k] for r in rows):.4f}" for k in keys)
        print(f"{text}: {summary}", flush=True)


if __name__ == "__main__":
    main()
