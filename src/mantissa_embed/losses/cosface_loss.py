"""CosFaceLoss (Wang et al. 2018, "CosFace: Large Margin Cosine Loss for Deep Face Recognition")."""
from __future__ import annotations

import numpy as np

from .._validation import check_float
from .large_margin_softmax_loss import LargeMarginSoftmaxLoss

__all__ = ["CosFaceLoss"]


class CosFaceLoss(LargeMarginSoftmaxLoss):
    r"""Softmax cross-entropy with an additive cosine margin on the target class.

    .. math::
        z_{ij} = s\,(\cos\theta_{ij} - m\,\mathbf{1}_{j = y_i})

    Parameters
    ----------
    num_classes, embedding_size : int >= 1
    margin : float, default 0.35
    scale : float, default 64
    other keyword arguments: see :class:`LargeMarginSoftmaxLoss`.

    Attributes
    ----------
    W : Parameter, shape (embedding_size, num_classes), initialized N(0, 1).

    Source: pytorch-metric-learning ``losses/cosface_loss.py``; arXiv:1801.09414.
    """

    def __init__(self, num_classes, embedding_size, margin=0.35, scale=64, **kwargs):
        super().__init__(num_classes, embedding_size, margin=margin, scale=scale, **kwargs)

    def init_margin(self):
        self.margin = check_float(self.margin, "margin")

    def _modify64(self, c):
        return c - self.margin, np.ones_like(c)

    def _scale64(self, logits, x, W):
        f = self.scale
        return logits * f, (lambda d: (d * f, 0.0, 0.0))
