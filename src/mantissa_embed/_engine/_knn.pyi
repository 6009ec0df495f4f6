"""Type stub of the compiled ``mantissa_embed._engine._knn`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = ["knn_search", "knn_codes_search", "knn_codes_mode"]

def knn_search(
    query: Any,
    reference: Any,
    k: Any,
    metric: str = "sqeuclidean",
    exclude_self: bool = False,
    tile_q: int = 256,
    tile_r: int = 2048,
    indices: Any = None,
    distances: Any = None,
) -> Any: ...
def knn_codes_mode(dtype: str, D: int) -> str: ...
def knn_codes_search(
    query: Any,
    codes: Any,
    scales: Any,
    k: Any,
    dtype: str,
    metric: str = "sqeuclidean",
    mode: str | None = None,
    tile_r: int = 0,
    indices: Any = None,
    distances: Any = None,
) -> Any: ...
