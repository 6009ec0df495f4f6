"""MeanReducer (pytorch-metric-learning)."""

from __future__ import annotations

import numpy as np

from .base_reducer import BaseReducer


class MeanReducer(BaseReducer):
    """Mean of all the losses (zeros included); 0 when there is none."""

    fused = "mean"

    def element_reduction(self, losses, indices, embeddings, labels):
        n = losses.shape[0]
        if n == 0:
            return 0.0, np.zeros(0, dtype=np.float64)
        return float(np.sum(losses, dtype=np.float64) / n), np.full(n, 1.0 / n)
