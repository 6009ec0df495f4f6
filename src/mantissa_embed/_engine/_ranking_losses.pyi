"""Type stub of the compiled ``mantissa_embed._engine._ranking_losses`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = [
    "pnp_rank_forward",
    "pnp_rank_backward",
    "dsm_triplet_hist",
    "dsm_triplet_loss",
    "dsm_triplet_backward",
]

def pnp_rank_forward(sim: Any, labels: Any, anneal: Any) -> Any: ...
def pnp_rank_backward(drk: Any, sim: Any, labels: Any, anneal: Any) -> Any: ...
def dsm_triplet_hist(
    mat: Any,
    labels: Any,
    ref_labels: Any,
    exclude_self: Any,
    min_val: Any,
    delta: Any,
    num_bins: Any,
    momentum: Any,
) -> Any: ...
def dsm_triplet_loss(
    mat: Any,
    labels: Any,
    ref_labels: Any,
    exclude_self: Any,
    min_val: Any,
    delta: Any,
    cdf: Any,
) -> Any: ...
def dsm_triplet_backward(
    mat: Any,
    labels: Any,
    ref_labels: Any,
    exclude_self: Any,
    min_val: Any,
    delta: Any,
    cdf: Any,
    g_u: Any,
    scale: Any,
    momentum: Any,
) -> Any: ...
