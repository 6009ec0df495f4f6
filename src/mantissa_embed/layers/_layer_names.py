"""The names of a ``Sequential``'s layers: given as a list ("0", "1", ...), a mapping or (name,
layer) pairs, and the rule a name follows (torch's dotted ``state_dict`` prefixes)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Union

from .base_layer import Layer

__all__ = ["LayersArg", "named_layers"]

#: a layer name: dot-separated segments of letters, digits and underscores ("conv1", "layer1.0")
_NAME = re.compile(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*")

LayersArg = Union[Sequence[Layer], Mapping[str, Layer], Sequence[tuple[str, Layer]]]


def named_layers(layers: Any) -> tuple[list[str], list[Layer]]:
    """``(names, layers)`` from a list of layers (names "0", "1", ...), a mapping name -> layer or a
    list of (name, layer) pairs. Raises TypeError/ValueError."""
    if isinstance(layers, Layer) or isinstance(layers, (str, bytes)):
        raise TypeError("layers must be a list of Layer objects")
    items: list[Any]
    if isinstance(layers, Mapping):
        items = list(layers.items())
    else:
        try:
            items = list(layers)
        except TypeError:
            raise TypeError(f"layers must be a list of Layer objects, got {type(layers).__name__}") from None
    if not items:
        raise ValueError("layers must not be empty")
    pairs = isinstance(layers, Mapping) or all(isinstance(x, tuple) and len(x) == 2 for x in items)
    if not pairs:
        return [str(i) for i in range(len(items))], items
    names = [n for n, _ in items]
    for i, n in enumerate(names):
        if not isinstance(n, str):
            raise TypeError(f"layer names must be str, got {type(n).__name__} for layers[{i}]")
        if not _NAME.fullmatch(n):
            raise ValueError(
                f"layer name {n!r} must be dot-separated segments of letters, digits and '_' "
                f"(e.g. 'conv1' or 'layer1.0')"
            )
    if len(set(names)) != len(names):
        raise ValueError(f"layer names must be distinct, got {names}")
    taken = set(names)
    for n in names:  # "a" and "a.b" would give clashing parameter names ("a.b.weight")
        parts = n.split(".")
        for k in range(1, len(parts)):
            if ".".join(parts[:k]) in taken:
                raise ValueError(
                    f"layer name {n!r} extends the name {'.'.join(parts[:k])!r} of another layer"
                )
    return names, [x for _, x in items]
