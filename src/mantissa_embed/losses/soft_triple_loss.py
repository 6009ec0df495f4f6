"""SoftTripleLoss (Qian et al. 2019, "SoftTriple Loss: Deep Metric Learning Without Triplet Sampling")."""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike
from .._validation import check_float, check_int
from ..distances import CosineSimilarity
from ._class_weights import kaiming_uniform_init
from ._proxy_math import max_over_centers
from .base_proxy_loss import BaseProxyLoss

__all__ = ["SoftTripleLoss"]


class SoftTripleLoss(BaseProxyLoss):
    """Softmax over classes, each represented by ``centers_per_class`` soft-assigned centers.

    ``SoftTripleLoss(num_classes, embedding_size, centers_per_class=10, la=20, gamma=0.1,
    margin=0.01, **kwargs)``: relaxed class similarities ``S_ic = sum_k softmax_k(s_ick / gamma)
    s_ick``, then a softmax of ``la (S_ic - margin [c = y_i])``; default CosineSimilarity,
    MeanReducer. ``self.gamma`` stores ``1 / gamma`` (as PML). ``fc`` (embedding_size, num_classes *
    centers_per_class), ``kaiming_uniform_(a=sqrt(5))``. Other arguments: ``BaseProxyLoss``.

    Raises ``ValueError`` for a distance that is not a similarity, and as ``BaseProxyLoss``.
    Source: Q. Qian et al., "SoftTriple Loss", ICCV 2019 (arXiv:1909.05235).
    """

    _weight_attr = "fc"

    def __init__(
        self,
        num_classes: int,
        embedding_size: int,
        centers_per_class: int = 10,
        la=20,
        gamma: float = 0.1,
        margin: float = 0.01,
        **kwargs,
    ) -> None:
        super().__init__(num_classes, embedding_size, **kwargs)
        if not self.distance.is_inverted:
            raise ValueError(
                "SoftTripleLoss requires a similarity (distance.is_inverted), e.g. CosineSimilarity()"
            )
        self.centers_per_class = check_int(centers_per_class, "centers_per_class", minimum=1)
        self.la = check_float(la, "la")
        self.gamma = 1.0 / check_float(gamma, "gamma", minimum=0.0, strict=True)
        self.margin = check_float(margin, "margin")
        self.fc = self._make_weight((self.embedding_size, self.num_classes * self.centers_per_class), "fc")

    def get_default_distance(self):
        return CosineSimilarity(backend=self.backend)

    def get_default_weight_init_func(self):
        return kaiming_uniform_init

    def _logits64(self, x, fc):
        N, C, K = x.shape[0], self.num_classes, self.centers_per_class
        S, back = self._similarity(x, fc.T)
        S3 = S.reshape(N, C, K)
        g = self.gamma
        # reductions over the short last axis: numpy's max / sum(axis=2) cost one inner call per
        # (i, c); the max by K strided passes, the sums as a product with a vector of ones
        m = max_over_centers(S3)
        ones = np.ones(K, dtype=S.dtype)
        e = np.exp(g * (S3 - m[:, :, None]))
        P = e / (e @ ones)[:, :, None]
        H = (P * S3) @ ones

        def backward(dH):
            dS3 = P * dH[:, :, None] * (1.0 + g * (S3 - H[:, :, None]))
            dx, dR = back(dS3.reshape(N, C * K))
            return dx, dR.T

        return H, backward

    def _forward64(self, x, labels, mw, fc):
        N = x.shape[0]
        H, hback = self._logits64(x, fc)
        Z = H.copy()
        Z[np.arange(N), labels] -= self.margin
        Z *= self.la
        losses, cback = self._xent(Z, labels)

        def backward(dls):
            return hback(self.la * cback(dls[0] * mw))

        return [("loss", losses * mw, np.arange(N), "element", None)], backward

    def get_logits(self, embeddings: ArrayLike):
        """(N, num_classes) float32 relaxed class similarities."""
        H, _ = self._logits64(self._logits_input(embeddings), self.fc.data.astype(np.float64))
        return H.astype(np.float32)
