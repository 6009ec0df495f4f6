"""CosineSimilarity (pytorch-metric-learning)."""

from __future__ import annotations

from .dot_product_similarity import DotProductSimilarity


class CosineSimilarity(DotProductSimilarity):
    """Cosine similarity: ``DotProductSimilarity`` of L2-normalized embeddings.

    ``CosineSimilarity(p=2, power=1)``; ``normalize_embeddings=False`` raises ``ValueError``.
    Source: pytorch-metric-learning ``distances/cosine_similarity.py``.
    """

    def __init__(self, **kwargs) -> None:
        if kwargs.pop("normalize_embeddings", True) is not True:
            raise ValueError("CosineSimilarity always normalizes: normalize_embeddings must be True")
        super().__init__(normalize_embeddings=True, **kwargs)
