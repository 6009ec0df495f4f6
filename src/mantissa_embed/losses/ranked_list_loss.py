"""RankedListLoss (Wang et al. 2019), pytorch-metric-learning's formulation."""

from __future__ import annotations

import warnings

import numpy as np

from .._typing import ArrayLike, IndicesTuple
from .._validation import check_float
from ..distances import LpDistance
from ._ranking_math import ranked_list_backward, ranked_list_forward
from .base_metric_loss_function import BaseMetricLossFunction
from .fast_ap_loss import _labels_required, _no_indices_tuple, _reject_ref


class RankedListLoss(BaseMetricLossFunction):
    """Ranked List Loss: weighted hinges on far positives and near negatives, per anchor.

    ``RankedListLoss(margin, Tn, imbalance=0.5, alpha=None, Tp=0, distance=None, reducer=None, ...)``:
    ``loss_i = (1 - imbalance) L_P(i) + imbalance L_N(i)`` with positives beyond ``alpha - margin``
    and negatives within ``alpha`` (default ``alpha = 1 + margin / 2``), weighted by
    ``exp(Tp ...)`` / ``exp(Tn ...)``; default MeanReducer. ``Tp > 5`` or ``Tn > 5`` warns. Labels
    required; no ``indices_tuple``, no ``ref_emb``.

    Raises ``TypeError`` / ``ValueError`` for bad arguments, ``imbalance`` outside [0, 1], missing
    labels, ``indices_tuple`` or ``ref_emb``.
    Source: X. Wang et al., "Ranked List Loss for Deep Metric Learning", CVPR 2019.
    """

    def __init__(
        self, margin: float, Tn, imbalance: float = 0.5, alpha: float | None = None, Tp=0, **kwargs
    ) -> None:
        super().__init__(**kwargs)
        self.margin = check_float(margin, "margin")
        self.imbalance = check_float(imbalance, "imbalance")
        if not 0 <= self.imbalance <= 1:
            raise ValueError(f"imbalance must be between 0 and 1, got {imbalance}")
        self.alpha = check_float(alpha, "alpha") if alpha is not None else 1 + self.margin / 2
        self.Tp = check_float(Tp, "Tp")
        self.Tn = check_float(Tn, "Tn")
        if self.Tp > 5 or self.Tn > 5:
            warnings.warn(
                "Values of Tp or Tn are too high. Too large temperature values may lead to overflow."
            )

    def get_default_distance(self):
        return LpDistance(backend=self.backend)

    def __call__(
        self,
        embeddings: ArrayLike,
        labels: ArrayLike | None = None,
        indices_tuple: IndicesTuple | None = None,
        ref_emb: ArrayLike | None = None,
        ref_labels: ArrayLike | None = None,
    ):
        if labels is None:
            raise ValueError("labels are required by RankedListLoss")
        _reject_ref(type(self).__name__, embeddings, labels, ref_emb, ref_labels)
        _no_indices_tuple(type(self).__name__, indices_tuple)
        return super().__call__(embeddings, labels)

    forward = __call__

    def compute_loss(self, batch):
        _labels_required("RankedListLoss", batch)
        if batch.N == 0:
            return self.zero_losses(batch)
        mat, ctx = self._mat(batch)
        losses, cache = ranked_list_forward(
            mat, batch.labels, self.margin, self.alpha, self.Tp, self.Tn, self.imbalance
        )
        idx = np.arange(batch.N, dtype=np.int64)
        value, dl = self._reduce_generic(losses, idx, "element", batch)
        dmat = ranked_list_backward(dl, cache)
        dq, dr = self._grads(dmat.astype(np.float32), ctx)
        return {"loss": value}, dq, dr

    def __repr__(self) -> str:
        return (
            f"RankedListLoss(margin={self.margin}, Tn={self.Tn}, imbalance={self.imbalance}, "
            f"alpha={self.alpha}, Tp={self.Tp}, distance={self.distance!r}, reducer={self.reducer!r})"
        )
