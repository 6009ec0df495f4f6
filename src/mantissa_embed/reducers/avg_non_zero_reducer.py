"""AvgNonZeroReducer (pytorch-metric-learning)."""

from __future__ import annotations

import numpy as np

from .base_reducer import BaseReducer


class AvgNonZeroReducer(BaseReducer):
    """Mean of the losses that are > 0 (PML's ``ThresholdReducer(low=0)``); 0 when none is."""

    low = 0.0
    fused = "avg_non_zero"

    def element_reduction(self, losses, indices, embeddings, labels):
        keep = losses > self.low
        cnt = int(keep.sum())
        if cnt == 0:
            return 0.0, np.zeros(losses.shape[0], dtype=np.float64)
        return float(np.sum(losses[keep], dtype=np.float64) / cnt), keep / float(cnt)
