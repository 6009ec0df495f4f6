"""LargeMarginSoftmaxLoss (Liu et al. 2016, "Large-Margin Softmax Loss for Convolutional Neural Networks")."""

from __future__ import annotations

import math

import numpy as np

from .._typing import ArrayLike
from .._validation import check_float
from ..distances import CosineSimilarity
from ._scratch import scratch
from .base_proxy_loss import BaseProxyLoss

__all__ = ["LargeMarginSoftmaxLoss"]


#: largest multiplicative angular margin m (cost O(m) per example; the papers use m <= 4)
_MAX_MARGIN = 1000


class LargeMarginSoftmaxLoss(BaseProxyLoss):
    """Softmax cross-entropy whose target logit uses the angle multiplied by ``margin``.

    ``LargeMarginSoftmaxLoss(num_classes, embedding_size, margin=4, scale=1, **kwargs)``: ``z_ij = s
    |w_j| |x_i| psi(theta)`` on the target, ``cos(theta)`` elsewhere, ``psi(theta) = (-1)^k
    cos(m theta) - 2k``, ``m = int(margin)`` in [1, 1000]. ``W`` (embedding_size, num_classes),
    N(0, 1); the distance must be CosineSimilarity. Other arguments: ``BaseProxyLoss``.
    ``get_logits(embeddings)`` gives the scaled logits without the margin.

    Raises ``TypeError`` for another distance; ``ValueError`` for ``int(margin)`` outside [1, 1000].
    Source: W. Liu et al., "Large-Margin Softmax Loss", ICML 2016 (arXiv:1612.02295).
    """

    def __init__(
        self, num_classes: int, embedding_size: int, margin: float = 4, scale: float = 1, **kwargs
    ) -> None:
        super().__init__(num_classes, embedding_size, **kwargs)
        self.margin = check_float(margin, "margin")
        self.scale = check_float(scale, "scale")
        self.init_margin()
        self.W = self._make_weight((self.embedding_size, self._num_weight_columns()), "W")

    def _num_weight_columns(self):
        return self.num_classes

    def _check_distance(self):
        if not isinstance(self.distance, CosineSimilarity):
            raise TypeError(
                f"{type(self).__name__} requires distance=CosineSimilarity(), "
                f"got {type(self.distance).__name__}"
            )
        super()._check_distance()

    def get_default_distance(self):
        return CosineSimilarity(backend=self.backend)

    def init_margin(self):
        self.margin = int(self.margin)
        if not 1 <= self.margin <= _MAX_MARGIN:
            raise ValueError(
                f"margin must be an integer in [1, {_MAX_MARGIN}] for {type(self).__name__}, "
                f"got {self.margin}"
            )
        self.max_n = self.margin // 2

    # -- pieces (float64, with derivatives) --------------------------------------------------------
    def _cosine64(self, x, W):
        """cosines (N, columns of W) and backward(dcos) -> (dx, dW)."""
        cos, back = self._similarity(x, W.T)

        def backward(dcos):
            dx, dR = back(dcos)
            return dx, dR.T

        return cos, backward

    def _target_cosines(self, x, W, labels, cos):
        """The target cosines ``cos[i, labels[i]]`` (N,) as float64, the input of ``_modify64``.
        (ArcFaceLoss refines the ones near +-1 in float64: its margin is ill-conditioned there.)"""
        return cos[np.arange(cos.shape[0]), labels].astype(np.float64)

    def _modify64(self, c):
        """Target cosines c (N,) -> ``(psi (N,), d psi / d c (N,))``, ``cos(m theta)`` as the Chebyshev
        polynomial ``T_m(c)`` by its recurrence (the binomial form loses precision for large m).
        """
        m = self.margin
        c = np.clip(c, -1.0, 1.0)
        t_prev, t = np.ones_like(c), c.copy()  # T_0, T_1
        u_prev, u = np.zeros_like(c), np.ones_like(c)  # U_{-1}, U_0
        for _ in range(1, m):
            t_prev, t = t, 2.0 * c * t - t_prev
            u_prev, u = u, 2.0 * c * u - u_prev
        val, der = t, m * u  # T_m(c), T_m'(c) = m U_{m-1}(c)
        theta = np.arccos(c)
        k = np.floor(theta / (math.pi / m))
        sign = np.where(k % 2 == 0, 1.0, -1.0)
        return sign * val - 2.0 * k, sign * der

    def _scale64(self, logits, x, W):
        """Multiply by |w_j| |x_i| scale; -> (scaled, backward(dscaled) -> (dlogits, dx, dW))."""
        xn = np.sqrt(np.einsum("ij,ij->i", x, x))
        wn = np.sqrt(np.sum(W * W, axis=0))
        f = self.scale
        out = logits * (wn[None, :] * xn[:, None] * f)

        def backward(dout):
            dlog = dout * (wn[None, :] * xn[:, None] * f)
            t = dout * logits * f
            dxn = t @ wn
            dwn = t.T @ xn
            dx = np.multiply(
                x,
                (dxn / np.where(xn > 0, xn, 1.0) * (xn > 0))[:, None],
                out=scratch("lms.dx1", x.shape, x.dtype),
            )
            dW = W * (dwn / np.where(wn > 0, wn, 1.0) * (wn > 0))[None, :]
            return dlog, dx, dW

        return out, backward

    # -- the loss --------------------------------------------------------------------------------
    def _forward64(self, x, labels, mw, W):
        N = x.shape[0]
        rows = np.arange(N)
        cos, cback = self._cosine64(x, W)
        psi, dpsi = self._modify64(self._target_cosines(x, W, labels, cos))  # (N,) float64
        logits = cos.copy()
        logits[rows, labels] = psi
        Z, sback = self._scale64(logits, x, W)
        losses, xback = self._xent(Z.astype(cos.dtype, copy=False), labels)  # in the precision of cos

        def backward(dls):
            dlog, dx1, dW1 = sback(xback(dls[0] * mw))
            dcos = dlog
            dcos[rows, labels] *= dpsi
            dx, dW = cback(dcos)
            if not (np.isscalar(dx1) and dx1 == 0):
                dx += dx1  # dx is this call's own array (fresh, or its scratch buffer)
            return dx, dW + dW1

        return [("loss", losses * mw, rows, "element", None)], backward

    def get_cosine(self, embeddings: ArrayLike):
        """(N, num_classes) float32 cosines to the class weights."""
        cos, _ = self._cosine64(self._logits_input(embeddings), self.W.data.astype(np.float64))
        return cos.astype(np.float32)

    def get_logits(self, embeddings: ArrayLike):
        """(N, num_classes) float32 scaled cosines (no margin)."""
        x = self._logits_input(embeddings)
        W = self.W.data.astype(np.float64)
        cos, _ = self._cosine64(x, W)
        z, _ = self._scale64(cos, x, W)
        return z.astype(np.float32)
