"""scikit-learn's bundled 8x8 digits (the UCI optical digits test set, Alpaydin & Kaynak 1998)."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits as _sklearn_load_digits

from .._typing import Float32Array, Int64Array


def load_digits(split: str | None) -> tuple[Float32Array, Int64Array]:
    """X (1797, 1, 8, 8) float32 (pixel values 0..16 divided by 16), y (1797,) int64; ``split``
    must be None (ValueError otherwise)."""
    if split is not None:
        raise ValueError(f"split must be None for 'digits' (it has no predefined split), got {split!r}")
    d = _sklearn_load_digits()
    X = d.images.astype(np.float32).reshape(-1, 1, 8, 8)
    X *= np.float32(1.0 / 16.0)
    return np.ascontiguousarray(X), d.target.astype(np.int64)
