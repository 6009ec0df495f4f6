"""Input validation shared by every public entry point.

Arrays are converted and checked once at the public boundary (float32, C-contiguous,
finite, expected ndim) and then passed down without copies. Errors name the argument:
``ValueError`` for bad values and shapes, ``TypeError`` for wrong types.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks.arrays import (  # noqa: F401
    as_numeric_array,
    check_bool,
    check_float,
    check_int,
    check_kernel_input,
    check_kernel_output,
    check_no_overlap,
)
from ._typing import Int64Array, Seed
from .engine import all_finite


def check_array(
    x: Any,
    name: str,
    ndim: int | tuple[int, ...] | None = None,
    *,
    dtype: Any = np.float32,
    allow_empty: bool = True,
    finite: bool = True,
) -> np.ndarray:
    """Return ``x`` as a C-contiguous ``dtype`` array, validated.

    Parameters
    ----------
    x : array_like
        The input. Booleans, strings and objects are rejected with ``TypeError``.
    name : str
        The argument name used in error messages.
    ndim : int or tuple of int, optional
        Accepted number(s) of dimensions.
    finite : bool, default True
        Reject NaN and Inf with ``ValueError``, and (naming the range) finite values of a wider
        float dtype that do not fit ``dtype``.
    """
    arr = as_numeric_array(x, name, ndim, dtype=dtype, allow_empty=allow_empty)
    if finite and arr.dtype.kind == "f" and arr.size and not _all_finite(arr):
        src = np.asarray(x)
        if src.dtype.kind == "f" and src.dtype.itemsize > arr.dtype.itemsize and np.isfinite(src).all():
            top = float(np.finfo(arr.dtype).max)
            raise ValueError(f"{name} has finite values beyond the {arr.dtype} range (|x| <= {top:.7g})")
        raise ValueError(f"{name} contains NaN or Inf")
    return arr


#: from this many float32 values on, the finiteness check is the engine's (one read on every
#: thread, no boolean temporary) rather than numpy's; a batch of 256 MNIST images is 200,704
_ENGINE_FINITE_MIN = 65536


def _all_finite(arr):
    if arr.dtype == np.float32 and arr.size >= _ENGINE_FINITE_MIN:
        return all_finite(arr)
    return bool(np.isfinite(arr).all())


def check_labels(y: Any, name: str = "labels", n: int | None = None) -> Int64Array:
    """Return integer labels as a 1-D C-contiguous int64 array.

    Raises ``TypeError`` for non-integer dtypes (floats included) and ``ValueError``
    for a wrong ndim or a length different from ``n``.
    """
    if y is None:
        raise TypeError(f"{name} must be an integer array, got None")
    arr = np.asarray(y)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must have an integer dtype, got {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} must have length {n} (one per embedding), got {arr.shape[0]}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def as_generator(seed: Seed, name: str = "seed") -> np.random.Generator:
    """A ``numpy.random.Generator`` from an int seed, a Generator, or None (fresh entropy)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(check_int(seed, name, minimum=0))
