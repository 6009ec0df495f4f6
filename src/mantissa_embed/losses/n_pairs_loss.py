"""NPairsLoss (Sohn 2016), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numpy as np

from .. import utils
from .._typing import ArrayLike, IndicesTuple
from ..distances import DotProductSimilarity
from .base_metric_loss_function import BaseMetricLossFunction


def _check_no_ref(embeddings, labels, ref_emb, ref_labels, name):
    # PML's rule: a reference set is only accepted when it *is* the batch (the same objects)
    if ref_emb is not None and not (ref_emb is embeddings and ref_labels is labels):
        raise ValueError(f"ref_emb is not supported for {name}")
    if ref_emb is None and ref_labels is not None:
        raise ValueError("ref_labels was given without ref_emb")


def _first_pos_pairs(labels):
    """The first positive pair of each label in PML's row-major pair order, sorted by label.

    Without an indices_tuple that pair is (first index of the label, second index of the label)
    for every label occurring at least twice: the same pairs as enumerating all N^2 pairs and
    keeping each label's first, in O(N log N)."""
    order = np.argsort(labels, kind="stable")
    sl = labels[order]
    starts = np.flatnonzero(np.concatenate(([True], sl[1:] != sl[:-1])))
    counts = np.diff(np.append(starts, len(sl)))
    s = starts[counts >= 2]
    return order[s].astype(np.int64, copy=False), order[s + 1].astype(np.int64, copy=False)


class NPairsLoss(BaseMetricLossFunction):
    """Multi-class N-pair loss.

    ``NPairsLoss(distance=None, reducer=None, embedding_regularizer=None, embedding_reg_weight=1,
    backend="mantissa")``

    One positive pair (a_k, p_k) is kept per label: the first positive pair (in PML's pair order,
    or the order of ``indices_tuple``) of each anchor label, sorted by label. With the K x K
    similarity matrix ``S[k, l] = s(a_k, p_l)`` (default ``DotProductSimilarity()``, which
    normalizes the embeddings; with a distance, ``S = -d``), each pair charges the cross-entropy
    of picking its own positive::

        l_k = -log( exp(S[k, k]) / sum_l exp(S[k, l]) )

    Default reducer ``MeanReducer`` over the K pairs (element reduction, indices = the anchors):
    ``terms = {"loss"}``. No positive pair: loss 0. ``self.stats["num_pairs"] = K``.

    References: K. Sohn, "Improved Deep Metric Learning with Multi-class N-pair Loss Objective",
    NeurIPS 2016; pytorch-metric-learning ``losses/n_pairs_loss.py``.

    Raises
    ------
    ValueError
        ``labels`` None (required), a ``ref_emb`` other than the batch itself; bad call inputs.
    """

    def get_default_distance(self):
        return DotProductSimilarity(backend=self.backend)

    def __call__(
        self,
        embeddings: ArrayLike,
        labels: ArrayLike | None = None,
        indices_tuple: IndicesTuple | None = None,
        ref_emb: ArrayLike | None = None,
        ref_labels: ArrayLike | None = None,
    ):
        _check_no_ref(embeddings, labels, ref_emb, ref_labels, type(self).__name__)
        return super().__call__(embeddings, labels, indices_tuple)

    forward = __call__

    def compute_loss(self, batch):
        if batch.labels is None:
            raise ValueError("labels are required for NPairsLoss")
        if batch.indices_tuple is None:
            a, p = _first_pos_pairs(batch.labels)
        else:
            a, p, _, _ = utils.convert_to_pairs(batch.indices_tuple, batch.labels)
            _, first = np.unique(batch.labels[a], return_index=True)
            a, p = a[first], p[first]
        K = len(a)
        self.stats = {"num_pairs": K}
        if K == 0:
            return self.zero_losses(batch)
        mat, ctx = self.distance.forward_ctx(batch.emb[a], batch.emb[p], backend=self.backend, validate=False)
        ids = np.arange(K, dtype=np.int64)
        eng = self.engine
        kw = dict(scale=1.0, exclude_self=False, inverted=self.distance.is_inverted)
        losses, lse, _ = eng.softmax_nll_fast_forward(mat, ids, ids, **kw)
        value, dl = self._reduce_generic(losses, a, "element", batch)
        dmat = eng.softmax_nll_fast_backward(mat, ids, ids, lse, np.asarray(dl, dtype=np.float32), **kw)
        da, dp = self.distance.backward(dmat, ctx)
        dq = eng.scatter_add_forward(
            np.concatenate([da, dp]), np.concatenate([a, p]), np.zeros((batch.N, batch.D), dtype=np.float32)
        )
        return {"loss": value}, dq, None

    def __repr__(self) -> str:
        return f"NPairsLoss(distance={self.distance!r}, reducer={self.reducer!r})"
