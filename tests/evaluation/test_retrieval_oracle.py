"""evaluation.retrieval vs pytorch-metric-learning's AccuracyCalculator (oracle, 1e-6)."""

import logging

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_metric_learning")
from pytorch_metric_learning.distances import LpDistance  # noqa: E402
from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator  # noqa: E402
from pytorch_metric_learning.utils.inference import CustomKNN  # noqa: E402

from mantissa_embed.evaluation import retrieval_metrics  # noqa: E402

NAMES = ("precision_at_1", "r_precision", "mean_average_precision_at_r")
logging.getLogger("PML").setLevel(logging.ERROR)


def pml(X, y, R=None, ry=None, inc=False, avg_of_avgs=False):
    # faiss is not installed: exact brute-force k-NN with PML's own Euclidean distance
    calc = AccuracyCalculator(
        include=NAMES,
        k="max_bin_count",
        avg_of_avgs=avg_of_avgs,
        device=torch.device("cpu"),
        knn_func=CustomKNN(LpDistance(normalize_embeddings=False)),
    )
    if R is None:
        return calc.get_accuracy(torch.from_numpy(X), torch.from_numpy(y))
    return calc.get_accuracy(
        torch.from_numpy(X), torch.from_numpy(y), torch.from_numpy(R), torch.from_numpy(ry), inc
    )


def make(seed, n, D, C, spread):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, n).astype(np.int64)
    centers = rng.standard_normal((C, D)) * spread
    X = (centers[y] + rng.standard_normal((n, D))).astype(np.float32)
    return X, y, rng, centers


def assert_close(got, ref):
    for m in NAMES:
        assert got[m] == pytest.approx(ref[m], abs=1e-6), m


@pytest.mark.parametrize(
    "seed, n, D, C, spread",
    [
        (0, 300, 8, 5, 0.0),  # random
        (1, 250, 4, 10, 3.0),  # clustered
        (2, 400, 16, 3, 1.0),
        (3, 120, 2, 30, 2.0),  # many small classes, some lone queries
    ],
)
@pytest.mark.parametrize("avg_of_avgs", [False, True])
def test_self_retrieval_matches_pml(seed, n, D, C, spread, avg_of_avgs):
    X, y, _, _ = make(seed, n, D, C, spread)
    assert_close(retrieval_metrics(X, y, avg_of_avgs=avg_of_avgs), pml(X, y, avg_of_avgs=avg_of_avgs))


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_separate_reference_matches_pml(seed):
    X, y, rng, centers = make(seed, 150, 6, 6, 2.0)
    ry = rng.integers(0, 7, 220).astype(np.int64)  # class 6 only in the reference
    centers = np.vstack([centers, rng.standard_normal((1, 6)) * 2.0])
    R = (centers[ry] + rng.standard_normal((220, 6))).astype(np.float32)
    assert_close(retrieval_metrics(X, y, R, ry), pml(X, y, R, ry, False))


@pytest.mark.parametrize("seed", [7, 8])
def test_reference_including_queries_matches_pml(seed):
    X, y, rng, centers = make(seed, 100, 5, 4, 1.5)
    ry = rng.integers(0, 4, 150).astype(np.int64)
    R = np.concatenate([X, (centers[ry] + rng.standard_normal((150, 5))).astype(np.float32)])
    ry = np.concatenate([y, ry])
    assert_close(retrieval_metrics(X, y, R, ry, ref_includes_query=True), pml(X, y, R, ry, True))
