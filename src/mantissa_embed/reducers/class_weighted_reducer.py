"""ClassWeightedReducer (pytorch-metric-learning)."""

from __future__ import annotations

import numpy as np

from .._validation import check_array
from .base_reducer import BaseReducer


class ClassWeightedReducer(BaseReducer):
    """Mean of the losses, each multiplied by the weight of its (anchor's) class.

    ``ClassWeightedReducer(weights)``, ``weights`` 1-D, indexed by label value. Raises ``ValueError``
    for weights not 1-D or not finite and, at call time, missing labels or indices, or a label
    outside ``[0, len(weights))``; ``TypeError`` for non-numeric weights.
    """

    def __init__(self, weights) -> None:
        self.weights = check_array(weights, "weights", ndim=1, dtype=np.float64)

    def _helper(self, losses, idx, labels):
        if labels is None:
            raise ValueError("ClassWeightedReducer needs labels (the loss was called with labels=None)")
        if idx is None:
            raise ValueError("ClassWeightedReducer needs the indices of the losses")
        idx = np.asarray(idx, dtype=np.int64)
        if idx.shape != losses.shape:
            raise ValueError(f"indices must have the shape of losses {losses.shape}, got {idx.shape}")
        lab = np.asarray(labels)[idx]
        if lab.size and (lab.min() < 0 or lab.max() >= len(self.weights)):
            raise ValueError(f"labels must lie in [0, {len(self.weights)}) to index weights")
        n = losses.shape[0]
        if n == 0:
            return 0.0, np.zeros(0, dtype=np.float64)
        w = self.weights[lab]
        return float(np.sum(losses.astype(np.float64) * w) / n), w / n

    def element_reduction(self, losses, indices, embeddings, labels):
        return self._helper(losses, indices, labels)

    def _anchor(self, losses, indices, embeddings, labels):
        if indices is None:
            raise ValueError("ClassWeightedReducer needs the indices of the losses")
        return self._helper(losses, indices[0], labels)

    pos_pair_reduction = neg_pair_reduction = triplet_reduction = _anchor

    def __repr__(self) -> str:
        return f"ClassWeightedReducer(weights={self.weights.tolist()})"
