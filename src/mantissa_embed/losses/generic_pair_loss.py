"""GenericPairLoss (pytorch-metric-learning): base of the losses over positive/negative pairs."""

from __future__ import annotations

import numpy as np

from .. import utils
from .base_metric_loss_function import BaseMetricLossFunction


class GenericPairLoss(BaseMetricLossFunction):
    """A loss over positive pairs ``(a1, p)`` and negative pairs ``(a2, n)`` (PML's ``GenericPairLoss``).

    Without ``indices_tuple`` every pair of the labels is used; triplets become pairs; when every
    array of the pair tuple has at most one element the loss is 0. Subclasses implement
    ``pair_loss_all`` (all pairs, fused) and ``pair_loss`` (given pairs), each returning
    ``(terms, dmat)``.
    """

    def compute_loss(self, batch):
        if batch.indices_tuple is None:
            n_pos, n_neg = utils._count_pairs(batch.labels, batch.ref_labels, batch.same)
            if n_pos <= 1 and n_neg <= 1:
                return self.zero_losses(batch)
            mat, ctx = self._mat(batch)
            terms, dmat = self.pair_loss_all(mat, batch)
        else:
            pairs = utils.convert_to_pairs(batch.indices_tuple, batch.labels, batch.ref_labels)
            if all(len(x) <= 1 for x in pairs):
                return self.zero_losses(batch)
            mat, ctx = self._mat(batch)
            terms, dmat = self.pair_loss(mat, pairs, batch)
        dq, dr = self._grads(dmat, ctx)
        return terms, dq, dr

    def pair_loss_all(self, mat, batch):
        raise NotImplementedError

    def pair_loss(self, mat, pairs, batch):
        raise NotImplementedError

    def _softmax_all(self, kernel, mat, batch, unreduced):
        """Every-pair loss through a fused softmax kernel (``engine.ntxent_all`` / ``supcon_all``).

        Mean and AvgNonZero reducers reduce in C; any other reducer gets the unreduced losses through
        ``unreduced(raw) -> (losses, indices, reduction_type, to_weights)`` and a second kernel call
        turns its weights into dmat. Returns ``({"loss": value}, dmat)``.
        """
        n_pos, n_neg = utils._count_pairs(batch.labels, batch.ref_labels, batch.same)
        if n_pos == 0 or n_neg == 0:
            return {"loss": 0.0}, np.zeros(mat.shape, dtype=np.float32)
        args = (mat, batch.labels, batch.ref_labels, self.temperature)
        kw = dict(exclude_self=batch.same, inverted=self.distance.is_inverted)
        mode = self._fused_mode()
        if mode is not None:
            value, dmat, _, st = kernel(*args, reduction=mode, **kw)
        else:
            _, _, raw, st = kernel(*args, losses=True, grad=False, **kw)
            losses, indices, rtype, to_weights = unreduced(raw)
            value, dl = self._reduce_generic(losses, indices, rtype, batch)
            _, dmat, _, _ = kernel(*args, reduction="weights", weights=to_weights(dl), **kw)
        self.stats = st
        return {"loss": value}, dmat
