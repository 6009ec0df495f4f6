"""Backend selection: ``"mantissa"`` (the C engine) or ``"numpy"`` (the reference twins)."""

from __future__ import annotations

from . import _reference, engine

BACKENDS = ("mantissa", "numpy")


def get_backend(name: str = "mantissa"):
    """Return the module implementing the engine API for ``name``.

    Both modules expose the same functions with the same signatures.
    Raises ``ValueError`` for an unknown name.
    """
    if name == "mantissa":
        return engine
    if name == "numpy":
        return _reference
    raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}")
