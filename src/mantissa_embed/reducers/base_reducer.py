"""BaseReducer: turns per-element losses into one number, with the gradient of that reduction."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._typing import ArrayLike

REDUCTION_TYPES = ("element", "pos_pair", "neg_pair", "triplet", "already_reduced")


class BaseReducer:
    """Base class of reducers (PML's ``BaseReducer``, with an explicit backward).

    ``value, dlosses = reducer(losses, indices=None, reduction_type="element", embeddings=None,
    labels=None)``: ``losses`` (K,) or the scalar 0, ``reduction_type`` one of
    ``REDUCTION_TYPES``; ``dlosses`` (K,) float64 is d value / d losses (None for a zero loss).
    Subclasses implement ``element_reduction`` and may specialize ``pos_pair_reduction``,
    ``neg_pair_reduction``, ``triplet_reduction``.

    Raises ``ValueError`` for an unknown ``reduction_type`` or losses that are not 1-D.
    """

    #: The reduction this class computes, when a loss can run it fused (in the engine or in closed
    #: form): "mean", "avg_non_zero", "sum" or "divisor". Read through ``fused_mode``, which
    #: does not inherit it: a subclass may override a reduction, so it takes the generic path
    #: unless it sets ``fused`` itself.
    fused: str | None = None
    #: True when the reducer must know which sub-loss it reduces (MultipleReducers, DoNothingReducer).
    needs_loss_name = False
    #: True when the loss must record PML's unreduced loss dict (a DoNothingReducer, alone or inside).
    records_unreduced = False

    def fused_mode(self) -> str | None:
        """The fused reduction this exact reducer equals ("mean", "avg_non_zero", "sum", "divisor"), or None."""
        return vars(type(self)).get("fused")

    def leaf(self, name: str) -> BaseReducer:
        """The reducer that reduces sub-loss ``name`` (itself, except in MultipleReducers)."""
        return self

    def call_kwargs(self, divisor: float | None) -> dict[str, Any]:
        """Extra keyword arguments of a call: the loss's ``divisor`` for a DivisorReducer, else none."""
        return {}

    def __call__(
        self,
        losses: ArrayLike,
        indices: Any = None,
        reduction_type: str = "element",
        embeddings: ArrayLike | None = None,
        labels: ArrayLike | None = None,
    ) -> tuple[float, np.ndarray | None]:
        return self.forward(losses, indices, reduction_type, embeddings, labels)

    def forward(
        self,
        losses: ArrayLike,
        indices: Any = None,
        reduction_type: str = "element",
        embeddings: ArrayLike | None = None,
        labels: ArrayLike | None = None,
    ) -> tuple[float, np.ndarray | None]:
        if reduction_type not in REDUCTION_TYPES:
            raise ValueError(f"reduction_type must be one of {REDUCTION_TYPES}, got {reduction_type!r}")
        if np.isscalar(losses) and losses == 0:
            return 0.0, None
        losses = np.asarray(losses)
        if reduction_type == "already_reduced":
            if losses.size != 1:
                raise ValueError(f"an already reduced loss must be a scalar, got shape {losses.shape}")
            return float(losses.reshape(())), np.ones_like(losses, dtype=np.float64)
        if losses.ndim != 1:
            raise ValueError(f"losses must be 1-D, got shape {losses.shape}")
        fn = getattr(self, f"{reduction_type}_reduction")
        value, d = fn(losses, indices, embeddings, labels)
        return float(value), d

    def element_reduction(self, losses, indices, embeddings, labels):
        raise NotImplementedError

    def pos_pair_reduction(self, losses, indices, embeddings, labels):
        return self.element_reduction(losses, indices, embeddings, labels)

    def neg_pair_reduction(self, losses, indices, embeddings, labels):
        return self.element_reduction(losses, indices, embeddings, labels)

    def triplet_reduction(self, losses, indices, embeddings, labels):
        return self.element_reduction(losses, indices, embeddings, labels)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
