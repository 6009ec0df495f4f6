"""Type stub of the compiled ``mantissa_embed._engine._optim`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = ["sgd_step", "adam_step"]

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
