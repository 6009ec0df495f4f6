"""LpDistance (pytorch-metric-learning): Euclidean matrix on the C engine, other p in numpy."""
from __future__ import annotations

import numpy as np

from . import _numpy_ops as _ops
from .base_distance import BaseDistance


class LpDistance(BaseDistance):
    """Lp distance between embeddings, any p >= 1.

    ``LpDistance(p=2, power=1, normalize_embeddings=True)``:
    ``mat[i, j] = ||q_i - r_j||_p ** power`` of the rows, after (by default) normalizing each row
    to unit Lp norm with the same ``p`` (``torch.nn.functional.normalize(x, p)``, eps 1e-12, as
    PML). Shapes: ``query_emb`` (N, D), ``ref_emb`` (M, D) or None (the batch) -> (N, M) float32.
    ``is_inverted`` is False (smaller = closer).

    - ``p=2``: on the C engine, ``||q||^2 + ||r||^2 - 2 q.r`` with one SGEMM (clamped at 0 before
      the square root, as ``torch.cdist``; cancelling entries recomputed directly); ``power=2``
      uses the squared distance directly.
    - other ``p`` (1, 3, ``float("inf")``, ...): numpy in float64 over query chunks,
      ``(sum_k |q_k - r_k|^p)^(1/p)`` (p=1: sum of absolute differences; p=inf: the largest).

    Gradients flow to both inputs through ``power`` and the normalization. Subgradients (those of
    ``torch.cdist``): 0 at a zero distance; ``sign(q_k - r_k)`` for p=1; for p=inf,
    ``sign(q_k - r_k)`` on every coordinate attaining the maximum.

    Source: pytorch-metric-learning ``distances/lp_distance.py``.

    Raises
    ------
    ValueError
        ``p < 1``, ``is_inverted=True``, ``power <= 0``.
    TypeError
        Non-numeric ``p`` / ``power``, non-bool flags.
    """

    _general_p = True

    def __init__(self, **kwargs):
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
        return base, (base ** self.power).astype(np.float32, copy=False)

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
