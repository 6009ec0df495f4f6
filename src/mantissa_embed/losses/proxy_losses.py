"""ProxyNCALoss (Movshovitz-Attias et al. 2017, "No Fuss Distance Metric Learning using Proxies")."""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike
from .._validation import check_float
from ..distances import LpDistance
from .base_proxy_loss import BaseProxyLoss

__all__ = ["ProxyNCALoss"]


class ProxyNCALoss(BaseProxyLoss):
    """NCA against one learnable proxy per class.

    ``ProxyNCALoss(num_classes, embedding_size, softmax_scale=1, **kwargs)``: ``L_i = -log
    softmax_j(-s d(x_i, p_j))[y_i]`` (default ``LpDistance(power=2)``), rows with probability 0
    dropped (as PML); default MeanReducer. ``proxies`` (num_classes, embedding_size), N(0, 1).
    Other arguments: ``BaseProxyLoss``.
    Source: Y. Movshovitz-Attias et al., "No Fuss Distance Metric Learning using Proxies", ICCV 2017
    (arXiv:1703.07464).
    """

    _weight_attr = "proxies"
    _transposed = False
    _uses_ref_weights = True

    def __init__(self, num_classes: int, embedding_size: int, softmax_scale=1, **kwargs) -> None:
        super().__init__(num_classes, embedding_size, **kwargs)
        self.softmax_scale = check_float(softmax_scale, "softmax_scale")
        self.proxies = self._make_weight((self.num_classes, self.embedding_size), "proxies")
        self.proxy_labels = np.arange(self.num_classes)

    def get_default_distance(self):
        return LpDistance(power=2, backend=self.backend)

    def _forward64(self, x, labels, mw, P):
        mat, back = self._similarity(x, P)
        sign = 1.0 if self.distance.is_inverted else -1.0
        s = self.softmax_scale
        z = s * sign * mat
        losses, cback = self._xent(z, labels)
        nz = np.exp(-losses) != 0
        idx = np.nonzero(nz)[0]

        def backward(dls):
            dl = np.zeros(x.shape[0])
            dl[idx] = dls[0] * mw[idx]
            return back(s * sign * cback(dl))

        return [("loss", losses[idx] * mw[idx], idx, "element", None)], backward

    def get_logits(self, embeddings: ArrayLike):
        """(N, num_classes) float32 ``distance(embeddings, proxies)``."""
        mat, _ = self._similarity(self._logits_input(embeddings), self.proxies.data.astype(np.float64))
        return mat.astype(np.float32)
