"""SphereFaceLoss (Liu et al. 2017, "SphereFace: Deep Hypersphere Embedding for Face Recognition")."""

from __future__ import annotations

import numpy as np

from .large_margin_softmax_loss import LargeMarginSoftmaxLoss

__all__ = ["SphereFaceLoss"]


class SphereFaceLoss(LargeMarginSoftmaxLoss):
    """LargeMarginSoftmaxLoss with normalized class weights: ``z_ij = s |x_i| psi(theta)`` on the target.

    ``SphereFaceLoss(num_classes, embedding_size, margin=4, scale=1, **kwargs)``; ``W``
    (embedding_size, num_classes), N(0, 1). Other arguments: ``LargeMarginSoftmaxLoss``.
    Source: W. Liu et al., "SphereFace", CVPR 2017 (arXiv:1704.08063).
    """

    def _scale64(self, logits, x, W):
        xn = np.sqrt(np.einsum("ij,ij->i", x, x))
        f = self.scale
        out = logits * xn[:, None] * f

        def backward(dout):
            dxn = np.sum(dout * logits, axis=1) * f
            dx = x * (dxn / np.where(xn > 0, xn, 1.0) * (xn > 0)).astype(x.dtype)[:, None]
            return dout * xn[:, None] * f, dx, 0.0

        return out, backward
