"""SphereFaceLoss (Liu et al. 2017, "SphereFace: Deep Hypersphere Embedding for Face Recognition")."""
from __future__ import annotations

import numpy as np

from .large_margin_softmax_loss import LargeMarginSoftmaxLoss

__all__ = ["SphereFaceLoss"]


class SphereFaceLoss(LargeMarginSoftmaxLoss):
    r"""LargeMarginSoftmaxLoss with normalized class weights: logits scaled by ``|x_i| * scale`` only.

    .. math::
        z_{ij} = s\,\lVert x_i\rVert \begin{cases} \psi(\theta_{i,y_i}) & j = y_i \\ \cos\theta_{ij} & j \ne y_i \end{cases}

    with :math:`\psi` the multiplicative angular margin of :class:`LargeMarginSoftmaxLoss`.

    Parameters
    ----------
    num_classes, embedding_size : int >= 1
    margin : int, default 4
    scale : float, default 1
    other keyword arguments: see :class:`LargeMarginSoftmaxLoss`.

    Attributes
    ----------
    W : Parameter, shape (embedding_size, num_classes), initialized N(0, 1).

    Source: pytorch-metric-learning ``losses/sphereface_loss.py``; arXiv:1704.08063.
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
