"""Type stub of the compiled ``mantissa_embed._engine._dense`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""
from typing import Any

__all__ = ['relu_forward', 'relu_backward', 'all_finite', 'dense_forward', 'dense_backward', 'sgd_step', 'adam_step', 'leaky_relu_forward', 'leaky_relu_backward', 'dropout_forward', 'dropout_backward']

def relu_forward(x: Any, out: Any = None) -> Any: ...
def relu_backward(dy: Any, y: Any, dx: Any = None) -> Any: ...
def all_finite(x: Any) -> Any: ...
def dense_forward(
    x: Any,
    w: Any,
    b: Any,
    out: Any = None,
    act: Any = None,
    negative_slope: float = ...,
) -> Any: ...
def dense_backward(
    x: Any,
    w: Any,
    dy: Any,
    dx: Any = None,
    dw: Any = None,
    db: Any = None,
    need_dx: bool = True,
    accumulate: bool = False,
) -> Any: ...
def sgd_step(
    p: Any,
    g: Any,
    v: Any,
    lr: Any,
    momentum: float = ...,
    dampening: float = ...,
    weight_decay: float = ...,
    nesterov: bool = False,
    first: bool = False,
) -> Any: ...
def adam_step(
    p: Any,
    g: Any,
    m: Any,
    v: Any,
    t: Any,
    lr: Any,
    beta1: Any,
    beta2: Any,
    eps: Any,
    weight_decay: Any,
    decoupled: bool = False,
) -> Any: ...
def leaky_relu_forward(x: Any, negative_slope: float = ..., out: Any = None) -> Any: ...
def leaky_relu_backward(dy: Any, y: Any, negative_slope: float = ..., dx: Any = None) -> Any: ...
def dropout_forward(x: Any, mask: Any, out: Any = None) -> Any: ...
def dropout_backward(dy: Any, mask: Any, dx: Any = None) -> Any: ...
