"""CrossEntropyLoss: softmax cross-entropy over classifier logits (``torch.nn.CrossEntropyLoss``)."""
from __future__ import annotations

import numpy as np

from .._validation import check_array, check_labels
from ..backend import BACKENDS, get_backend
from .base_metric_loss_function import LossOutput

__all__ = ["CrossEntropyLoss"]


class CrossEntropyLoss:
    r"""Softmax cross-entropy of logits against integer class labels, with its exact gradient.

    .. math::
        L = \frac{1}{N}\sum_{i=1}^{N} \Big(\log \sum_{j=1}^{C} e^{z_{ij}} - z_{i,y_i}\Big)

    For classifier-assisted training: put a :class:`~mantissa_embed.layers.Dense` classifier on
    the embeddings, call this loss on its output and pass ``out.grad`` to the classifier's
    ``backward``. It has no learnable weights (``parameters()`` is empty).

    Parameters
    ----------
    reduction : {"mean", "sum"}, default "mean"
        Mean over the batch (torch's default) or the sum.
    backend : {"mantissa", "numpy"}, default "mantissa"
        The C kernel (``engine.softmax_xent_forward_backward``) or its numpy twin.

    Call: ``out = loss_func(logits (N, C) float, labels (N,) int in [0, C))`` ->
    :class:`LossOutput` with ``loss``, ``grad = d loss / d logits`` (N, C) float32 and
    ``terms={"loss": loss}``. The computation is in double precision per row (log-sum-exp
    shifted by the row maximum, so large logits do not overflow). An empty batch gives loss 0
    and an empty gradient (torch returns NaN there).

    Raises
    ------
    ValueError
        logits not 2-D, with no column, or NaN/Inf; labels of the wrong length or outside
        ``[0, C)``; an unknown ``reduction`` or ``backend``.
    TypeError
        Non-numeric logits, non-integer labels.

    Source: ``torch.nn.CrossEntropyLoss`` (no class weights, no label smoothing).
    """

    def __init__(self, reduction="mean", backend="mantissa"):
        if reduction not in ("mean", "sum"):
            raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.reduction = reduction
        self.backend = backend

    def parameters(self):
        """No learnable weights: ``[]``."""
        return []

    def __call__(self, logits, labels):
        z = check_array(logits, "logits", ndim=2)
        N, C = z.shape
        if C == 0:
            raise ValueError(f"logits must have at least one column, got shape {z.shape}")
        lab = check_labels(labels, "labels", n=N)
        if N and (lab.min() < 0 or lab.max() >= C):
            raise ValueError(f"labels must be in [0, {C}) (one per logits column), "
                             f"got values in [{lab.min()}, {lab.max()}]")
        if N == 0:
            return LossOutput(loss=0.0, grad=np.zeros((0, C), np.float32), terms={"loss": 0.0})
        gs = 1.0 / N if self.reduction == "mean" else 1.0
        rl, dz = get_backend(self.backend).softmax_xent_forward_backward(z, lab, 1.0, gs)
        loss = float(np.sum(rl) * gs)
        return LossOutput(loss=loss, grad=dz, terms={"loss": loss})

    forward = __call__

    def __repr__(self):
        return f"CrossEntropyLoss(reduction={self.reduction!r})"
