"""NormalizedSoftmaxLoss (Zhai & Wu 2018, "Classification is a Strong Baseline for Deep Metric Learning")."""
from __future__ import annotations

import numpy as np

from ..distances import DotProductSimilarity
from ._proxy_math import l2_normalize64
from .base_proxy_loss import BaseProxyLoss

__all__ = ["NormalizedSoftmaxLoss"]


class NormalizedSoftmaxLoss(BaseProxyLoss):
    r"""Softmax cross-entropy over similarities to L2-normalized class weights, divided by a temperature.

    .. math::
        L_i = -\log \frac{\exp(s(x_i, \hat w_{y_i}) / T)}{\sum_{j=1}^{C} \exp(s(x_i, \hat w_j) / T)},
        \quad \hat w_j = w_j / \lVert w_j \rVert

    with ``s`` the distance's similarity (a distance ``d`` enters as ``-d``). Default distance
    ``DotProductSimilarity()`` (embeddings not normalized), default reducer ``MeanReducer()``.

    Parameters
    ----------
    num_classes : int >= 1
    embedding_size : int >= 1
    temperature : float > 0, default 0.05
    weight_regularizer, weight_reg_weight, weight_init_func, seed, distance, reducer,
    embedding_regularizer, embedding_reg_weight, backend :
        See :class:`~mantissa_embed.losses.BaseProxyLoss`. The weight
        regularizer sees the (num_classes, embedding_size) rows ``W.T``.

    Attributes
    ----------
    W : Parameter, shape (embedding_size, num_classes)
        Class weights (one column per class), initialized N(0, 1) (PML's default).

    Call: ``out = loss_func(embeddings (N, embedding_size), labels (N,), indices_tuple=None)``;
    terms ``loss`` (+ ``weight_reg_loss``, ``embedding_reg_loss``). ``get_logits(embeddings)``
    returns the (N, num_classes) float32 logits.

    Raises: see :class:`BaseProxyLoss` (``ValueError`` for ``temperature <= 0``).

    Source: pytorch-metric-learning ``losses/normalized_softmax_loss.py``; arXiv:1811.12649.
    """

    def __init__(self, num_classes, embedding_size, temperature=0.05, **kwargs):
        super().__init__(num_classes, embedding_size, **kwargs)
        from .._validation import check_float
        self.temperature = check_float(temperature, "temperature", minimum=0.0, strict=True)
        self.W = self._make_weight((self.embedding_size, self.num_classes), "W")

    def get_default_distance(self):
        return DotProductSimilarity(backend=self.backend)

    def _logits64(self, x, W):
        R, bR = l2_normalize64(W.T)
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

    def get_logits(self, embeddings):
        """(N, num_classes) float32 logits of ``embeddings`` (N, embedding_size)."""
        logits, _ = self._logits64(self._logits_input(embeddings), self.W.data.astype(np.float64))
        return logits.astype(np.float32)
