"""DotProductSimilarity (pytorch-metric-learning)."""
from __future__ import annotations

import numpy as np

from .base_distance import BaseDistance


class DotProductSimilarity(BaseDistance):
    """Dot-product similarity ``mat[i, j] = q_i . r_j`` (one SGEMM), ``is_inverted=True``.

    ``DotProductSimilarity(normalize_embeddings=True, p=2, power=1)``; with normalization this is
    the cosine similarity. Source: pytorch-metric-learning ``distances/dot_product_similarity.py``.

    Raises
    ------
    ValueError
        ``p != 2``, ``power <= 0``, or ``is_inverted`` passed as False.
    """

    def __init__(self, **kwargs):
        if kwargs.pop("is_inverted", True) is not True:
            raise ValueError(f"{type(self).__name__} is a similarity: is_inverted must be True")
        super().__init__(is_inverted=True, **kwargs)

    def compute_mat(self, q, r, ctx):
        return ctx.engine.dot_similarity_forward(q, r)

    def compute_mat_backward(self, dbase, ctx):
        return ctx.engine.dot_similarity_backward(ctx.query, ctx.ref, dbase)

    def pairwise_distance(self, query_emb, ref_emb):
        """Row-wise dot products ``q_i . r_i``."""
        return np.sum(np.asarray(query_emb, dtype=np.float64) * np.asarray(ref_emb, dtype=np.float64),
                      axis=-1).astype(np.float32)
