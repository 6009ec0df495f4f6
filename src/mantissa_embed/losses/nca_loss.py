"""NCALoss (Goldberger et al. 2004), pytorch-metric-learning's formulation."""
from __future__ import annotations

import numpy as np

from .. import utils
from .._validation import check_float
from ..distances import LpDistance
from .base_metric_loss_function import BaseMetricLossFunction

#: -log of the smallest positive probability float32 can hold (PML's NCA drops rows whose
#: probability rounds to 0 in float32).
NCA_MAX_LOSS = 150 * float(np.log(2.0))


class NCALoss(BaseMetricLossFunction):
    """Neighbourhood components analysis loss.

    ``NCALoss(softmax_scale=1, distance=None, reducer=None, embedding_regularizer=None,
    embedding_reg_weight=1, backend="mantissa")``

    Each query i picks a reference j with probability ``softmax_j(-softmax_scale * d_ij)`` (with a
    similarity: ``softmax_j(softmax_scale * s_ij)``), over every reference except itself when the
    reference set is the batch; its loss is ``-log p_i`` where ``p_i`` is the probability of
    picking a reference of its own label::

        l_i = -w_i log sum_{j: y_j = y_i} softmax_j(-softmax_scale * d_ij)

    Default distance ``LpDistance(power=2)`` (squared Euclidean distance of L2-normalized
    embeddings). Queries with ``p_i = 0`` (no reference of their label, or a probability that
    is 0 in float32: ``-log p > 150 log 2``) are left out, as in PML. ``w_i`` is 1 without
    ``indices_tuple``; with one, ``w_i`` is how often i appears in it (anchors only with
    ``ref_emb``) divided by the largest count (``utils.convert_to_weights``), as PML's miner
    weights. Default reducer ``MeanReducer``: the mean over the queries kept
    (``terms = {"loss"}``). A batch of at most one embedding: loss 0.

    The row softmax runs in the engine (parallel over rows, stable log-sum-exp in double).

    References: J. Goldberger, S. Roweis, G. Hinton, R. Salakhutdinov, "Neighbourhood
    Components Analysis", NeurIPS 2004; pytorch-metric-learning ``losses/nca_loss.py``.

    Parameters
    ----------
    softmax_scale : float, default 1
    distance, reducer, embedding_regularizer, embedding_reg_weight, backend :
        See :class:`~mantissa_embed.losses.BaseMetricLossFunction`.

    Raises
    ------
    ValueError
        ``labels`` None (they are required), ``ref_emb`` without ``ref_labels``; bad call inputs.
    TypeError
        Non-numeric ``softmax_scale``.
    """

    def __init__(self, softmax_scale=1, **kwargs):
        self.softmax_scale = check_float(softmax_scale, "softmax_scale")
        super().__init__(**kwargs)
        self._query_is_ref = True

    def get_default_distance(self):
        return LpDistance(power=2, backend=self.backend)

    def __call__(self, embeddings, labels=None, indices_tuple=None, ref_emb=None, ref_labels=None):
        self._query_is_ref = ref_emb is None or ref_emb is embeddings
        return super().__call__(embeddings, labels, indices_tuple, ref_emb, ref_labels)

    forward = __call__

    def compute_loss(self, batch):
        if batch.N <= 1:
            return self.zero_losses(batch)
        if batch.labels is None:
            raise ValueError("labels are required for NCALoss")
        if batch.ref_labels is None:
            raise ValueError("ref_labels is required with ref_emb for NCALoss")
        using_ref = batch.ref is not None and not self._query_is_ref
        weights = utils._miner_weights(batch.indices_tuple, batch.labels, dtype=np.float32,
                                           using_ref=using_ref)
        mat, ctx = self._mat(batch)
        eng = self.engine
        kw = dict(scale=self.softmax_scale, exclude_self=self._query_is_ref and batch.M == batch.N,
                  inverted=self.distance.is_inverted)
        losses, lse, valid = eng.softmax_nll_fast_forward(mat, batch.labels, batch.ref_labels,
                                                     max_loss=NCA_MAX_LOSS, **kw)
        idx = np.flatnonzero(valid)
        self.stats = {"num_valid": len(idx)}
        if len(idx) == 0:
            return self.zero_losses(batch)
        value, dl = self._reduce_generic((losses * weights)[idx], idx, "element", batch)
        w = np.zeros(batch.N, dtype=np.float32)
        w[idx] = np.asarray(dl, dtype=np.float64) * weights[idx]
        dmat = eng.softmax_nll_fast_backward(mat, batch.labels, batch.ref_labels, lse, w, **kw)
        dq, dr = self._grads(dmat, ctx)
        return {"loss": value}, dq, dr

    def __repr__(self):
        return (f"NCALoss(softmax_scale={self.softmax_scale}, distance={self.distance!r}, "
                f"reducer={self.reducer!r})")
