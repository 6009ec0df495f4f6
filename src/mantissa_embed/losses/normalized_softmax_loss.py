"""NormalizedSoftmaxLoss (Zhai & Wu 2018, "Classification is a Strong Baseline for Deep Metric Learning")."""

from __future__ import annotations

import numpy as np

from .._checks.distance import l2_normalize_rows
from .._typing import ArrayLike
from .._validation import check_float
from ..distances import DotProductSimilarity
from .base_proxy_loss import BaseProxyLoss

__all__ = ["NormalizedSoftmaxLoss"]


class NormalizedSoftmaxLoss(BaseProxyLoss):
    """Softmax cross-entropy over similarities to L2-normalized class weights, divided by a temperature.

    ``NormalizedSoftmaxLoss(num_classes, embedding_size, temperature=0.05, **kwargs)``: ``L_i =
    -log softmax_j(s(x_i, w_j / |w_j|) / T)[y_i]``; default DotProductSimilarity, MeanReducer. ``W``
    (embedding_size, num_classes), N(0, 1). Other arguments: ``BaseProxyLoss``.

    Raises ``ValueError`` for ``temperature <= 0``, and as ``BaseProxyLoss``.
    Source: A. Zhai, H.-Y. Wu, "Classification is a Strong Baseline for Deep Metric Learning",
    BMVC 2019 (arXiv:1811.12649).
    """

    def __init__(self, num_classes: int, embedding_size: int, temperature: float = 0.05, **kwargs) -> None:
        super().__init__(num_classes, embedding_size, **kwargs)
        self.temperature = check_float(temperature, "temperature", minimum=0.0, strict=True)
        self.W = self._make_weight((self.embedding_size, self.num_classes), "W")

    def get_default_distance(self):
        return DotProductSimilarity(backend=self.backend)

    def _logits64(self, x, W):
        R, bR = l2_normalize_rows(W.T)
        mat, back = self._similarity(x, R)
        sign = 1.0 if self.distance.is_inverted else -1.0
        T = self.temperature
        logits = sign * mat / T

        def backward(dlogits):
            dx, dR = back(sign * dlogits / T)
            return dx, bR(dR).T

        return logits, backward

    def _forward64(self, x, labels, mw, W):
        logits, lback = self._logits64(x, W)
        losses, cback = self._xent(logits, labels)
        N = x.shape[0]

        def backward(dls):
            return lback(cback(dls[0] * mw))

        return [("loss", losses * mw, np.arange(N), "element", None)], backward

    def get_logits(self, embeddings: ArrayLike):
        """(N, num_classes) float32 logits of ``embeddings`` (N, embedding_size)."""
        logits, _ = self._logits64(self._logits_input(embeddings), self.W.data.astype(np.float64))
        return logits.astype(np.float32)
