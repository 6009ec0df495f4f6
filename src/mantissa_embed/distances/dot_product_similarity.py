"""DotProductSimilarity (pytorch-metric-learning)."""

from __future__ import annotations

import numpy as np

from .base_distance import BaseDistance

#: Largest batch whose same-set backward keeps its (N, N) scratch in the distance object.
_SYM_WS_MAX_N = 2048


class DotProductSimilarity(BaseDistance):
    """Dot-product similarity ``mat[i, j] = q_i . r_j`` (one SGEMM), ``is_inverted=True``.

    ``DotProductSimilarity(normalize_embeddings=True, p=2, power=1)``. For the batch against
    itself the Gram matrix is computed on and above the diagonal and mirrored (exactly
    symmetric), and the backward is one product ``(dS + dS^T) q``.

    Raises ``ValueError`` for ``p != 2``, ``power <= 0`` or ``is_inverted=False``.
    Source: pytorch-metric-learning ``distances/dot_product_similarity.py``.
    """

    def __init__(self, **kwargs) -> None:
        if kwargs.pop("is_inverted", True) is not True:
            raise ValueError(f"{type(self).__name__} is a similarity: is_inverted must be True")
        super().__init__(is_inverted=True, **kwargs)

    def compute_mat(self, q, r, ctx):
        if r is q:  # the batch against itself: symmetric, half the products (mirrored)
            return ctx.engine.gram_forward(q)
        return ctx.engine.dot_similarity_forward(q, r)

    def compute_mat_backward(self, dbase, ctx):
        if ctx.same and ctx.ref is ctx.query:
            # both roles of the batch in one product: dq = (dS + dS^T) q, dr folded in (None)
            N = dbase.shape[0]
            # scratch kept across calls up to N = 2048 (16 MB), allocated per call above
            out = self._workspace(N * N)[: N * N].reshape(N, N) if N <= _SYM_WS_MAX_N else None
            sym = ctx.engine.add_transpose_forward(dbase, out=out)
            return ctx.engine.sgemm(sym, ctx.query), None
        return ctx.engine.dot_similarity_backward(ctx.query, ctx.ref, dbase)

    def pairwise_distance(self, query_emb, ref_emb):
        """Row-wise dot products ``q_i . r_i``."""
        return np.sum(
            np.asarray(query_emb, dtype=np.float64) * np.asarray(ref_emb, dtype=np.float64), axis=-1
        ).astype(np.float32)
