"""A property-test kit for loss and miner authors (docs/testing.md).

- ``check_loss_gradients``: analytic gradients (embeddings, ``ref_emb``, the loss's
  parameters) against central finite differences;
- ``check_miner_invariants``: PML's miner contract on a miner's output;
- ``check_matches_pml``: values and gradients against pytorch-metric-learning (needs torch);
- hypothesis strategies (need ``hypothesis``): ``embeddings``, ``labels``,
  ``pair_tuples``, ``triplet_tuples``, ``batches``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .gradients import GradientCheck, check_loss_gradients
from .invariants import check_miner_invariants
from .pml import assert_loss_close, check_matches_pml, pml_reference

_STRATEGIES = ("Batch", "batches", "embeddings", "labels", "pair_tuples", "triplet_tuples")

__all__ = [
    "GradientCheck",
    "assert_loss_close",
    "check_loss_gradients",
    "check_matches_pml",
    "check_miner_invariants",
    "pml_reference",
    *_STRATEGIES,
]


if TYPE_CHECKING:  # the strategies load on first access (they need hypothesis)
    from .strategies import Batch, batches, embeddings, labels, pair_tuples, triplet_tuples  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in _STRATEGIES:
        try:
            module = importlib.import_module(".strategies", __name__)
        except ModuleNotFoundError as e:
            if e.name != "hypothesis":
                raise
            raise ImportError(
                f"mantissa_embed.testing.{name} needs hypothesis (pip install 'mantissa-embed[test]')"
            ) from None
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
