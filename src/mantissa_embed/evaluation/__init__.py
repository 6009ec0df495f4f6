"""Retrieval evaluation: exact tiled k-NN and pytorch-metric-learning's retrieval metrics."""
from .knn import METRICS, knn
from .retrieval import (
    mean_average_precision_at_r,
    metrics_from_knn_labels,
    precision_at_1,
    r_precision,
    retrieval_metrics,
)

__all__ = [
    "METRICS",
    "knn",
    "precision_at_1",
    "r_precision",
    "mean_average_precision_at_r",
    "retrieval_metrics",
    "metrics_from_knn_labels",
]
