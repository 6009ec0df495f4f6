"""Distances and similarities (pytorch-metric-learning's names and defaults).

Each maps query embeddings (N, D) and reference embeddings (M, D) to an (N, M) float32 matrix
and has an explicit backward; see ``BaseDistance``.
"""

from .base_distance import BaseDistance, DistanceContext
from .batched_distance import BatchedDistance
from .cosine_similarity import CosineSimilarity
from .dot_product_similarity import DotProductSimilarity
from .lp_distance import LpDistance
from .snr_distance import SNRDistance

__all__ = [
    "BaseDistance",
    "DistanceContext",
    "LpDistance",
    "DotProductSimilarity",
    "CosineSimilarity",
    "SNRDistance",
    "BatchedDistance",
]
