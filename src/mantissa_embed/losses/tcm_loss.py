"""ThresholdConsistentMarginLoss (Zhang et al. 2023), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numpy as np

from .. import utils
from .._validation import check_float
from ..distances import CosineSimilarity
from .base_metric_loss_function import BaseMetricLossFunction


class ThresholdConsistentMarginLoss(BaseMetricLossFunction):
    """Threshold-Consistent Margin (TCM) loss: penalizes positive pairs less similar than
    ``margin_plus`` and negative pairs more similar than ``margin_minus``.

    ``ThresholdConsistentMarginLoss(lambda_plus=1.0, lambda_minus=1.0, margin_plus=0.9,
    margin_minus=0.5, distance=None, reducer=None, embedding_regularizer=None,
    embedding_reg_weight=1, backend="mantissa")``

    With ``s`` the cosine similarity of a pair,

        L+ = mean over positive pairs with s <= margin_plus of (margin_plus - s)   (0 if none)
        L- = mean over negative pairs with s >= margin_minus of (s - margin_minus) (0 if none)
        loss = lambda_plus L+ + lambda_minus L-

    already reduced (reduction type "already_reduced"). The pairs are all pairs the labels
    define (no self pairs), or those of ``indices_tuple`` (triplets ``(a, p, n)`` give pairs
    ``(a, p)`` and ``(a, n)``). No pair: loss 0, zero gradient.

    With ``ref_emb``, ``p`` / ``n`` index the reference set and ``out.ref_grad`` is its gradient
    (PML computes the pairs against ``ref_labels`` but then reads the embeddings of the batch;
    this class uses the reference set, as the argument means).

    References: Q. Zhang, L. Xu, Q. Tang, J. Fang, Y. N. Wu, J. Tighe, Y. Xing, "Threshold-Consistent
    Margin Loss for Open-World Deep Metric Learning", arXiv:2307.04047 (2023);
    pytorch-metric-learning ``losses/tcm_loss.py``.

    Parameters
    ----------
    lambda_plus, lambda_minus : float, default 1.0
    margin_plus : float, default 0.9
    margin_minus : float, default 0.5
    distance : CosineSimilarity, optional
        Must be a ``CosineSimilarity`` (the default).
    reducer, embedding_regularizer, embedding_reg_weight, backend :
        See ``BaseMetricLossFunction``.

    Inputs: ``embeddings`` (N, D), ``labels`` (N,) and/or ``indices_tuple``, optional ``ref_emb``
    (M, D) / ``ref_labels`` (M,). Output: ``LossOutput`` (``terms = {"loss"}``).

    Raises
    ------
    TypeError
        ``distance`` not a CosineSimilarity; non-numeric arguments.
    ValueError
        Non-finite arguments; bad call inputs (see the base class).
    """

    def __init__(
        self,
        lambda_plus: float = 1.0,
        lambda_minus: float = 1.0,
        margin_plus: float = 0.9,
        margin_minus: float = 0.5,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if not isinstance(self.distance, CosineSimilarity):
            raise TypeError(
                "ThresholdConsistentMarginLoss requires distance to be a CosineSimilarity, "
                f"got {type(self.distance).__name__}"
            )
        self.lambda_plus = check_float(lambda_plus, "lambda_plus")
        self.lambda_minus = check_float(lambda_minus, "lambda_minus")
        self.margin_plus = check_float(margin_plus, "margin_plus")
        self.margin_minus = check_float(margin_minus, "margin_minus")

    def get_default_distance(self):
        return CosineSimilarity(backend=self.backend)

    def compute_loss(self, batch):
        a1, p, a2, n = utils.convert_to_pairs(
            batch.indices_tuple, batch.labels, None if batch.same else batch.ref_labels
        )
        if len(a1) == 0 and len(a2) == 0:
            return self.zero_losses(batch)
        mat, ctx = self._mat(batch)
        sp = mat[a1, p].astype(np.float64)
        sn = mat[a2, n].astype(np.float64)
        mp = sp <= self.margin_plus
        mn = sn >= self.margin_minus
        pos = float(np.sum(self.margin_plus - sp[mp]) / mp.sum()) if mp.any() else 0.0
        neg = float(np.sum(sn[mn] - self.margin_minus) / mn.sum()) if mn.any() else 0.0
        loss = self.lambda_plus * pos + self.lambda_minus * neg
        value, dl = self._reduce_generic(np.array([loss]), None, "already_reduced", batch)
        scale = float(np.asarray(dl).reshape(-1)[0])
        N, M = mat.shape
        kp, kn = int(mp.sum()), int(mn.sum())
        vals = np.concatenate(
            [
                np.full(kp, -scale * self.lambda_plus / max(kp, 1)),
                np.full(kn, scale * self.lambda_minus / max(kn, 1)),
            ]
        ).astype(np.float32)
        index = np.concatenate([a1[mp] * M + p[mp], a2[mn] * M + n[mn]])
        dmat = self.engine.scatter_add_forward(vals, index, np.zeros(N * M, np.float32)).reshape(N, M)
        dq, dr = self._grads(dmat, ctx)
        return {"loss": value}, dq, dr

    def __repr__(self) -> str:
        return (
            f"ThresholdConsistentMarginLoss(lambda_plus={self.lambda_plus}, lambda_minus={self.lambda_minus}, "
            f"margin_plus={self.margin_plus}, margin_minus={self.margin_minus})"
        )
