"""Type stub of the compiled ``mantissa_embed._engine._dense`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = ["dense_forward", "dense_backward"]

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
