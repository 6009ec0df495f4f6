"""Seed sweep of Embedder training recipes on the issue's unseen-class protocol.

Train ``small_cnn_embedder(embed_dim=16)`` on the MNIST test set's digits 0-4 for 8 epochs
(batch 64, lr 0.05), embed the digits 5-9 and report precision@1 and MAP@R (self excluded)
for each seed, then the mean, the minimum and how many seeds meet the targets
(precision@1 >= 0.78 and MAP@R >= 0.30). This is how ``embedder.DEFAULTS`` was chosen.

    python benchmarks/recipe_sweep.py --seeds 10 '{}' '{"margin": 0.05}' '{"miner": "semihard"}'

Each positional argument is a JSON dict of ``Embedder`` keyword arguments. Needs the MNIST
IDX files (``--data-dir``, default ``../shared/data/mnist`` next to the repository).
"""
import argparse
import json
import pathlib
import time

import numpy as np

from mantissa_embed import Embedder, datasets, engine, models
from mantissa_embed.evaluation.retrieval import retrieval_metrics

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recipes", nargs="*", default=["{}"], help="JSON dicts of Embedder kwargs")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data" / "mnist"))
    args = ap.parse_args()
    engine.set_num_threads(args.threads)
    X, y = datasets.load("mnist", split="test", data_dir=args.data_dir)
    Xtr, ytr, Xte, yte = datasets.split_by_class(X, y, [0, 1, 2, 3, 4])
    for text in args.recipes:
        kwargs = json.loads(text)
        rows = []
        for seed in range(args.seeds):
            emb = Embedder(models.small_cnn_embedder(embed_dim=16), seed=seed, **kwargs)
            t0 = time.perf_counter()
            emb.fit(Xtr, ytr, epochs=8, batch_size=64, lr=0.05)
            fit_s = time.perf_counter() - t0
            m = retrieval_metrics(emb.embed(Xte), yte)
            rows.append((m["precision_at_1"], m["mean_average_precision_at_r"]))
            print(f"  {text} seed {seed}: precision@1 {rows[-1][0]:.3f}  MAP@R {rows[-1][1]:.3f}"
                  f"  (fit {fit_s:.1f} s)", flush=True)
        a = np.array(rows)
        ok = int(((a[:, 0] >= 0.78) & (a[:, 1] >= 0.30)).sum())
        print(f"{text}: precision@1 mean {a[:, 0].mean():.3f} min {a[:, 0].min():.3f} | "
              f"MAP@R mean {a[:, 1].mean():.3f} min {a[:, 1].min():.3f} | "
              f"{ok}/{len(a)} seeds meet both targets", flush=True)


if __name__ == "__main__":
    main()
