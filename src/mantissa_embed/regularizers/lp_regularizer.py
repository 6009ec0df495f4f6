"""LpRegularizer (pytorch-metric-learning)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .._validation import check_float
from .base_regularizer import BaseRegularizer, _lp_norm


class LpRegularizer(BaseRegularizer):
    """The Lp norm of each embedding: ``losses_i = ||x_i||_p ** power``; the gradient is 0 at a zero row.

    ``LpRegularizer(p=2, power=1, distance=None, reducer=None)``. Raises ``ValueError`` /
    ``TypeError`` for ``p < 1`` (norms only; PML accepts any p), ``power <= 0``, non-numeric values.
    """

    def __init__(self, p: float = 2, power: float = 1, **kwargs: Any) -> None:
        if isinstance(p, bool) or not isinstance(p, numbers.Real):
            raise TypeError(f"p must be a number, got {type(p).__name__}")
        if not (p == np.inf or (np.isfinite(p) and p >= 1)):
            raise ValueError(f"p must be >= 1 or inf, got {p}")
        self.p: float = float(p)
        self.power: float = check_float(power, "power", minimum=0.0, strict=True)
        super().__init__(**kwargs)

    def compute_loss(self, x):
        nrm, nback = _lp_norm(x, self.p)
        if self.power == 1:
            return nrm, np.arange(x.shape[0]), "element", nback, None
        reg = nrm**self.power
        dreg = self.power * nrm ** (self.power - 1)
        return reg, np.arange(x.shape[0]), "element", (lambda dl: nback(dl * dreg)), None

    def __repr__(self) -> str:
        return f"LpRegularizer(p={self.p}, power={self.power})"
