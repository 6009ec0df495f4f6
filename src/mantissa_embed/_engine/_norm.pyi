"""Type stub of the compiled ``mantissa_embed._engine._norm`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = ["batchnorm_forward", "batchnorm_backward", "batchnorm_fold"]

def batchnorm_forward(
    x: Any,
    gamma: Any,
    beta: Any,
    running_mean: Any,
    running_var: Any,
    training: Any,
    momentum: float = ...,
    eps: float = ...,
    out: Any = None,
    save_mean: Any = None,
    save_invstd: Any = None,
    act: Any = None,
) -> Any: ...
def batchnorm_backward(
    dy: Any,
    x: Any,
    gamma: Any,
    save_mean: Any,
    save_invstd: Any,
    training: bool = True,
    act: Any = None,
    y: Any = None,
    dx: Any = None,
    dgamma: Any = None,
    dbeta: Any = None,
    need_dx: bool = True,
    accumulate: bool = False,
) -> Any: ...
def batchnorm_fold(
    w: Any,
    b: Any,
    gamma: Any,
    beta: Any,
    running_mean: Any,
    running_var: Any,
    eps: float = ...,
    w_out: Any = None,
    b_out: Any = None,
) -> Any: ...
