"""ZeroMeanRegularizer (pytorch-metric-learning)."""
from __future__ import annotations

import numpy as np

from .base_regularizer import BaseRegularizer


class ZeroMeanRegularizer(BaseRegularizer):
    """Penalize the absolute sum of each embedding's entries: ``losses_i = |sum_j x_ij|``.

    ``ZeroMeanRegularizer(distance=None, reducer=None)``; default reduction: the mean over the
    rows. Gradient ``sign(sum_j x_ij)`` on every entry of row i (0 when the sum is 0, as
    ``torch.abs``). Note: as in PML, the sum runs over the embedding dimensions of each row.

    Source: pytorch-metric-learning ``regularizers/zero_mean_regularizer.py``; Y. Yuan et al.,
    "Signal-to-Noise Ratio: A Robust Distance Metric for Deep Metric Learning", CVPR 2019.
    """

    def compute_loss(self, x):
        s = x.sum(axis=1)
        sg = np.sign(s)
        return np.abs(s), np.arange(x.shape[0]), "element", (
            lambda dl: np.broadcast_to((dl * sg)[:, None], x.shape).copy()), None
