"""Type stub of the compiled ``mantissa_embed._engine._mining`` (parameter names and defaults as
compiled; arrays are float32 / int64 numpy arrays, checked at run time by ``_checks``)."""

from typing import Any

__all__ = ["triplet_margin_mine", "angular_mine"]

def triplet_margin_mine(
    mat: Any,
    labels: Any,
    ref_labels: Any,
    exclude_self: Any,
    type_of_triplets: Any,
    margin: Any,
    is_inverted: Any,
) -> Any: ...
def angular_mine(
    x: Any,
    r: Any,
    labels: Any,
    ref_labels: Any,
    exclude_self: Any,
    angle: Any,
) -> Any: ...
