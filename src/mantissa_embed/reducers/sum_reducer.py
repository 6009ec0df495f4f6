"""SumReducer (pytorch-metric-learning)."""

from __future__ import annotations

import numpy as np

from .mean_reducer import MeanReducer


class SumReducer(MeanReducer):
    """Sum of all the losses; 0 when there is none."""

    fused = "sum"

    def element_reduction(self, losses, indices, embeddings, labels):
        return float(np.sum(losses, dtype=np.float64)), np.ones(losses.shape[0], dtype=np.float64)
