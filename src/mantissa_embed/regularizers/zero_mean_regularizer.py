"""ZeroMeanRegularizer (pytorch-metric-learning)."""

from __future__ import annotations

import numpy as np

from .base_regularizer import BaseRegularizer


class ZeroMeanRegularizer(BaseRegularizer):
    """The absolute sum of each embedding's entries, ``losses_i = |sum_j x_ij|`` (as PML).

    Source: T. Yuan et al., "Signal-to-Noise Ratio: A Robust Distance Metric for Deep Metric
    Learning", CVPR 2019.
    """

    def compute_loss(self, x):
        s = x.sum(axis=1)
        sg = np.sign(s)
        return (
            np.abs(s),
            np.arange(x.shape[0]),
            "element",
            (lambda dl: np.broadcast_to((dl * sg)[:, None], x.shape).copy()),
            None,
        )
