"""ThresholdReducer (pytorch-metric-learning)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_float
from .base_reducer import BaseReducer


class ThresholdReducer(BaseReducer):
    """Mean of the losses with ``low < loss < high`` (a None bound is not applied); 0 when none is.

    ``stats`` holds ``num_past_filter``, ``num_above_low``, ``num_below_high``. Raises ``ValueError``
    when both bounds are None or a bound is not finite, ``TypeError`` for a non-numeric bound.
    """

    def __init__(self, low=None, high=None) -> None:
        if low is None and high is None:
            raise ValueError("ThresholdReducer: at least one of low or high must be specified")
        self.low = None if low is None else check_float(low, "low")
        self.high = None if high is None else check_float(high, "high")
        self.stats: dict[str, Any] = {}

    def element_reduction(self, losses, indices, embeddings, labels):
        keep = np.ones(losses.shape[0], dtype=bool)
        self.stats = {}
        if self.low is not None:
            keep &= losses > self.low
            self.stats["num_above_low"] = int(keep.sum())
        if self.high is not None:
            below = losses < self.high
            self.stats["num_below_high"] = int((below & keep).sum())
            keep &= below
        cnt = int(keep.sum())
        self.stats["num_past_filter"] = cnt
        if cnt == 0:
            return 0.0, np.zeros(losses.shape[0], dtype=np.float64)
        return float(np.sum(losses[keep], dtype=np.float64) / cnt), keep / float(cnt)

    def __repr__(self) -> str:
        return f"ThresholdReducer(low={self.low}, high={self.high})"
