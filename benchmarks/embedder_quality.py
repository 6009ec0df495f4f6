"""Trained-model quality of the default recipe on classes held out from training.

* ``mnist``: the MNIST test set, ``Embedder(models.cnn_embedder(), seed=s).fit(X_train,
  y_train, epochs=8)`` on its digits 0-4, every other argument at its default; precision@1
  and MAP@R on its digits 5-9 (each image queries the others, self excluded).
* ``orl``: ORL / AT&T at 56x46, subjects 1-30 train for 200 epochs, subjects 31-40 evaluate:
  ROC AUC and EER over all 4,950 pairs of their 100 images (Euclidean distance between the
  L2-normalized embeddings), precision@1 and MAP@R. ``--preset`` adds fit arguments (JSON),
  ``--embedder`` Embedder arguments (JSON).

Prints one line per seed, then the range and the mean, and the CPU features. Data from
``--data-dir`` (default ``../shared/data`` next to the repository)::

    python benchmarks/embedder_quality.py mnist --seeds 0,1,2,3,4
    python benchmarks/embedder_quality.py orl --seeds 0,1,2
"""

import argparse
import json
import pathlib
import time

import numpy as np

from mantissa_embed import Embedder, datasets, engine, models
from mantissa_embed.evaluation import retrieval_metrics
from mantissa_embed.evaluation.verification import verification_metrics

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"


def evaluate(Z, y, pairs):
    m = retrieval_metrics(Z, y)
    out = {"P@1": m["precision_at_1"], "MAP@R": m["mean_average_precision_at_r"]}
    if pairs:
        i, j = np.triu_indices(len(y), 1)
        v = verification_metrics(np.linalg.norm(Z[i].astype(np.float64) - Z[j], axis=1), y[i] == y[j])
        out.update(AUC=v["roc_auc"], EER=v["eer"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("protocol", choices=("mnist", "orl"))
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--preset", default="{}", help="JSON dict of extra Embedder.fit arguments")
    ap.add_argument(
        "--embedder", default="{}", help="JSON dict of extra Embedder arguments (e.g. m_per_class)"
    )
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    if args.threads:
        engine.set_num_threads(args.threads)
    data = pathlib.Path(args.data_dir) if args.data_dir else DATA
    if args.protocol == "mnist":
        X, y = datasets.load("mnist", split="test", data_dir=data / "mnist")
        Xtr, ytr, Xte, yte = datasets.split_by_class(X, y, [0, 1, 2, 3, 4])
        epochs = 8
    else:
        X, y = datasets.load("orl_faces", data_dir=data / "orl_faces", size=(56, 46))
        Xtr, ytr, Xte, yte = datasets.split_by_class(X, y, list(range(30)))
        epochs = 200
    preset, emb_kw = json.loads(args.preset), json.loads(args.embedder)
    print(
        f"{args.protocol}: {len(ytr)} training images, {len(yte)} unseen; preset {preset}, embedder {emb_kw}; "
        f"CPU {engine.cpu_features()}, {engine.get_num_threads()} threads",
        flush=True,
    )
    rows = []
    for seed in map(int, args.seeds.split(",")):
        t = time.perf_counter()
        emb = Embedder(models.cnn_embedder(), seed=seed, **emb_kw).fit(Xtr, ytr, epochs=epochs, **preset)
        rows.append(evaluate(emb.embed(Xte), yte, args.protocol == "orl"))
        print(
            f"  seed {seed}: "
            + "  ".join(f"{k} {v:.4f}" for k, v in rows[-1].items())
            + f"  (fit {time.perf_counter() - t:.1f} s)",
            flush=True,
        )
    for k in rows[0]:
        v = [r[k] for r in rows]
        print(f"{k}: {min(v):.4f}-{max(v):.4f}, mean {np.mean(v):.4f}")


if __name__ == "__main__":
    main()
