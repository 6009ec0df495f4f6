"""SelfSupervisedLoss: pytorch-metric-learning's wrapper for two views of the same inputs."""

from __future__ import annotations

import numpy as np

from .._checks.arrays import check_bool
from .._typing import ArrayLike
from .._validation import check_array
from .base_metric_loss_function import BaseMetricLossFunction, LossOutput


class SelfSupervisedLoss:
    """Wrap a metric loss so that ``embeddings`` and ``ref_emb`` are two views of the same N inputs.

    ``SelfSupervisedLoss(loss, symmetric=True)``; ``wrapper(embeddings (N, D), ref_emb (N, D))``
    with labels ``arange(N)``: symmetric, the loss sees the 2N rows of both views; otherwise
    ``loss(embeddings, arange(N), ref_emb=ref_emb, ref_labels=arange(N))``. Only PML's list of
    wrapped losses is accepted.

    Raises ``TypeError`` for an unsupported loss or a non-bool ``symmetric``; ``ValueError`` for
    views of different shapes, not 2-D, or not finite.
    Source: PML ``losses/self_supervised_loss.py``.
    """

    def __init__(self, loss: BaseMetricLossFunction, symmetric: bool = True) -> None:
        self.check_loss_support(type(loss).__name__)
        self.loss = loss
        self.symmetric = check_bool(symmetric, "symmetric")

    @staticmethod
    def supported_losses():
        return [
            "AngularLoss",
            "CircleLoss",
            "ContrastiveLoss",
            "GeneralizedLiftedStructureLoss",
            "IntraPairVarianceLoss",
            "LiftedStructureLoss",
            "MultiSimilarityLoss",
            "NTXentLoss",
            "SignalToNoiseRatioContrastiveLoss",
            "SupConLoss",
            "TripletMarginLoss",
            "NCALoss",
            "TupletMarginLoss",
        ]

    @classmethod
    def check_loss_support(cls, loss_name):
        if loss_name not in cls.supported_losses():
            raise TypeError(f"SelfSupervisedLoss not supported for {loss_name}")

    def __call__(self, embeddings: ArrayLike, ref_emb: ArrayLike):
        emb = check_array(embeddings, "embeddings", ndim=2)
        ref = check_array(ref_emb, "ref_emb", ndim=2)
        if ref.shape != emb.shape:
            raise ValueError(f"ref_emb must have the shape of embeddings {emb.shape}, got {ref.shape}")
        N = emb.shape[0]
        labels = np.arange(N, dtype=np.int64)
        if self.symmetric:
            out = self.loss(np.concatenate([emb, ref], axis=0), np.concatenate([labels, labels]))
            return LossOutput(
                loss=out.loss,
                grad=np.ascontiguousarray(out.grad[:N]),
                ref_grad=np.ascontiguousarray(out.grad[N:]),
                terms=out.terms,
                unreduced=getattr(out, "unreduced", None),
            )
        return self.loss(emb, labels, ref_emb=ref, ref_labels=labels.copy())

    forward = __call__

    def __repr__(self) -> str:
        return f"SelfSupervisedLoss(loss={self.loss!r}, symmetric={self.symmetric})"
