"""Type stub of the compiled ``mantissa_embed._engine._conv`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = [
    "conv2d_workspace_size",
    "conv2d_forward",
    "conv2d_pool2_forward",
    "conv2d_pool2_chain_workspace_size",
    "conv2d_pool2_chain_forward",
    "conv2d_backward",
]

def conv2d_workspace_size(x_shape: Any, w_shape: Any, stride: Any, pad: Any) -> int: ...
def conv2d_forward(
    x: Any,
    w: Any,
    b: Any,
    stride: Any,
    pad: Any,
    out: Any = None,
    workspace: Any = None,
    act: Any = None,
    negative_slope: float = ...,
) -> Any: ...
def conv2d_pool2_forward(
    x: Any,
    w: Any,
    b: Any,
    stride: Any,
    pad: Any,
    out: Any = None,
    workspace: Any = None,
    act: Any = None,
    negative_slope: float = ...,
) -> Any: ...
def conv2d_pool2_chain_workspace_size(
    x_shape: Any,
    w1_shape: Any,
    stride1: Any,
    pad1: Any,
    w2_shape: Any,
    stride2: Any,
    pad2: Any,
) -> int: ...
def conv2d_pool2_chain_forward(
    x: Any,
    w1: Any,
    b1: Any,
    stride1: Any,
    pad1: Any,
    w2: Any,
    b2: Any,
    stride2: Any,
    pad2: Any,
    act1: Any = None,
    act2: Any = None,
    out: Any = None,
    workspace: Any = None,
    negative_slope1: float = ...,
    negative_slope2: float = ...,
) -> Any: ...
def conv2d_backward(
    x: Any,
    w: Any,
    dy: Any,
    stride: Any,
    pad: Any,
    dx: Any = None,
    dw: Any = None,
    db: Any = None,
    need_dx: bool = True,
    accumulate: bool = False,
    workspace: Any = None,
    need_db: bool = True,
) -> Any: ...
