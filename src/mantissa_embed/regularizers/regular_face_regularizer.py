"""RegularFaceRegularizer (pytorch-metric-learning)."""

from __future__ import annotations

import numpy as np

from .._checks.distance import l2_normalize_rows
from ..distances import CosineSimilarity
from .base_regularizer import BaseRegularizer, _check_cosine


class RegularFaceRegularizer(BaseRegularizer):
    """Push each class weight vector from its most similar other class: ``max_{j != i} cos(w_i, w_j)``.

    The argmax is not differentiated (as PML). The distance must be CosineSimilarity (``ValueError``).
    Source: K. Zhao et al., "RegularFace", CVPR 2019.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        _check_cosine(self.distance, "RegularFaceRegularizer")

    def get_default_distance(self):
        return CosineSimilarity()

    def compute_loss(self, w):
        k = w.shape[0]
        y, nback = l2_normalize_rows(w)
        cos = y @ y.T
        c1 = cos.copy()
        np.fill_diagonal(c1, -np.inf)
        j = np.argmax(c1, axis=1) if k else np.zeros(0, dtype=np.int64)
        rows = np.arange(k)

        def backward(dl):
            dc = np.zeros((k, k))
            dc[rows, j] = dl
            return nback((dc + dc.T) @ y)

        return cos[rows, j], rows, "element", backward, None
