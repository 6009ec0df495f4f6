"""LpDistance (pytorch-metric-learning): Euclidean matrix on the C engine, other p in numpy."""

from __future__ import annotations

import numpy as np

from . import _numpy_ops as _ops
from .base_distance import BaseDistance


class LpDistance(BaseDistance):
    """Lp distance ``mat[i, j] = ||q_i - r_j||_p ** power``, any p >= 1 (inf included).

    ``LpDistance(p=2, power=1, normalize_embeddings=True)``, ``is_inverted=False``; rows are
    normalized with the same ``p`` first. ``p=2`` runs on the C engine (one SGEMM, clamped at 0,
    cancelling entries recomputed), other ``p`` in float64 numpy over query chunks; gradients use
    ``torch.cdist``'s subgradients. Details: docs/distances.md.

    Raises ``ValueError`` (``p < 1``, ``is_inverted=True``, ``power <= 0``) or ``TypeError``.
    Source: pytorch-metric-learning ``distances/lp_distance.py``.
    """

    _general_p = True

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        if self.is_inverted:
            raise ValueError("LpDistance is a distance: is_inverted must be False")

    def _compute(self, q, r, ctx):
        if self.p != 2:
            return BaseDistance._compute(self, q, r, ctx)
        eng = ctx.engine
        N, M = q.shape[0], r.shape[0]
        squared = self.power == 2
        ws = self._workspace(eng.euclidean_workspace_size(N, M))
        base = eng.euclidean_forward(q, r, squared=squared, workspace=ws)
        if squared or self.power == 1:
            return base, base
        return base, (base**self.power).astype(np.float32, copy=False)

    def compute_mat(self, q, r, ctx):
        return _ops.lp_cdist_forward(q, r, self.p)

    def compute_mat_backward(self, dbase, ctx):
        return _ops.lp_cdist_backward(ctx.query, ctx.ref, ctx.base, dbase, self.p)

    def _compute_backward(self, dmat, ctx):
        if self.p != 2:
            return BaseDistance._compute_backward(self, dmat, ctx)
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
        """Row-wise Lp distances ``||q_i - r_i||_p`` (no normalization, no power)."""
        d = np.asarray(query_emb, dtype=np.float64) - np.asarray(ref_emb, dtype=np.float64)
        return _ops._pnorm(d, self.p).astype(np.float32)
