"""ProxyNCALoss (Movshovitz-Attias et al. 2017, "No Fuss Distance Metric Learning using Proxies")."""
from __future__ import annotations

import numpy as np

from .._validation import check_float
from ..distances import LpDistance
from .base_proxy_loss import BaseProxyLoss

__all__ = ["ProxyNCALoss"]


class ProxyNCALoss(BaseProxyLoss):
    r"""NCA against one learnable proxy per class.

    .. math::
        L_i = -\log \frac{\exp(-s\, d(x_i, p_{y_i}))}{\sum_{j=1}^{C} \exp(-s\, d(x_i, p_j))}

    with ``d`` the distance (default ``LpDistance(power=2)``: squared Euclidean distance of
    L2-normalized vectors; a similarity enters with a + sign) and ``s`` = ``softmax_scale``.
    Rows whose probability underflows to 0 are dropped (PML). Default reducer ``MeanReducer()``;
    an ``indices_tuple`` weights each example by how often it occurs as an anchor.

    Parameters
    ----------
    num_classes, embedding_size : int >= 1
    softmax_scale : float, default 1 (NCALoss's argument)
    weight_regularizer, weight_reg_weight, weight_init_func, seed, distance, reducer,
    embedding_regularizer, embedding_reg_weight, backend : see :class:`BaseProxyLoss`.

    Attributes
    ----------
    proxies : Parameter, shape (num_classes, embedding_size), initialized N(0, 1).

    ``get_logits(embeddings)`` returns ``distance(embeddings, proxies)`` (N, num_classes).

    Source: pytorch-metric-learning ``losses/proxy_losses.py`` and ``nca_loss.py``; arXiv:1703.07464.
    """

    _weight_attr = "proxies"
    _transposed = False
    _uses_ref_weights = True

    def __init__(self, num_classes, embedding_size, softmax_scale=1, **kwargs):
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

    def get_logits(self, embeddings):
        """(N, num_classes) float32 ``distance(embeddings, proxies)``."""
        mat, _ = self._similarity(self._logits_input(embeddings), self.proxies.data.astype(np.float64))
        return mat.astype(np.float32)
