"""Type stub of the compiled ``mantissa_embed._engine._pool`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = [
    "maxpool2d_forward",
    "maxpool2d_backward",
    "maxpool2d_relu_backward",
    "avgpool2d_forward",
    "avgpool2d_backward",
    "global_avgpool2d_forward",
    "global_avgpool2d_backward",
]

def maxpool2d_forward(
    x: Any,
    size: Any,
    stride: Any,
    out: Any = None,
    argmax: Any = None,
    pad: Any = 0,
) -> Any: ...
def maxpool2d_backward(dy: Any, argmax: Any, x_shape: Any, dx: Any = None) -> Any: ...
def maxpool2d_relu_backward(dy: Any, argmax: Any, y: Any, x_shape: Any, dx: Any = None) -> Any: ...
def avgpool2d_forward(x: Any, size: Any, stride: Any, out: Any = None) -> Any: ...
def avgpool2d_backward(dy: Any, x_shape: Any, size: Any, stride: Any, dx: Any = None) -> Any: ...
def global_avgpool2d_forward(x: Any, out: Any = None) -> Any: ...
def global_avgpool2d_backward(dy: Any, x_shape: Any, dx: Any = None) -> Any: ...
