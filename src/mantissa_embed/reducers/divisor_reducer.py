"""DivisorReducer (pytorch-metric-learning)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .base_reducer import BaseReducer


class DivisorReducer(BaseReducer):
    """Sum of the losses divided by the ``divisor=`` the loss supplies; 0 when the divisor is 0.

    ``stats["divisor"]`` holds the last one. Raises ``ValueError`` without a divisor (PML: a
    ``KeyError``), ``TypeError`` for a non-numeric one.
    """

    fused = "divisor"

    def __init__(self) -> None:
        self.stats: dict[str, Any] = {}
        self._divisor: float | None = None

    def forward(
        self,
        losses,
        indices=None,
        reduction_type: str = "element",
        embeddings=None,
        labels=None,
        divisor=None,
    ):
        if reduction_type != "already_reduced":
            if divisor is None:
                raise ValueError(
                    "DivisorReducer needs a divisor: use it with a loss or regularizer that "
                    "supplies one (e.g. SparseCentersRegularizer)"
                )
            if isinstance(divisor, bool) or not isinstance(divisor, numbers.Real):
                raise TypeError(f"divisor must be a number, got {type(divisor).__name__}")
            self._divisor = float(divisor)
            self.stats = {"divisor": self._divisor}
        return super().forward(losses, indices, reduction_type, embeddings, labels)

    __call__ = forward

    def call_kwargs(self, divisor):
        return {"divisor": divisor}

    def element_reduction(self, losses, indices, embeddings, labels):
        n = losses.shape[0]
        if self._divisor == 0:
            return 0.0, np.zeros(n, dtype=np.float64)
        return float(np.sum(losses, dtype=np.float64) / self._divisor), np.full(n, 1.0 / self._divisor)
