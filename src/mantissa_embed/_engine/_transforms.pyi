"""Type stub of the compiled ``mantissa_embed._engine._transforms`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = ["affine_resample_forward", "affine_resample_backward"]

def affine_resample_forward(x: Any, theta: Any, out: Any = None) -> Any: ...
def affine_resample_backward(
    x: Any,
    theta: Any,
    dy: Any,
    need_dx: bool = True,
    need_dtheta: bool = True,
    dx: Any = None,
    dtheta: Any = None,
) -> Any: ...
