"""HistogramLoss (Ustinova & Lempitsky 2016), pytorch-metric-learning's formulation."""
from __future__ import annotations

import numbers

import numpy as np

from .. import utils
from ..distances import CosineSimilarity
from ._ranking_math import histogram_loss_forward_backward
from .base_metric_loss_function import BaseMetricLossFunction
from .fast_ap_loss import _reject_ref


def _unique_sorted_pairs(i, j):
    """PML's ``filter_pairs``: each pair as (min, max), duplicates removed, lexicographic order."""
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    if len(lo) == 0:
        return lo, hi
    u = np.unique(np.stack([lo, hi], axis=1), axis=0)
    return u[:, 0], u[:, 1]


class HistogramLoss(BaseMetricLossFunction):
    """Histogram loss: the probability that a random negative pair is more similar than a random
    positive pair, estimated with soft histograms.

    ``HistogramLoss(n_bins=None, delta=None, distance=None, reducer=None,
    embedding_regularizer=None, embedding_reg_weight=1, backend="mantissa")``

    The similarities ``s`` (default ``CosineSimilarity``, values in [-1, 1]) of the positive pairs
    and of the negative pairs are each put in a soft histogram on the nodes
    ``t_r = -1 + r * delta``, ``r = 0..R`` (``R + 1 = round(1 + 2 / delta)`` nodes): a value with
    ``t_r <= s < t_{r+1}`` adds ``(t_{r+1} - s) / delta`` to node ``r`` and ``(s - t_r) / delta`` to
    node ``r + 1``; each histogram is divided by its number of pairs, giving ``p+`` and ``p-``.

        loss = sum_r p-_r * sum_{q <= r} p+_q

    The pairs are those of the triplets ``(a, p, n)`` (all triplets of the labels, or those of the
    ``indices_tuple``; pairs tuples are turned into triplets as in PML): the unordered pairs
    ``{a, p}`` and ``{a, n}``, each counted once and read at ``s[min, max]``. The loss is already
    reduced (reduction type "already_reduced"). No triplet: loss 0, zero gradient. The gradient
    is that of the piecewise-linear binning (torch autograd on PML's formula).

    Deviation (documented): a similarity of exactly 1 falls on the last node (PML raises an index
    error); values outside [-1, 1] (possible with another ``distance``) are extrapolated linearly
    from the end bins.

    References: E. Ustinova, V. Lempitsky, "Learning Deep Embeddings with Histogram Loss",
    NeurIPS 2016; pytorch-metric-learning ``losses/histogram_loss.py``.

    Parameters
    ----------
    n_bins : int, optional
        Number of bins; default 100 when ``delta`` is None too.
    delta : float, optional
        Bin width; default ``2 / n_bins``. If both are given, ``delta == 2 / n_bins`` is required.
    distance, reducer, embedding_regularizer, embedding_reg_weight, backend :
        See :class:`~mantissa_embed.losses.BaseMetricLossFunction`; default distance
        ``CosineSimilarity()``.

    Inputs: ``embeddings`` (N, D), ``labels`` (N,) and/or ``indices_tuple``; ``ref_emb`` is not
    supported (ValueError). Output: ``LossOutput`` (``terms = {"loss"}``).

    Raises
    ------
    TypeError
        Non-numeric ``n_bins`` / ``delta``.
    ValueError
        ``n_bins < 1``, ``delta <= 0`` or > 2, inconsistent ``n_bins`` and ``delta``, both labels
        and indices_tuple None, ``ref_emb`` given; bad call inputs (see the base class).
    """

    def __init__(self, n_bins=None, delta=None, **kwargs):
        super().__init__(**kwargs)
        for name, v in (("n_bins", n_bins), ("delta", delta)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
                raise TypeError(f"{name} must be a number, got {type(v).__name__}")
        if n_bins is not None and (not np.isfinite(n_bins) or n_bins < 1):
            raise ValueError(f"n_bins must be >= 1, got {n_bins!r}")
        if delta is not None and (not np.isfinite(delta) or not 0 < delta <= 2):
            raise ValueError(f"delta must be in (0, 2], got {delta!r}")
        if delta is not None and n_bins is not None and delta != 2 / n_bins:
            raise ValueError(f"delta and n_bins must satisfy delta = 2 / n_bins, got delta={delta} "
                             f"and n_bins={n_bins}")
        if delta is None and n_bins is None:
            n_bins = 100
        self.delta = float(delta) if delta is not None else 2 / n_bins
        self.n_bins = n_bins if n_bins is not None else 2 / self.delta
        self.n_nodes = int(round(1 + 2 / self.delta))

    def get_default_distance(self):
        return CosineSimilarity(backend=self.backend)

    def __call__(self, embeddings, labels=None, indices_tuple=None, ref_emb=None, ref_labels=None):
        _reject_ref(type(self).__name__, embeddings, labels, ref_emb, ref_labels)
        return super().__call__(embeddings, labels, indices_tuple)

    forward = __call__

    def _pairs(self, batch):
        if batch.indices_tuple is None:
            lab = batch.labels
            N = len(lab)
            pos, neg = utils.get_matches_and_diffs(lab)
            has_pos = pos.any(axis=1)
            has_neg = neg.any(axis=1)
            if not (has_pos & has_neg).any():
                return None
            up = np.triu(np.ones((N, N), dtype=bool), 1)
            pm = pos & up & has_neg[:, None]
            nm = neg & up & (has_pos[:, None] | has_pos[None, :])
            ap = tuple(x.astype(np.int64) for x in np.nonzero(pm))
            an = tuple(x.astype(np.int64) for x in np.nonzero(nm))
            return ap, an
        a, p, n = utils.convert_to_triplets(batch.indices_tuple, batch.labels, None, t_per_anchor="all")
        if len(a) == 0:
            return None
        return _unique_sorted_pairs(a, p), _unique_sorted_pairs(a, n)

    def compute_loss(self, batch):
        pairs = self._pairs(batch)
        if pairs is None:
            return self.zero_losses(batch)
        (pi, pj), (ni, nj) = pairs
        mat, ctx = self._mat(batch)
        loss, dpos, dneg = histogram_loss_forward_backward(mat[pi, pj], mat[ni, nj], self.delta, self.n_nodes)
        value, dl = self._reduce_generic(np.array([loss]), None, "already_reduced", batch)
        scale = float(np.asarray(dl).reshape(-1)[0])
        dmat = np.zeros(mat.shape, dtype=np.float64)
        dmat[pi, pj] += scale * dpos
        dmat[ni, nj] += scale * dneg
        dq, dr = self._grads(dmat.astype(np.float32), ctx)
        return {"loss": value}, dq, dr

    def __repr__(self):
        return f"HistogramLoss(delta={self.delta}, distance={self.distance!r}, reducer={self.reducer!r})"
