"""InstanceLoss (Zheng et al. 2020), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike, IndicesTuple
from .._validation import check_float
from ..distances import CosineSimilarity
from .base_metric_loss_function import BaseMetricLossFunction
from .n_pairs_loss import _check_no_ref


class InstanceLoss(BaseMetricLossFunction):
    """Instance loss: softmax cross-entropy over the batch's scaled cosine similarities.

    ``InstanceLoss(gamma=64, distance=None, reducer=None, ...)``: row i of ``gamma cos(x_i, x_j)``
    (N, N) classifies column ``t_i``, the index of ``labels[i]`` among the sorted distinct labels
    (as PML); default MeanReducer over the rows.

    Raises ``TypeError`` for a distance that is not a CosineSimilarity; ``ValueError`` for missing
    labels, an ``indices_tuple`` or a ``ref_emb``.
    Source: Z. Zheng et al., "Dual-Path Convolutional Image-Text Embeddings with Instance Loss",
    ACM TOMM 2020.
    """

    def __init__(self, gamma: float = 64, **kwargs) -> None:
        self.gamma = check_float(gamma, "gamma")
        super().__init__(**kwargs)
        if not isinstance(self.distance, CosineSimilarity):
            raise TypeError(
                f"InstanceLoss requires the distance to be CosineSimilarity, "
                f"got {type(self.distance).__name__}"
            )

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
        _check_no_ref(embeddings, labels, ref_emb, ref_labels, type(self).__name__)
        if labels is None:
            raise ValueError("labels are required for InstanceLoss")
        if indices_tuple is not None:
            raise ValueError("indices_tuple is not supported for InstanceLoss")
        return super().__call__(embeddings, labels)

    forward = __call__

    def compute_loss(self, batch):
        if batch.N == 0:
            return self.zero_losses(batch)
        _, t = np.unique(batch.labels, return_inverse=True)
        t = np.ascontiguousarray(t.reshape(-1), dtype=np.int64)
        cols = np.arange(batch.N, dtype=np.int64)
        mat, ctx = self._mat(batch)
        eng = self.engine
        # one target column per row: the single-target row cross-entropy kernel
        losses, lse = eng.softmax_xent_rows_forward(mat, t, self.gamma)
        value, dl = self._reduce_generic(losses, cols, "element", batch)
        dmat = eng.softmax_xent_rows_backward(mat, t, lse, np.asarray(dl, dtype=np.float32), self.gamma)
        dq, dr = self._grads(dmat, ctx)
        return {"loss": value}, dq, dr

    def __repr__(self) -> str:
        return f"InstanceLoss(gamma={self.gamma}, distance={self.distance!r}, reducer={self.reducer!r})"
