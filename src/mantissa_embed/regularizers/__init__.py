"""Regularizers (pytorch-metric-learning's names): a penalty on embeddings or weights, with its gradient."""

from .base_regularizer import BaseRegularizer
from .center_invariant_regularizer import CenterInvariantRegularizer
from .lp_regularizer import LpRegularizer
from .regular_face_regularizer import RegularFaceRegularizer
from .sparse_centers_regularizer import SparseCentersRegularizer
from .zero_mean_regularizer import ZeroMeanRegularizer

__all__ = [
    "BaseRegularizer",
    "LpRegularizer",
    "ZeroMeanRegularizer",
    "CenterInvariantRegularizer",
    "RegularFaceRegularizer",
    "SparseCentersRegularizer",
]
