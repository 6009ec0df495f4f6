"""ArcFaceLoss (Deng et al. 2019, "ArcFace: Additive Angular Margin Loss for Deep Face Recognition")."""

from __future__ import annotations

import math

import numpy as np

from .._checks.distance import l2_normalize_rows
from .large_margin_softmax_loss import LargeMarginSoftmaxLoss

__all__ = ["ArcFaceLoss"]


class ArcFaceLoss(LargeMarginSoftmaxLoss):
    """Softmax cross-entropy with an additive angular margin on the target class.

    ``ArcFaceLoss(num_classes, embedding_size, margin=28.6, scale=64, **kwargs)``: target logit
    ``s cos(theta + m)`` (``s cos(theta) - s m sin(m)`` beyond ``pi - m``); ``margin`` in degrees,
    stored in radians. ``W`` (embedding_size, num_classes), N(0, 1). Other arguments: see
    ``LargeMarginSoftmaxLoss``.
    Source: J. Deng et al., "ArcFace", CVPR 2019 (arXiv:1801.07698).
    """

    def __init__(
        self, num_classes: int, embedding_size: int, margin: float = 28.6, scale: float = 64, **kwargs
    ) -> None:
        super().__init__(num_classes, embedding_size, margin=margin, scale=scale, **kwargs)

    def init_margin(self) -> None:
        self.margin = math.radians(self.margin)

    #: |target cosine| above which the float32 call path recomputes it in float64
    _REFINE_COS = 0.99

    def _target_columns(self, labels):
        """(N, K) candidate weight columns of each row's target (K = 1: the label's column)."""
        return labels[:, None]

    def _target_cosines(self, x, W, labels, cos):
        """As the base class, but float32 target cosines with ``|c| > 0.99`` are recomputed in float64
        (the margin's derivative amplifies their rounding near theta = 0 or pi).
        """
        c = super()._target_cosines(x, W, labels, cos)
        if x.dtype == np.float64:
            return c
        idx = np.nonzero(np.abs(c) > self._REFINE_COS)[0]
        if idx.size:
            xi = x[idx].astype(np.float64)
            l2_normalize_rows(xi, out=xi)
            w = W[:, self._target_columns(labels[idx])]  # (D, n, K)
            w = w / np.maximum(np.sqrt(np.einsum("dnk,dnk->nk", w, w)), 1e-12)
            c[idx] = np.einsum("nd,dnk->nk", xi, w).max(axis=1)
        return c

    def _modify64(self, c):
        m = self.margin
        inside = (c >= -1.0) & (c <= 1.0)
        cc = np.clip(c, -1.0, 1.0)
        theta = np.arccos(cc)
        s = np.sqrt(np.maximum(1.0 - cc * cc, 0.0))
        dtheta = np.where(inside & (s > 0), -1.0 / np.where(s > 0, s, 1.0), 0.0)
        use = theta <= math.pi - m
        val = np.where(use, np.cos(theta + m), np.cos(theta) - m * math.sin(m))
        der = np.where(use, -np.sin(theta + m), -np.sin(theta)) * dtheta
        return val, der

    def _scale64(self, logits, x, W):
        f = self.scale
        return logits * f, (lambda d: (d * f, 0.0, 0.0))
