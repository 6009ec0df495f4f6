"""LpRegularizer (pytorch-metric-learning)."""
from __future__ import annotations

import numbers

import numpy as np

from .._validation import check_float
from .base_regularizer import BaseRegularizer, _lp_norm


class LpRegularizer(BaseRegularizer):
    """Penalize the Lp norm of each embedding: ``losses_i = ||x_i||_p ** power``, then the reducer.

    ``LpRegularizer(p=2, power=1, distance=None, reducer=None)``; default reduction: the mean
    over the rows. Gradient: ``power * ||x_i||^(power-1) * sign(x_ij) (|x_ij| / ||x_i||)^(p-1)``
    (``p=1``: ``sign``; ``p=inf``: split evenly between the entries attaining the max); 0 at a
    zero row (torch's subgradient).

    Parameters
    ----------
    p : float >= 1 or ``float("inf")``, default 2
    power : float > 0, default 1
    distance, reducer : see :class:`BaseRegularizer` (the distance is not used).

    Raises
    ------
    ValueError / TypeError
        ``p < 1`` (mantissa-embed supports norms only), ``power <= 0``, non-numeric arguments.

    Source: pytorch-metric-learning ``regularizers/lp_regularizer.py``.
    """

    def __init__(self, p=2, power=1, **kwargs):
        if isinstance(p, bool) or not isinstance(p, numbers.Real):
            raise TypeError(f"p must be a number, got {type(p).__name__}")
        if not (p == np.inf or (np.isfinite(p) and p >= 1)):
            raise ValueError(f"p must be >= 1 or inf, got {p}")
        self.p = float(p)
        self.power = check_float(power, "power", minimum=0.0, strict=True)
        super().__init__(**kwargs)

    def compute_loss(self, x):
        nrm, nback = _lp_norm(x, self.p)
        if self.power == 1:
            return nrm, np.arange(x.shape[0]), "element", nback, None
        reg = nrm ** self.power
        dreg = self.power * nrm ** (self.power - 1)
        return reg, np.arange(x.shape[0]), "element", (lambda dl: nback(dl * dreg)), None

    def __repr__(self):
        return f"LpRegularizer(p={self.p}, power={self.power})"
