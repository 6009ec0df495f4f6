"""PNPLoss (Li et al. 2022), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike, IndicesTuple
from .._validation import check_float
from ..distances import CosineSimilarity
from .base_metric_loss_function import BaseMetricLossFunction
from .fast_ap_loss import _labels_required, _no_indices_tuple, _reject_ref


class PNPLoss(BaseMetricLossFunction):
    """Ranking loss that only penalizes negatives ranked before positives (PNP).

    ``PNPLoss(b=2, alpha=1, anneal=0.01, variant="O", distance=None, reducer=None, ...)``: with
    ``R_ij = sum_{k negative} sigmoid((s_ik - s_ij) / anneal)``, ``loss = mean_i mean_{j in P_i}
    f(R_ij)`` (``f`` per variant "O", "Ds", "Dq", "Iu", "Ib"; ``1 - loss`` for "Dq"), already
    reduced. Cosine similarity only; labels required; no ``indices_tuple``, no ``ref_emb``.

    Raises ``TypeError`` for another distance; ``ValueError`` for an unknown variant,
    ``anneal <= 0``, missing labels, ``indices_tuple`` or ``ref_emb``.
    Source: Z. Li et al., "Rethinking the Optimization of Average Precision", AAAI 2022.
    """

    VARIANTS = ["Ds", "Dq", "Iu", "Ib", "O"]

    def __init__(self, b=2, alpha: float = 1, anneal: float = 0.01, variant: str = "O", **kwargs) -> None:
        super().__init__(**kwargs)
        if not isinstance(self.distance, CosineSimilarity):
            raise TypeError(
                f"PNPLoss requires distance to be a CosineSimilarity, got {type(self.distance).__name__}"
            )
        self.b = check_float(b, "b")
        self.alpha = check_float(alpha, "alpha")
        self.anneal = check_float(anneal, "anneal", minimum=0.0, strict=True)
        if variant not in self.VARIANTS:
            raise ValueError(f"variant={variant!r} but must be one of {self.VARIANTS}")
        self.variant = variant

    def get_default_distance(self):
        return CosineSimilarity(backend=self.backend)

    def __call__(
        self,
        embeddings: ArrayLike,
        labels: ArrayLike | None = None,
        indices_tuple: IndicesTuple | None = None,
        ref_emb: ArrayLike | None = None,
        ref_labels: ArrayLike | None = None,
    ):
        _reject_ref(type(self).__name__, embeddings, labels, ref_emb, ref_labels)
        _no_indices_tuple(type(self).__name__, indices_tuple)
        if labels is None:
            raise ValueError("labels are required by PNPLoss")
        return super().__call__(embeddings, labels)

    forward = __call__

    def _f(self, r):
        """(f(R), f'(R))."""
        v, b, a = self.variant, self.b, self.alpha
        if v == "O":
            return r, np.ones_like(r)
        if v == "Ds":
            return np.log1p(r), 1.0 / (1.0 + r)
        if v == "Dq":
            return (1.0 + r) ** (-a), -a * (1.0 + r) ** (-a - 1.0)
        if v == "Iu":
            return (1.0 + r) * np.log1p(r), np.log1p(r) + 1.0
        return (b * r - np.log1p(b * r)) / b**2, (1.0 - 1.0 / (1.0 + b * r)) / b

    def compute_loss(self, batch):
        _labels_required("PNPLoss", batch)
        N = batch.N
        if N == 0:
            return self.zero_losses(batch)
        lab = batch.labels
        ipos = lab[:, None] == lab[None, :]
        npos = ipos.sum(axis=1)
        safe = npos > 1  # PML sets I_pos[i, i] only for anchors of a positive pair
        if not safe.any():
            return self.zero_losses(batch)
        ipos &= safe[:, None]
        npos = np.where(safe, npos, 1).astype(np.float64)
        n_safe = int(safe.sum())
        mat, ctx = self._mat(batch)
        eng = self.engine
        rk = eng.pnp_rank_forward(mat, lab, self.anneal)
        fr, dfr = self._f(rk)
        per = np.sum(np.where(ipos, fr, 0.0), axis=1) / npos
        loss = per.sum() / n_safe
        sign = 1.0
        if self.variant == "Dq":
            loss, sign = 1.0 - loss, -1.0
        value, dl = self._reduce_generic(np.array([loss]), None, "already_reduced", batch)
        scale = sign * float(np.asarray(dl).reshape(-1)[0]) / n_safe
        drk = np.where(ipos, dfr * (scale / npos)[:, None], 0.0)
        dmat = eng.pnp_rank_backward(drk, mat, lab, self.anneal)
        dq, dr = self._grads(dmat.astype(np.float32), ctx)
        return {"loss": value}, dq, dr

    def __repr__(self) -> str:
        return (
            f"PNPLoss(b={self.b}, alpha={self.alpha}, anneal={self.anneal}, variant={self.variant!r}, "
            f"distance={self.distance!r}, reducer={self.reducer!r})"
        )
