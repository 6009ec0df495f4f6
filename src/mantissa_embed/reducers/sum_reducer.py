"""SumReducer (pytorch-metric-learning)."""
from __future__ import annotations

import numpy as np

from .mean_reducer import MeanReducer


class SumReducer(MeanReducer):
    """Sum of all per-element losses (zeros included); 0 when there is none.

    ``value = sum_k losses[k]``, ``d value / d losses = 1``. Every reduction type (element,
    pos_pair, neg_pair, triplet) sums. Source: pytorch-metric-learning ``reducers/sum_reducer.py``.
    """

    fused = "sum"

    def element_reduction(self, losses, indices, embeddings, labels):
        return float(np.sum(losses, dtype=np.float64)), np.ones(losses.shape[0], dtype=np.float64)
