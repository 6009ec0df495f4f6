"""NCALoss (Goldberger et al. 2004), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numpy as np

from .. import utils
from .._typing import ArrayLike, IndicesTuple
from .._validation import check_float
from ..distances import LpDistance
from .base_metric_loss_function import BaseMetricLossFunction

#: -log of the smallest positive probability float32 can hold (PML's NCA drops rows whose
#: probability rounds to 0 in float32).
NCA_MAX_LOSS = 150 * float(np.log(2.0))


class NCALoss(BaseMetricLossFunction):
    """Neighbourhood components analysis loss.

    ``NCALoss(softmax_scale=1, distance=None, reducer=None, ...)``: ``l_i = -w_i log sum_{j: y_j =
    y_i} softmax_j(-softmax_scale d_ij)`` over the references other than i (default
    ``LpDistance(power=2)``); queries whose probability is 0 in float32 are left out (as PML);
    default MeanReducer. Labels are required.

    Raises ``ValueError`` for missing labels, ``ref_emb`` without ``ref_labels``; ``TypeError`` for a
    non-numeric ``softmax_scale``.
    Source: J. Goldberger et al., "Neighbourhood Components Analysis", NeurIPS 2004.
    """

    def __init__(self, softmax_scale=1, **kwargs) -> None:
        self.softmax_scale = check_float(softmax_scale, "softmax_scale")
        super().__init__(**kwargs)
        self._query_is_ref = True

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
        weights = utils._miner_weights(
            batch.indices_tuple, batch.labels, dtype=np.float32, using_ref=using_ref
        )
        mat, ctx = self._mat(batch)
        eng = self.engine
        kw = dict(
            scale=self.softmax_scale,
            exclude_self=self._query_is_ref and batch.M == batch.N,
            inverted=self.distance.is_inverted,
        )
        losses, lse, valid = eng.softmax_nll_fast_forward(
            mat, batch.labels, batch.ref_labels, max_loss=NCA_MAX_LOSS, **kw
        )
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

    def __repr__(self) -> str:
        return (
            f"NCALoss(softmax_scale={self.softmax_scale}, distance={self.distance!r}, "
            f"reducer={self.reducer!r})"
        )
