"""Evaluation: exact tiled k-NN, pytorch-metric-learning's AccuracyCalculator and retrieval
metrics, and verification metrics (ROC AUC, EER, TAR at FAR)."""
from .accuracy_calculator import AccuracyCalculator, SklearnKMeans
from .faiss_knn import FaissKNN
from .knn import METRICS, knn
from .retrieval import (
    mean_average_precision_at_r,
    metrics_from_knn_labels,
    precision_at_1,
    r_precision,
    retrieval_metrics,
)
from .verification import verification_metrics

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
    "verification_metrics",
]
