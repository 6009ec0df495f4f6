"""Type stub of the compiled ``mantissa_embed._engine._scatter`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = ["scatter_add_forward", "scatter_add_backward"]

def scatter_add_forward(src: Any, index: Any, out: Any) -> Any: ...
def scatter_add_backward(dout: Any, index: Any, dsrc: Any = None) -> Any: ...
