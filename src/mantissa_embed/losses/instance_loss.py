"""InstanceLoss (Zheng et al. 2020), pytorch-metric-learning's formulation."""
from __future__ import annotations

import numpy as np

from .._validation import check_float
from ..distances import CosineSimilarity
from .base_metric_loss_function import BaseMetricLossFunction
from .n_pairs_loss import _check_no_ref


class InstanceLoss(BaseMetricLossFunction):
    """Instance loss: a softmax cross-entropy over the batch's scaled cosine similarities.

    ``InstanceLoss(gamma=64, distance=None, reducer=None, embedding_regularizer=None,
    embedding_reg_weight=1, backend="mantissa")``

    With ``S = gamma * cos(x_i, x_j)`` (N x N, diagonal included) and ``t_i`` the index of
    ``labels[i]`` among the sorted distinct labels (``numpy.unique(..., return_inverse=True)``),
    row i is a classification of column ``t_i``, as PML does::

        l_i = -log( exp(S[i, t_i]) / sum_j exp(S[i, j]) )

    Default reducer ``MeanReducer`` (over the N rows, element reduction): ``terms = {"loss"}``.
    The distance must be a :class:`~mantissa_embed.distances.CosineSimilarity` (default).

    References: Z. Zheng, L. Zheng, M. Garrett, Y. Yang, M. Xu, Y.-D. Shen, "Dual-Path
    Convolutional Image-Text Embeddings with Instance Loss", ACM TOMM 2020;
    pytorch-metric-learning ``losses/instance_loss.py``.

    Parameters
    ----------
    gamma : float, default 64
    distance, reducer, embedding_regularizer, embedding_reg_weight, backend :
        See :class:`~mantissa_embed.losses.BaseMetricLossFunction`.

    Raises
    ------
    TypeError
        A distance that is not a CosineSimilarity; non-numeric gamma.
    ValueError
        ``labels`` None, an ``indices_tuple`` or a ``ref_emb`` (neither is supported); bad inputs.
    """

    def __init__(self, gamma=64, **kwargs):
        self.gamma = check_float(gamma, "gamma")
        super().__init__(**kwargs)
        if not isinstance(self.distance, CosineSimilarity):
            raise TypeError(f"InstanceLoss requires the distance to be CosineSimilarity, "
                            f"got {type(self.distance).__name__}")

    def get_default_distance(self):
        return CosineSimilarity(backend=self.backend)

    def __call__(self, embeddings, labels=None, indices_tuple=None, ref_emb=None, ref_labels=None):
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

    def __repr__(self):
        return f"InstanceLoss(gamma={self.gamma}, distance={self.distance!r}, reducer={self.reducer!r})"
