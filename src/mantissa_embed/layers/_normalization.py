"""The input normalization a trunk carries (``Sequential(input_mean=, input_std=)``): its
checks, and its application per channel (by ``Embedder``, never by ``forward``)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_normalization", "normalize_input"]


def check_normalization(mean: Any, std: Any) -> tuple[tuple[float, ...] | None, tuple[float, ...] | None]:
    """``(input_mean, input_std)`` as tuples of floats, or (None, None). TypeError / ValueError
    naming the argument."""
    if mean is None and std is None:
        return None, None
    if mean is None or std is None:
        raise ValueError("input_mean and input_std go together: give both or neither")
    out = []
    for name, v in (("input_mean", mean), ("input_std", std)):
        if isinstance(v, (str, bytes)) or not hasattr(v, "__len__"):
            raise TypeError(
                f"{name} must be a sequence of floats (one per input channel), got {type(v).__name__}"
            )
        vals = []
        for x in v:
            if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
                raise TypeError(f"{name} must hold numbers, got {type(x).__name__}")
            vals.append(float(x))
        if not vals or not all(np.isfinite(vals)):
            raise ValueError(f"{name} must be a non-empty sequence of finite floats, got {list(v)!r}")
        out.append(tuple(vals))
    if len(out[0]) != len(out[1]):
        raise ValueError(f"input_mean has {len(out[0])} channels, input_std {len(out[1])}")
    if min(out[1]) <= 0:
        raise ValueError(f"input_std must be > 0, got {list(out[1])}")
    return out[0], out[1]


def normalize_input(
    X: np.ndarray, mean: tuple[float, ...] | None, std: tuple[float, ...] | None
) -> np.ndarray:
    """``(X - mean[c]) / std[c]`` over axis 1 of ``X`` (N, C, ...) float32, as a new float32 array
    (the reciprocal of ``std`` taken in float64, then one float32 multiply); ``X`` itself when
    ``mean`` is None. ValueError when ``C`` differs from ``len(mean)``."""
    if mean is None or std is None:
        return X
    if X.ndim < 2 or X.shape[1] != len(mean):
        raise ValueError(
            f"the model normalizes {len(mean)} input channels (input_mean / input_std), X has shape {X.shape}"
        )
    shape = (1, -1) + (1,) * (X.ndim - 2)
    m = np.asarray(mean, dtype=np.float32).reshape(shape)
    inv = (1.0 / np.asarray(std, dtype=np.float64)).astype(np.float32).reshape(shape)
    return (X - m) * inv
