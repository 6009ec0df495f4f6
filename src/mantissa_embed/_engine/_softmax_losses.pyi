"""Type stub of the compiled ``mantissa_embed._engine._softmax_losses`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = [
    "ntxent_all",
    "supcon_all",
    "softmax_nll_forward",
    "softmax_nll_backward",
    "softmax_nll_fast_forward",
    "softmax_nll_fast_backward",
    "softmax_xent_rows_forward",
    "softmax_xent_rows_backward",
]

def ntxent_all(
    sim: Any,
    labels: Any,
    ref_labels: Any,
    temperature: Any,
    exclude_self: bool = False,
    inverted: bool = True,
    reduction: str = "mean",
    weights: Any = None,
    losses: bool = False,
    grad: bool = True,
) -> Any: ...
def supcon_all(
    sim: Any,
    labels: Any,
    ref_labels: Any,
    temperature: Any,
    exclude_self: bool = False,
    inverted: bool = True,
    reduction: str = "avg_non_zero",
    weights: Any = None,
    losses: bool = False,
    grad: bool = True,
) -> Any: ...
def softmax_nll_forward(
    sim: Any,
    labels: Any,
    ref_labels: Any,
    scale: float = ...,
    exclude_self: bool = False,
    inverted: bool = True,
    max_loss: float = ...,
) -> Any: ...
def softmax_nll_backward(
    sim: Any,
    labels: Any,
    ref_labels: Any,
    lse: Any,
    weights: Any,
    scale: float = ...,
    exclude_self: bool = False,
    inverted: bool = True,
) -> Any: ...
def softmax_nll_fast_forward(
    sim: Any,
    labels: Any,
    ref_labels: Any,
    scale: float = ...,
    exclude_self: bool = False,
    inverted: bool = True,
    max_loss: float = ...,
) -> Any: ...
def softmax_nll_fast_backward(
    sim: Any,
    labels: Any,
    ref_labels: Any,
    lse: Any,
    weights: Any,
    scale: float = ...,
    exclude_self: bool = False,
    inverted: bool = True,
) -> Any: ...
def softmax_xent_rows_forward(sim: Any, target: Any, scale: float = ...) -> Any: ...
def softmax_xent_rows_backward(
    sim: Any,
    target: Any,
    lse: Any,
    weights: Any,
    scale: float = ...,
) -> Any: ...
