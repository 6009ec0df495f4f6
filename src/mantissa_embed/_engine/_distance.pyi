"""Type stub of the compiled ``mantissa_embed._engine._distance`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = [
    "l2_normalize_forward",
    "l2_normalize_backward",
    "euclidean_workspace_size",
    "euclidean_forward",
    "euclidean_backward",
    "dot_similarity_forward",
    "dot_similarity_backward",
    "add_transpose_forward",
    "gram_forward",
]

def l2_normalize_forward(x: Any, eps: float = ..., y: Any = None, norms: Any = None) -> Any: ...
def l2_normalize_backward(dy: Any, y: Any, norms: Any, eps: float = ..., dx: Any = None) -> Any: ...
def euclidean_workspace_size(N: Any, M: Any, backward: bool = False) -> int: ...
def euclidean_forward(
    x: Any,
    r: Any,
    squared: bool = False,
    out: Any = None,
    workspace: Any = None,
) -> Any: ...
def euclidean_backward(
    x: Any,
    r: Any,
    dist: Any,
    ddist: Any,
    squared: bool = False,
    dx: Any = None,
    dr: Any = None,
    workspace: Any = None,
) -> Any: ...
def dot_similarity_forward(x: Any, r: Any, out: Any = None) -> Any: ...
def dot_similarity_backward(x: Any, r: Any, dsim: Any, dx: Any = None, dr: Any = None) -> Any: ...
def add_transpose_forward(a: Any, out: Any = None) -> Any: ...
def gram_forward(x: Any, out: Any = None) -> Any: ...
