"""SelfSupervisedLoss: pytorch-metric-learning's wrapper for two views of the same inputs."""
from __future__ import annotations

import numpy as np

from .._validation import check_array
from ..distances.base_distance import _check_bool
from .base_metric_loss_function import LossOutput


class SelfSupervisedLoss:
    """Wrap a metric loss so that ``embeddings`` and ``ref_emb`` are two views (augmentations)
    of the same N inputs: row i of one is the positive of row i of the other.

    ``SelfSupervisedLoss(loss, symmetric=True)``; call ``out = wrapper(embeddings, ref_emb)``
    with embeddings and ref_emb both (N, D). The labels are ``arange(N)``:

    - ``symmetric=True``: the wrapped loss sees the 2N rows ``concat(embeddings, ref_emb)`` with
      labels ``concat(arange(N), arange(N))`` (each view is an anchor of the other);
    - ``symmetric=False``: ``loss(embeddings, arange(N), ref_emb=ref_emb, ref_labels=arange(N))``
      (a separate copy of the labels: no self pair is dropped).

    Returns the wrapped loss's :class:`LossOutput` with ``grad`` (N, D) wrt ``embeddings`` and
    ``ref_grad`` (N, D) wrt ``ref_emb``; ``terms`` are the wrapped loss's.

    Supported wrapped losses (PML's list, matched by class name): AngularLoss, CircleLoss,
    ContrastiveLoss, GeneralizedLiftedStructureLoss, IntraPairVarianceLoss, LiftedStructureLoss,
    MultiSimilarityLoss, NTXentLoss, SignalToNoiseRatioContrastiveLoss, SupConLoss,
    TripletMarginLoss, NCALoss, TupletMarginLoss.

    Source: pytorch-metric-learning ``losses/self_supervised_loss.py`` (issue #411).

    Raises
    ------
    TypeError
        An unsupported wrapped loss; ``symmetric`` not a bool.
    ValueError
        ``embeddings`` and ``ref_emb`` of different shapes, not 2-D, or not finite.
    """

    def __init__(self, loss, symmetric=True):
        self.check_loss_support(type(loss).__name__)
        self.loss = loss
        self.symmetric = _check_bool(symmetric, "symmetric")

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

    def __call__(self, embeddings, ref_emb):
        emb = check_array(embeddings, "embeddings", ndim=2)
        ref = check_array(ref_emb, "ref_emb", ndim=2)
        if ref.shape != emb.shape:
            raise ValueError(f"ref_emb must have the shape of embeddings {emb.shape}, got {ref.shape}")
        N = emb.shape[0]
        labels = np.arange(N, dtype=np.int64)
        if self.symmetric:
            out = self.loss(np.concatenate([emb, ref], axis=0), np.concatenate([labels, labels]))
            return LossOutput(loss=out.loss, grad=np.ascontiguousarray(out.grad[:N]),
                              ref_grad=np.ascontiguousarray(out.grad[N:]), terms=out.terms,
                              unreduced=getattr(out, "unreduced", None))
        return self.loss(emb, labels, ref_emb=ref, ref_labels=labels.copy())

    forward = __call__

    def __repr__(self):
        return f"SelfSupervisedLoss(loss={self.loss!r}, symmetric={self.symmetric})"
