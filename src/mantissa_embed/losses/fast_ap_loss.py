"""FastAPLoss (Cakir, He, Xia, Kulis & Sclaroff 2019), pytorch-metric-learning's formulation."""
from __future__ import annotations

import numbers

import numpy as np

from .. import utils
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
    """FastAP: one minus a histogram-binned approximation of average precision, per anchor.

    ``FastAPLoss(num_bins=10, distance=None, reducer=None, embedding_regularizer=None,
    embedding_reg_weight=1, backend="mantissa")``

    For anchor ``i`` with distances ``d_ij`` (default ``LpDistance(power=2)``: squared Euclidean
    distance of L2-normalized embeddings, in ``[0, 4]``), the distances are soft-binned with
    triangular pulses on ``num_bins + 1`` centres ``c_b = b * 2**power / num_bins``:
    ``pulse_b(d) = max(0, 1 - |d - c_b| / Delta)``, ``Delta = 2**power / num_bins``.
    With ``h+_ib = sum_{j pos} pulse_b(d_ij)``, ``h_ib = sum_{j != i} pulse_b(d_ij)`` (positives and
    negatives), ``H+ = cumsum_b h+``, ``H = cumsum_b h``:

        FastAP_i = (1 / |P_i|) * sum_b h+_ib H+_ib / H_ib     (terms with h+ H+ = 0 or H = 0 dropped)
        loss_i   = (1 - FastAP_i) * w_i

    over the anchors with at least one positive, reduced by ``reducer`` (default
    ``MeanReducer``, reduction type "element", indices = those anchors). ``w_i`` is 1 without an
    ``indices_tuple``; with one, PML's ``convert_to_weights`` (how often ``i`` occurs in the tuple,
    divided by the largest count): the tuple only weighs the anchors, every pair is still used.
    The gradient is that of this piecewise-linear binning (the pulses' slopes), as torch
    autograd gives it; a distance exactly on a centre gets 0 from that pulse.

    Inputs: ``embeddings`` (N, D), ``labels`` (N,) int (required), ``indices_tuple`` optional;
    ``ref_emb`` / ``ref_labels`` are not supported (ValueError). Output: ``LossOutput`` with
    ``grad`` (N, D) and ``terms = {"loss"}``. No anchor with a positive: loss 0, zero gradient.

    References: F. Cakir, K. He, X. Xia, B. Kulis, S. Sclaroff, "Deep Metric Learning to Rank",
    CVPR 2019; pytorch-metric-learning ``losses/fast_ap_loss.py``.

    Parameters
    ----------
    num_bins : int, default 10
        Number of bins (>= 1).
    distance : LpDistance, optional
        Must be an ``LpDistance`` with ``normalize_embeddings=True`` and ``p=2`` (any ``power``);
        default ``LpDistance(power=2)``.
    reducer, embedding_regularizer, embedding_reg_weight, backend :
        See :class:`~mantissa_embed.losses.BaseMetricLossFunction`.

    Raises
    ------
    TypeError
        ``distance`` not an LpDistance, ``num_bins`` not an integer.
    ValueError
        ``num_bins < 1``, a distance without normalization or with ``p != 2``, missing labels,
        ``ref_emb`` given; bad call inputs (see the base class).
    """

    def __init__(self, num_bins=10, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(self.distance, LpDistance):
            raise TypeError(f"FastAPLoss requires distance to be an LpDistance, got {type(self.distance).__name__}")
        if self.distance.normalize_embeddings is not True or self.distance.p != 2:
            raise ValueError("FastAPLoss requires distance to be LpDistance(normalize_embeddings=True, p=2)")
        self.num_bins = _check_int_like(num_bins, "num_bins", 1)
        self.num_edges = self.num_bins + 1

    def get_default_distance(self):
        return LpDistance(power=2, backend=self.backend)

    def __call__(self, embeddings, labels=None, indices_tuple=None, ref_emb=None, ref_labels=None):
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
        fa, cache = fast_ap_forward(mat, pos, neg, self.num_bins, float(2.0 ** self.distance.power))
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

    def __repr__(self):
        return f"FastAPLoss(num_bins={self.num_bins}, distance={self.distance!r}, reducer={self.reducer!r})"
