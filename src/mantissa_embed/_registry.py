"""Rebuilding registered classes from their ``get_config()`` dicts (layers, transforms)."""

from __future__ import annotations


def build_from_config(cfg, types, where: str = "cfg"):
    """``types[cfg["type"]].from_config(kwargs, where)`` for a ``get_config()`` dict (as
    ``json.loads`` gives it back: list values become tuples). Raises ValueError naming ``where``
    for a malformed dict, a type not in ``types`` or bad arguments."""
    if not isinstance(cfg, dict) or "type" not in cfg:
        raise ValueError(f"{where} must be a dict with a 'type'")
    kind = cfg["type"]
    if kind not in types:
        raise ValueError(f"{where} has unknown type {kind!r}; known: {sorted(types)}")
    kwargs = {k: (tuple(v) if isinstance(v, list) else v) for k, v in cfg.items() if k != "type"}
    try:
        return types[kind].from_config(kwargs, where)
    except TypeError as e:
        raise ValueError(f"{where} ({kind}) has bad arguments: {e}") from None
