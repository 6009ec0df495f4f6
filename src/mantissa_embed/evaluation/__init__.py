"""Evaluation: exact tiled k-NN, pytorch-metric-learning's AccuracyCalculator and retrieval
metrics, Open Metric Learning's query/gallery protocol, and verification metrics (ROC AUC, EER,
TAR at FAR).

``AccuracyCalculator``, ``SklearnKMeans`` and ``verification_metrics`` load on first access
(PEP 562): their modules import scikit-learn, which ``Embedder`` (it needs only ``knn``)
should not pay for at import.
"""

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from .faiss_knn import FaissKNN
from .knn import METRICS, knn
from .query_gallery import query_gallery_metrics
from .retrieval import (
    mean_average_precision_at_r,
    metrics_from_knn_labels,
    precision_at_1,
    r_precision,
    retrieval_metrics,
)

if TYPE_CHECKING:  # the lazy attributes below, for type checkers and editors
    from .accuracy_calculator import AccuracyCalculator, SklearnKMeans
    from .verification import verification_metrics

_LAZY = {
    "AccuracyCalculator": "accuracy_calculator",
    "SklearnKMeans": "accuracy_calculator",
    "verification_metrics": "verification",
}

__all__ = [
    "AccuracyCalculator",
    "SklearnKMeans",
    "FaissKNN",
    "METRICS",
    "knn",
    "precision_at_1",
    "r_precision",
    "mean_average_precision_at_r",
    "retrieval_metrics",
    "metrics_from_knn_labels",
    "query_gallery_metrics",
    "verification_metrics",
]


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    # the API (the lazy names too), the submodules imported so far and the private names: not
    # importlib, ModuleType and TYPE_CHECKING, which only build this namespace
    return sorted(
        set(__all__)
        | {
            n
            for n, v in globals().items()
            if n.startswith("_") or (isinstance(v, ModuleType) and v.__name__.startswith(__name__ + "."))
        }
    )
