"""Type stub of the compiled ``mantissa_embed._engine._pair_weighting`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = ["pairw_rows_forward", "pairw_rows_backward"]

def pairw_rows_forward(
    kind: Any,
    mat: Any,
    labels: Any = None,
    ref_labels: Any = None,
    pos_mask: Any = None,
    neg_mask: Any = None,
    params: Any = ...,
    exclude_self: bool = False,
    inverted: bool = False,
    losses: Any = None,
    dmat: Any = None,
) -> Any: ...
def pairw_rows_backward(dlosses: Any, dmat: Any) -> Any: ...
