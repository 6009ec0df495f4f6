"""Type stub of the compiled ``mantissa_embed._engine._pair_losses`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = [
    "contrastive_loss_all",
    "contrastive_loss_pairs",
    "triplet_all_count",
    "triplet_loss_all",
    "triplet_loss_triplets",
]

def contrastive_loss_all(
    dist: Any,
    labels: Any,
    ref_labels: Any,
    pos_margin: float = ...,
    neg_margin: float = ...,
    exclude_self: bool = False,
    inverted: bool = False,
    nonzero_only: bool = True,
    ddist: Any = None,
    weights: Any = None,
    grad: bool = True,
    return_losses: bool = False,
) -> Any: ...
def contrastive_loss_pairs(
    dist: Any,
    a1: Any,
    p: Any,
    a2: Any,
    n: Any,
    pos_margin: float = ...,
    neg_margin: float = ...,
    inverted: bool = False,
    nonzero_only: bool = True,
    ddist: Any = None,
    weights: Any = None,
    grad: bool = True,
    return_losses: bool = False,
) -> Any: ...
def triplet_all_count(labels: Any, ref_labels: Any, exclude_self: bool = False) -> Any: ...
def triplet_loss_all(
    dist: Any,
    labels: Any,
    ref_labels: Any,
    margin: float = ...,
    exclude_self: bool = False,
    swap: bool = False,
    smooth: bool = False,
    inverted: bool = False,
    nonzero_only: bool = True,
    ddist: Any = None,
    weights: Any = None,
    grad: bool = True,
    return_losses: bool = False,
) -> Any: ...
def triplet_loss_triplets(
    dist: Any,
    a: Any,
    p: Any,
    n: Any,
    margin: float = ...,
    swap: bool = False,
    smooth: bool = False,
    inverted: bool = False,
    nonzero_only: bool = True,
    ddist: Any = None,
    weights: Any = None,
    grad: bool = True,
    return_losses: bool = False,
) -> Any: ...
