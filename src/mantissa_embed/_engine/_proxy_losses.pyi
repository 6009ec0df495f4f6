"""Type stub of the compiled ``mantissa_embed._engine._proxy_losses`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = ["p2sgrad_forward_backward", "softmax_xent_forward_backward"]

def p2sgrad_forward_backward(
    x: Any,
    w: Any,
    labels: Any,
    dx: Any = None,
    dw: Any = None,
) -> Any: ...
def softmax_xent_forward_backward(
    logits: Any,
    labels: Any,
    scale: float = ...,
    grad_scale: float = ...,
    dlogits: Any = None,
) -> Any: ...
