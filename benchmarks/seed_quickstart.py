"""The seed README's quickstart call on the MNIST protocol, and how its recipe was chosen.

The call, verbatim (no optimizer named; ``lr=0.05``)::

    emb = Embedder(models.small_cnn_embedder(embed_dim=16), loss="triplet")  # or "contrastive"
    emb.fit(Xtr, ytr, epochs=8, batch_size=64, lr=0.05)

* ``--protocol test`` (the acceptance check): train on the MNIST test set's 5,139 images of
  digits 0-4, every image of 5-9 queries all the others (self excluded): precision@1 and MAP@R
  per seed (``Embedder(..., seed=s)``), next to the untrained network.
* ``--protocol val`` (how the recipe was chosen): two folds of the *training* digits only, train
  0-2 / validate 3-4 and train 2-4 / validate 0-1; digits 5-9 are dropped before anything else.

Each positional argument is a JSON dict of overrides: ``{"emb": {...Embedder kwargs...},
...fit kwargs...}``, e.g. ``'{"emb": {"miner": "batch_hard"}}'`` or ``'{"lr": 0.001}'``; none:
the call as it is. Examples::

    python benchmarks/seed_quickstart.py --protocol test --seeds 0,1,2,3,4
    python benchmarks/seed_quickstart.py --protocol val --seeds 0,1,2 '{}' '{"emb": {"miner": "batch_hard"}}'
"""

import argparse
import json
import pathlib
import time

import numpy as np

from _machine import cpu_model
from mantissa_embed import Embedder, datasets, engine, models
from mantissa_embed.evaluation import retrieval_metrics

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"


def _scores(Z, y):
    m = retrieval_metrics(Z, y)
    return m["precision_at_1"], m["mean_average_precision_at_r"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("overrides", nargs="*", default=["{}"])
    ap.add_argument("--protocol", choices=("test", "val"), default="test")
    ap.add_argument("--loss", default="triplet,contrastive")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args()
    X, y = datasets.load("mnist", split="test", data_dir=pathlib.Path(args.data_dir or DATA) / "mnist")
    Xtr, ytr, Xte, yte = datasets.split_by_class(X, y, [0, 1, 2, 3, 4])
    if args.protocol == "test":
        folds = [(Xtr, ytr, Xte, yte)]
    else:
        del Xte, yte  # the evaluation digits never reach a validation run
        folds = [datasets.split_by_class(Xtr, ytr, [0, 1, 2]), datasets.split_by_class(Xtr, ytr, [2, 3, 4])]
    print(
        f"{args.protocol}: {len(folds)} fold(s); CPU {cpu_model()} ({engine.gemm_kernel_name()} kernels), "
        f"{engine.get_num_threads()} threads",
        flush=True,
    )
    for fold, (a, _, c, d) in enumerate(folds):
        Z0 = models.small_cnn_embedder(embed_dim=16).build(a.shape[1:]).eval().forward(c)
        p1, mapr = _scores(Z0 / np.linalg.norm(Z0, axis=1, keepdims=True), d)
        print(f"  untrained, fold {fold}: P@1 {p1:.4f}  MAP@R {mapr:.4f}")
    for loss in args.loss.split(","):
        for text in args.overrides:
            over = json.loads(text)
            emb_kw = over.pop("emb", {})
            fit_kw = {"epochs": 8, "batch_size": 64, "lr": 0.05, **over}
            rows = []
            for seed in map(int, args.seeds.split(",")):
                for fold, (a, b, c, d) in enumerate(folds):
                    t = time.perf_counter()
                    emb = Embedder(models.small_cnn_embedder(embed_dim=16), loss=loss, seed=seed, **emb_kw)
                    emb.fit(a, b, **fit_kw)
                    rows.append(_scores(emb.embed(c), d))
                    print(
                        f"  {loss} {text} seed {seed} fold {fold}: P@1 {rows[-1][0]:.4f}  MAP@R {rows[-1][1]:.4f}  "
                        f"({type(emb.optimizer_).__name__}, fit {time.perf_counter() - t:.1f} s)",
                        flush=True,
                    )
            r = np.array(rows)
            print(
                f"{loss} {text}: P@1 {r[:, 0].min():.3f}-{r[:, 0].max():.3f} (mean {r[:, 0].mean():.3f}), "
                f"MAP@R {r[:, 1].min():.3f}-{r[:, 1].max():.3f} (mean {r[:, 1].mean():.3f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
