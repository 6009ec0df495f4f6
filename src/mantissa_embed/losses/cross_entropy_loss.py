"""CrossEntropyLoss: softmax cross-entropy over classifier logits (``torch.nn.CrossEntropyLoss``)."""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike
from .._validation import check_array, check_labels
from ..backend import BACKENDS, get_backend
from .base_metric_loss_function import LossOutput

__all__ = ["CrossEntropyLoss"]


class CrossEntropyLoss:
    """Softmax cross-entropy of logits against integer labels, with its exact gradient.

    ``CrossEntropyLoss(reduction="mean", backend="mantissa")``; ``loss_func(logits (N, C), labels (N,)
    in [0, C))`` returns a ``LossOutput`` whose ``grad`` is dL/d logits (N, C) float32. No
    learnable weights. An empty batch gives 0 (torch gives NaN).

    Raises ``ValueError`` for logits not 2-D, without columns or with NaN/Inf, bad labels, an unknown
    ``reduction``; ``TypeError`` for non-numeric logits or non-integer labels.
    Source: ``torch.nn.CrossEntropyLoss`` (no class weights, no label smoothing).
    """

    def __init__(self, reduction: str = "mean", backend: str = "mantissa") -> None:
        if reduction not in ("mean", "sum"):
            raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.reduction = reduction
        self.backend = backend

    def parameters(self):
        """No learnable weights: ``[]``."""
        return []

    def __call__(self, logits, labels: ArrayLike):
        z = check_array(logits, "logits", ndim=2)
        N, C = z.shape
        if C == 0:
            raise ValueError(f"logits must have at least one column, got shape {z.shape}")
        lab = check_labels(labels, "labels", n=N)
        if N and (lab.min() < 0 or lab.max() >= C):
            raise ValueError(
                f"labels must be in [0, {C}) (one per logits column), "
                f"got values in [{lab.min()}, {lab.max()}]"
            )
        if N == 0:
            return LossOutput(loss=0.0, grad=np.zeros((0, C), np.float32), terms={"loss": 0.0})
        gs = 1.0 / N if self.reduction == "mean" else 1.0
        rl, dz = get_backend(self.backend).softmax_xent_forward_backward(z, lab, 1.0, gs)
        loss = float(np.sum(rl) * gs)
        return LossOutput(loss=loss, grad=dz, terms={"loss": loss})

    forward = __call__

    def __repr__(self) -> str:
        return f"CrossEntropyLoss(reduction={self.reduction!r})"
