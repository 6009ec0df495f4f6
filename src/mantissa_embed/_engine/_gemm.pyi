"""Type stub of the compiled ``mantissa_embed._engine._gemm`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = ["sgemm"]

def sgemm(
    A: Any,
    B: Any,
    C: Any = None,
    *,
    trans_a: bool = False,
    trans_b: bool = False,
    alpha: float = ...,
    beta: float = ...,
) -> Any: ...
def _sgemm_st(
    A: Any,
    B: Any,
    C: Any = None,
    *,
    trans_a: bool = False,
    trans_b: bool = False,
    alpha: float = ...,
    beta: float = ...,
) -> Any: ...
