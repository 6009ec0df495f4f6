"""HistogramLoss (Ustinova & Lempitsky 2016), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numbers

import numpy as np

from .. import utils
from .._typing import ArrayLike, IndicesTuple
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
    """Histogram loss: the probability that a negative pair is more similar than a positive pair.

    ``HistogramLoss(n_bins=None, delta=None, distance=None, reducer=None, ...)``: soft histograms of
    the similarities (default CosineSimilarity) on the nodes ``-1 + r delta`` (``n_bins=100`` when
    both are None), ``loss = sum_r p-_r cumsum(p+)_r``, over the pairs of the triplets; already
    reduced. No ``ref_emb``.

    Raises ``TypeError`` for non-numeric ``n_bins`` / ``delta``; ``ValueError`` for ``n_bins < 1``,
    ``delta`` outside (0, 2], inconsistent values, no labels and no indices_tuple, ``ref_emb``.
    Source: E. Ustinova, V. Lempitsky, "Learning Deep Embeddings with Histogram Loss", NeurIPS 2016.
    """

    def __init__(self, n_bins=None, delta=None, **kwargs) -> None:
        super().__init__(**kwargs)
        for name, v in (("n_bins", n_bins), ("delta", delta)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
                raise TypeError(f"{name} must be a number, got {type(v).__name__}")
        if n_bins is not None and (not np.isfinite(n_bins) or n_bins < 1):
            raise ValueError(f"n_bins must be >= 1, got {n_bins!r}")
        if delta is not None and (not np.isfinite(delta) or not 0 < delta <= 2):
            raise ValueError(f"delta must be in (0, 2], got {delta!r}")
        if delta is not None and n_bins is not None and delta != 2 / n_bins:
            raise ValueError(
                f"delta and n_bins must satisfy delta = 2 / n_bins, got delta={delta} and n_bins={n_bins}"
            )
        if delta is None and n_bins is None:
            n_bins = 100
        self.delta = float(delta) if delta is not None else 2 / n_bins
        self.n_bins = n_bins if n_bins is not None else 2 / self.delta
        self.n_nodes = int(round(1 + 2 / self.delta))

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

    def __repr__(self) -> str:
        return f"HistogramLoss(delta={self.delta}, distance={self.distance!r}, reducer={self.reducer!r})"
