"""SparseCentersRegularizer (pytorch-metric-learning)."""

from __future__ import annotations

import numpy as np

from .._checks.distance import l2_normalize_rows
from .._validation import check_int
from ..distances import CosineSimilarity
from ..reducers import DivisorReducer
from .base_regularizer import BaseRegularizer, _check_cosine

# PML's small_val for float32 weights; float64's tiny would make 1/loss_ij overflow float32
_TINY = float(np.finfo(np.float32).tiny)


class SparseCentersRegularizer(BaseRegularizer):
    """Pull together the centers of each class (SoftTriple's center regularizer).

    ``SparseCentersRegularizer(num_classes, centers_per_class, distance=None, reducer=None)``: for
    each same-class pair ``loss = sqrt(2 + tiny - min(2 cos(w_i, w_j), 2))``, default DivisorReducer
    (divisor 2 * pairs). Raises ``ValueError`` for ``centers_per_class < 2``, ``num_classes < 1``,
    another distance than CosineSimilarity, a weight matrix without ``num_classes *
    centers_per_class`` rows.
    Source: Q. Qian et al., "SoftTriple Loss", ICCV 2019.
    """

    def __init__(self, num_classes: int, centers_per_class: int, **kwargs) -> None:
        self.num_classes = check_int(num_classes, "num_classes", minimum=1)
        self.centers_per_class = check_int(centers_per_class, "centers_per_class", minimum=2)
        super().__init__(**kwargs)
        _check_cosine(self.distance, "SparseCentersRegularizer")
        c, t = self.num_classes, self.centers_per_class
        iu, ju = np.triu_indices(t, k=1)
        base = (np.arange(c) * t)[:, None]
        self._i = (base + iu).ravel()
        self._j = (base + ju).ravel()

    def get_default_distance(self):
        return CosineSimilarity()

    def get_default_reducer(self):
        return DivisorReducer()

    def compute_loss(self, w):
        total = self.num_classes * self.centers_per_class
        if w.shape[0] != total:
            raise ValueError(f"x must have num_classes * centers_per_class = {total} rows, got {w.shape[0]}")
        y, nback = l2_normalize_rows(w)
        cos = y @ y.T
        i, j = self._i, self._j
        s = 2.0 * cos[i, j]
        active = s <= 2.0
        reg = np.sqrt(2.0 + _TINY - np.minimum(s, 2.0))
        self.stats = {"same_class_center_sim": float(cos[i, j].mean())}

        def backward(dl):
            dc = np.zeros((total, total))
            dc[i, j] = dl * active * (-1.0 / reg)  # the same-class pairs i < j are distinct
            return nback((dc + dc.T) @ y)

        return reg, np.arange(len(reg)), "element", backward, {"divisor": 2 * len(reg)}

    def __repr__(self) -> str:
        return f"SparseCentersRegularizer(num_classes={self.num_classes}, centers_per_class={self.centers_per_class})"
