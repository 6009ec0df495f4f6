"""SNRDistance (pytorch-metric-learning): the signal-to-noise-ratio distance of Yuan et al. 2019."""

from __future__ import annotations

import numpy as np

from . import _numpy_ops as _ops
from .base_distance import BaseDistance


class SNRDistance(BaseDistance):
    """Signal-to-noise-ratio distance ``mat[i, j] = var(q_i - r_j) / var(q_i)``, not symmetric.

    ``SNRDistance(normalize_embeddings=True, p=2, power=1)``, ``is_inverted=False``; ``var`` is
    the unbiased variance over the D columns (``torch.var``) of the (normalized) rows. Computed
    in float64 in closed form from centered rows (one matrix product, cancelling entries
    recomputed, no (N, M, D) tensor), with the analytic backward to both inputs.

    Raises ``ValueError`` for ``is_inverted=True``, ``power <= 0``, ``p < 1``, or at call time
    fewer than 2 columns or a query row of zero variance.
    Source: T. Yuan et al., "Signal-to-Noise Ratio: A Robust Distance Metric for Deep Metric
    Learning", CVPR 2019.
    """

    _general_p = True

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        if self.is_inverted:
            raise ValueError("SNRDistance is a distance: is_inverted must be False")

    def compute_mat(self, q, r, ctx):
        if q.shape[1] < 2:
            raise ValueError(
                f"query_emb must have at least 2 columns for SNRDistance (a variance), got shape {q.shape}"
            )
        mat, a = _ops.snr_forward(q, r)
        if q.shape[0] and not np.all(a > 0):
            i = int(np.flatnonzero(~(a > 0))[0])
            raise ValueError(f"query_emb row {i} has zero variance: SNRDistance divides by var(query_emb[i])")
        return mat

    def compute_mat_backward(self, dbase, ctx):
        return _ops.snr_backward(ctx.query, ctx.ref, dbase)

    def pairwise_distance(self, query_emb, ref_emb):
        """Row-wise ``var(q_i - r_i) / var(q_i)`` (no normalization, no power)."""
        q = np.asarray(query_emb, dtype=np.float64)
        d = q - np.asarray(ref_emb, dtype=np.float64)
        return (np.var(d, axis=-1, ddof=1) / np.var(q, axis=-1, ddof=1)).astype(np.float32)
