"""FastAPLoss (Cakir, He, Xia, Kulis & Sclaroff 2019), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numbers

import numpy as np

from .. import utils
from .._typing import ArrayLike, IndicesTuple
from ..distances import LpDistance
from ._ranking_math import fast_ap_backward, fast_ap_forward
from .base_metric_loss_function import BaseMetricLossFunction


def _reject_ref(cls_name, embeddings, labels, ref_emb, ref_labels):
    """PML's ``ref_not_supported``: any ``ref_emb`` / ``ref_labels`` raises ValueError."""
    if ref_emb is not None:
        raise ValueError(f"ref_emb is not supported by {cls_name}")
    if ref_labels is not None and ref_labels is not labels:
        raise ValueError(f"ref_labels is not supported by {cls_name}")


def _labels_required(cls_name, batch):
    if batch.labels is None:
        raise ValueError(f"labels are required by {cls_name}")


def _no_indices_tuple(cls_name, indices_tuple):
    if indices_tuple is not None:
        raise ValueError(f"indices_tuple is not supported by {cls_name}")


def _check_int_like(v, name, minimum):
    """PML casts with ``int()``: accept integral reals, reject bools/strings/fractions."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    if not np.isfinite(v) or int(v) != v:
        raise ValueError(f"{name} must be an integer, got {v!r}")
    v = int(v)
    if v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v


class FastAPLoss(BaseMetricLossFunction):
    """FastAP: one minus a soft-binned average precision per anchor.

    ``FastAPLoss(num_bins=10, distance=None, reducer=None, ...)``: distances (default
    ``LpDistance(power=2)``) spread on ``num_bins + 1`` triangular pulses; ``loss_i = (1 -
    FastAP_i) w_i`` over the anchors with a positive (default MeanReducer). An ``indices_tuple``
    only weighs the anchors. Labels required; no ``ref_emb``.

    Raises ``TypeError`` for a distance that is not an LpDistance or a non-integer ``num_bins``;
    ``ValueError`` for ``num_bins < 1``, a distance without normalization or ``p != 2``, missing
    labels, ``ref_emb``.
    Source: F. Cakir et al., "Deep Metric Learning to Rank", CVPR 2019.
    """

    def __init__(self, num_bins=10, **kwargs) -> None:
        super().__init__(**kwargs)
        if not isinstance(self.distance, LpDistance):
            raise TypeError(
                f"FastAPLoss requires distance to be an LpDistance, got {type(self.distance).__name__}"
            )
        if self.distance.normalize_embeddings is not True or self.distance.p != 2:
            raise ValueError("FastAPLoss requires distance to be LpDistance(normalize_embeddings=True, p=2)")
        self.num_bins = _check_int_like(num_bins, "num_bins", 1)
        self.num_edges = self.num_bins + 1

    def get_default_distance(self):
        return LpDistance(power=2, backend=self.backend)

    def __call__(
        self,
        embeddings: ArrayLike,
        labels: ArrayLike | None = None,
        indices_tuple: IndicesTuple | None = None,
        ref_emb: ArrayLike | None = None,
        ref_labels: ArrayLike | None = None,
    ):
        _reject_ref(type(self).__name__, embeddings, labels, ref_emb, ref_labels)
        return super().__call__(embeddings, labels, indices_tuple)

    forward = __call__

    def compute_loss(self, batch):
        _labels_required("FastAPLoss", batch)
        lab = batch.labels
        weights = utils._miner_weights(batch.indices_tuple, lab, dtype=np.float64)
        pos, neg = utils.get_matches_and_diffs(lab)
        npos = pos.sum(axis=1)
        safe = npos > 0
        if not safe.any():
            return self.zero_losses(batch)
        mat, ctx = self._mat(batch)
        fa, cache = fast_ap_forward(mat, pos, neg, self.num_bins, float(2.0**self.distance.power))
        if not cache[8].any():  # no bin with h+ H+ > 0 and H > 0
            return self.zero_losses(batch)
        rows = np.nonzero(safe)[0].astype(np.int64)
        losses = (1.0 - fa[rows]) * weights[rows]
        value, dl = self._reduce_generic(losses, rows, "element", batch)
        dfa = np.zeros(batch.N)
        dfa[rows] = -np.asarray(dl, dtype=np.float64) * weights[rows]
        dmat = fast_ap_backward(dfa, cache)
        dq, dr = self._grads(dmat.astype(np.float32), ctx)
        return {"loss": value}, dq, dr

    def __repr__(self) -> str:
        return f"FastAPLoss(num_bins={self.num_bins}, distance={self.distance!r}, reducer={self.reducer!r})"
