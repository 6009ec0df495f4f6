"""CosFaceLoss (Wang et al. 2018, "CosFace: Large Margin Cosine Loss for Deep Face Recognition")."""

from __future__ import annotations

import numpy as np

from .._validation import check_float
from .large_margin_softmax_loss import LargeMarginSoftmaxLoss

__all__ = ["CosFaceLoss"]


class CosFaceLoss(LargeMarginSoftmaxLoss):
    """Softmax cross-entropy with an additive cosine margin: ``z_ij = s (cos theta_ij - m [j = y_i])``.

    ``CosFaceLoss(num_classes, embedding_size, margin=0.35, scale=64, **kwargs)``; ``W``
    (embedding_size, num_classes), N(0, 1). Other arguments: see ``LargeMarginSoftmaxLoss``.
    Source: H. Wang et al., "CosFace", CVPR 2018 (arXiv:1801.09414).
    """

    def __init__(
        self, num_classes: int, embedding_size: int, margin: float = 0.35, scale: float = 64, **kwargs
    ) -> None:
        super().__init__(num_classes, embedding_size, margin=margin, scale=scale, **kwargs)

    def init_margin(self) -> None:
        self.margin = check_float(self.margin, "margin")

    def _modify64(self, c):
        return c - self.margin, np.ones_like(c)

    def _scale64(self, logits, x, W):
        f = self.scale
        return logits * f, (lambda d: (d * f, 0.0, 0.0))
