"""Reducers (pytorch-metric-learning's names): per-element losses -> one loss, with its gradient."""

from .avg_non_zero_reducer import AvgNonZeroReducer
from .base_reducer import BaseReducer
from .class_weighted_reducer import ClassWeightedReducer
from .divisor_reducer import DivisorReducer
from .do_nothing_reducer import DoNothingReducer
from .mean_reducer import MeanReducer
from .multiple_reducers import MultipleReducers
from .per_anchor_reducer import PerAnchorReducer
from .sum_reducer import SumReducer
from .threshold_reducer import ThresholdReducer

__all__ = [
    "BaseReducer",
    "AvgNonZeroReducer",
    "MeanReducer",
    "SumReducer",
    "ThresholdReducer",
    "ClassWeightedReducer",
    "DivisorReducer",
    "PerAnchorReducer",
    "MultipleReducers",
    "DoNothingReducer",
]
