"""AvgNonZeroReducer (pytorch-metric-learning)."""
from __future__ import annotations

import numpy as np

from .base_reducer import BaseReducer


class AvgNonZeroReducer(BaseReducer):
    """Mean of the per-element losses that are > 0; 0 (and a zero gradient) when none is.

    The default reducer of ContrastiveLoss and TripletMarginLoss. PML implements it as a
    ``ThresholdReducer(low=0)``: elements with ``loss > 0`` (strictly) are kept.
    Source: pytorch-metric-learning ``reducers/avg_non_zero_reducer.py``.
    """

    low = 0.0
    fused = "avg_non_zero"

    def element_reduction(self, losses, indices, embeddings, labels):
        keep = losses > self.low
        cnt = int(keep.sum())
        if cnt == 0:
            return 0.0, np.zeros(losses.shape[0], dtype=np.float64)
        return float(np.sum(losses[keep], dtype=np.float64) / cnt), keep / float(cnt)
