"""Reducers (pytorch-metric-learning's names): per-element losses -> one loss, with its gradient."""
from .avg_non_zero_reducer import AvgNonZeroReducer
from .base_reducer import BaseReducer
from .mean_reducer import MeanReducer

__all__ = ["BaseReducer", "AvgNonZeroReducer", "MeanReducer"]
