"""ProxyAnchorLoss (Kim et al. 2020, "Proxy Anchor Loss for Deep Metric Learning")."""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike
from .._validation import check_float
from ..distances import CosineSimilarity
from ..reducers import DivisorReducer
from ._class_weights import kaiming_normal_fan_out_init
from ._proxy_math import logsumexp_masked64
from .base_proxy_loss import BaseProxyLoss

__all__ = ["ProxyAnchorLoss"]


class ProxyAnchorLoss(BaseProxyLoss):
    """Each class proxy is an anchor that pulls its batch positives and pushes its negatives.

    ``ProxyAnchorLoss(num_classes, embedding_size, margin=0.1, alpha=32, **kwargs)``: terms
    ``pos_loss`` (over the proxies with a positive) and ``neg_loss`` (over all proxies), default
    DivisorReducer. ``proxies`` (num_classes, embedding_size), ``kaiming_normal_(mode="fan_out")``.
    Other arguments: ``BaseProxyLoss``.
    Source: S. Kim et al., "Proxy Anchor Loss for Deep Metric Learning", CVPR 2020 (arXiv:2003.13911).
    """

    _weight_attr = "proxies"
    _transposed = False

    def __init__(
        self, num_classes: int, embedding_size: int, margin: float = 0.1, alpha: float = 32, **kwargs
    ) -> None:
        super().__init__(num_classes, embedding_size, **kwargs)
        self.margin = check_float(margin, "margin")
        self.alpha = check_float(alpha, "alpha")
        self.proxies = self._make_weight((self.num_classes, self.embedding_size), "proxies")

    def get_default_reducer(self):
        return DivisorReducer()

    def get_default_distance(self):
        return CosineSimilarity(backend=self.backend)

    def get_default_weight_init_func(self):
        return kaiming_normal_fan_out_init

    def _sub_loss_names(self):
        return ["pos_loss", "neg_loss"]

    def _forward64(self, x, labels, mw, P):
        N, C = x.shape[0], self.num_classes
        cos, back = self._similarity(x, P)
        shift = (mw - 1.0)[:, None]
        pos = np.zeros((N, C), dtype=bool)
        pos[np.arange(N), labels] = True
        neg = ~pos
        n_with_pos = int(pos.any(axis=0).sum())
        inv = self.distance.is_inverted
        m, a = self.margin, self.alpha
        pos_exp = (m - cos) if inv else (cos - m)  # distance.margin(cos, margin)
        neg_exp = (cos + m) if inv else (-m - cos)  # distance.margin(-margin, cos)
        pos_term, bp = logsumexp_masked64(a * pos_exp + shift, pos, add_one=True, axis=0)
        neg_term, bn = logsumexp_masked64(a * neg_exp + shift, neg, add_one=True, axis=0)
        idx = np.arange(C)

        def backward(dls):
            dA = bp(dls[0])
            dB = bn(dls[1])
            dcos = a * ((-dA + dB) if inv else (dA - dB))
            return back(dcos)

        return [
            ("pos_loss", pos_term, idx, "element", n_with_pos),
            ("neg_loss", neg_term, idx, "element", C),
        ], backward

    def get_logits(self, embeddings: ArrayLike):
        """(N, num_classes) float32 similarities ``distance(embeddings, proxies)``."""
        mat, _ = self._similarity(self._logits_input(embeddings), self.proxies.data.astype(np.float64))
        return mat.astype(np.float32)
