"""Recipe: evaluate embeddings with ``AccuracyCalculator`` (run ``python -m docs.recipes.evaluation``).

1. Synthetic "images" (1 x 6 x 6): each class is a random prototype; every image adds noise
   and a strong nuisance pattern (a random mix of 3 shared directions) that carries no class
   information.
2. A tiny ``Embedder`` (Flatten -> Dense(32, relu) -> Dense(8)) is trained for a few epochs
   on classes 0-5 only.
3. Its embeddings of the unseen classes 6-11 are split into a query set (5 per class) and a
   reference set (the rest), and scored:

   a. queries against the separate reference set (``ref_includes_query=False``);
   b. the reference set against itself (``get_accuracy(ref, ref_labels)``: the query set *is*
      the reference set, the self-match is skipped, ``R`` counts one less);
   c. queries against ``query + reference`` stacked, with ``ref_includes_query=True``;
   d. the same stacked set without that flag: every query retrieves itself first, so
      precision@1 is a meaningless 1.0 -- the mistake the flag exists for;
   e. a custom metric ``precision_at_5`` added by subclassing;
   f. the raw pixels of the same sets, as the untrained baseline.

It runs in a few seconds on two cores. :func:`main` returns every number it prints.
"""

from __future__ import annotations

import time

import numpy as np

from mantissa_embed import Embedder
from mantissa_embed.evaluation import AccuracyCalculator, accuracy_calculator as ac
from mantissa_embed.layers import Dense, Flatten

N_CLASSES = 12
TRAIN_CLASSES = 6
PER_CLASS = 30
QUERIES_PER_CLASS = 5
SHAPE = (1, 6, 6)
METRICS = (
    "precision_at_1",
    "r_precision",
    "mean_average_precision_at_r",
    "mean_average_precision",
    "mean_reciprocal_rank",
    "NMI",
    "AMI",
)


class WithPrecisionAt5(AccuracyCalculator):
    """AccuracyCalculator plus ``precision_at_5``: matches among the 5 nearest, / 5."""

    def calculate_precision_at_5(self, knn_labels, query_labels, not_lone_query_mask, **kwargs):
        knn_labels, query_labels = ac.try_getting_not_lone_labels(
            knn_labels, query_labels, not_lone_query_mask
        )
        if knn_labels is None:
            return float("nan")
        return ac.precision_at_k(
            knn_labels,
            query_labels[:, None],
            5,
            self.avg_of_avgs,
            self.return_per_class,
            self.label_comparison_fn,
        )

    def requires_knn(self):
        return super().requires_knn() + ["precision_at_5"]


def make_data(seed=0):
    """(X (N, 1, 6, 6) float32, y (N,) int64): PER_CLASS images of each of N_CLASSES classes."""
    rng = np.random.default_rng(seed)
    d = int(np.prod(SHAPE))
    prototypes = rng.normal(size=(N_CLASSES, d))
    nuisance = rng.normal(size=(3, d))
    y = np.repeat(np.arange(N_CLASSES), PER_CLASS)
    X = prototypes[y] + 0.4 * rng.normal(size=(len(y), d)) + 3.0 * rng.normal(size=(len(y), 3)) @ nuisance
    return X.reshape((-1,) + SHAPE).astype(np.float32), y.astype(np.int64)


def split_query_reference(E, y):
    """First QUERIES_PER_CLASS rows of each class -> queries, the others -> references."""
    first = np.zeros(len(y), dtype=bool)
    for c in np.unique(y):
        first[np.flatnonzero(y == c)[:QUERIES_PER_CLASS]] = True
    return E[first], y[first], E[~first], y[~first]


def evaluate(E, y):
    """The scores a-e of the module docstring for embeddings E of the unseen classes."""
    q, qy, r, ry = split_query_reference(E, y)
    calc = AccuracyCalculator(include=METRICS, k="max_bin_count")
    stacked, stacked_y = np.concatenate([q, r]), np.concatenate([qy, ry])
    return {
        "query_vs_reference": calc.get_accuracy(q, qy, r, ry, ref_includes_query=False),
        "reference_vs_itself": calc.get_accuracy(r, ry),
        "ref_includes_query": calc.get_accuracy(q, qy, stacked, stacked_y, ref_includes_query=True),
        "forgot_ref_includes_query": calc.get_accuracy(
            q, qy, stacked, stacked_y, ref_includes_query=False, include=("precision_at_1",)
        ),
        "custom_metric": WithPrecisionAt5(include=("precision_at_1", "precision_at_5"), k=5).get_accuracy(
            q, qy, r, ry
        ),
    }


def main(seed=0, verbose=True):
    t0 = time.perf_counter()
    X, y = make_data(seed)
    train = y < TRAIN_CLASSES
    model = Embedder([Flatten(), Dense(32, act="relu"), Dense(8)], seed=seed, loss="triplet", optimizer="sgd")
    model.fit(X[train], y[train], epochs=30, batch_size=36, lr=0.05, augment=None, schedule=None)
    unseen = ~train
    results = {
        "trained": evaluate(model.embed(X[unseen]), y[unseen]),
        "raw_pixels": evaluate(X[unseen].reshape(int(unseen.sum()), -1), y[unseen]),
    }
    results["seconds"] = time.perf_counter() - t0
    if verbose:
        for which in ("trained", "raw_pixels"):
            print(f"== {which} ==")
            for case, scores in results[which].items():
                line = "  ".join(f"{k}={v:.3f}" for k, v in scores.items())
                print(f"  {case:26s} {line}")
        print(f"done in {results['seconds']:.1f} s")
    return results


if __name__ == "__main__":
    main()
