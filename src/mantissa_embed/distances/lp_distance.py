"""LpDistance (pytorch-metric-learning): Euclidean distance matrix on the C engine."""
from __future__ import annotations

import numpy as np

from .base_distance import BaseDistance


class LpDistance(BaseDistance):
    """Lp distance between embeddings; p = 2 (Euclidean) for now.

    ``LpDistance(p=2, power=1, normalize_embeddings=True)``: ``mat[i, j] = ||q_i - r_j||_2 ** power``
    of the (by default L2-normalized) rows, computed as ``||q||^2 + ||r||^2 - 2 q.r`` with one
    SGEMM (clamped at 0 before the square root, as ``torch.cdist``); ``power=2`` uses the squared
    distance directly. Gradient at a zero distance: 0 (the subgradient ``torch.cdist`` uses).
    ``is_inverted`` is False (smaller = closer). Source: pytorch-metric-learning
    ``distances/lp_distance.py``.

    Raises
    ------
    ValueError
        ``p != 2`` (not implemented yet), ``is_inverted=True``, ``power <= 0``.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if self.is_inverted:
            raise ValueError("LpDistance is a distance: is_inverted must be False")

    def _compute(self, q, r, ctx):
        eng = ctx.engine
        N, M = q.shape[0], r.shape[0]
        squared = self.power == 2
        ws = self._workspace(eng.euclidean_workspace_size(N, M))
        base = eng.euclidean_forward(q, r, squared=squared, workspace=ws)
        if squared or self.power == 1:
            return base, base
        return base, (base ** self.power).astype(np.float32, copy=False)

    def _compute_backward(self, dmat, ctx):
        eng = ctx.engine
        squared = self.power == 2
        if squared or self.power == 1:
            dbase = dmat
        else:
            b = ctx.base
            with np.errstate(divide="ignore", invalid="ignore"):
                dbase = dmat * (self.power * b ** (self.power - 1))
            dbase = np.where(np.isfinite(dbase), dbase, 0).astype(np.float32)
        N, M = ctx.shape[0], ctx.shape[1]
        ws = self._workspace(eng.euclidean_workspace_size(N, M, backward=True))
        return eng.euclidean_backward(ctx.query, ctx.ref, ctx.base, dbase, squared=squared, workspace=ws)

    def pairwise_distance(self, query_emb, ref_emb):
        """Row-wise Euclidean distances ``||q_i - r_i||`` (no normalization, no power)."""
        d = np.asarray(query_emb, dtype=np.float64) - np.asarray(ref_emb, dtype=np.float64)
        return np.sqrt(np.sum(d * d, axis=-1)).astype(np.float32)
