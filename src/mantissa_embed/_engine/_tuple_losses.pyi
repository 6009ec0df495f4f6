"""Type stub of the compiled ``mantissa_embed._engine._tuple_losses`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = ["angular_loss_forward", "angular_loss_backward"]

def angular_loss_forward(
    A: Any,
    B: Any,
    c: Any,
    a: Any,
    p: Any,
    labels: Any,
    ref_labels: Any,
) -> Any: ...
def angular_loss_backward(
    A: Any,
    B: Any,
    c: Any,
    a: Any,
    p: Any,
    labels: Any,
    ref_labels: Any,
    losses: Any,
    dlosses: Any,
) -> Any: ...
