"""Input validation shared by every public entry point.

Arrays are converted and checked once at the public boundary (float32, C-contiguous,
finite, expected ndim) and then passed down without copies. Errors name the argument:
``ValueError`` for bad values and shapes, ``TypeError`` for wrong types.
"""
from __future__ import annotations

import numbers

import numpy as np


def check_array(x, name, ndim=None, *, dtype=np.float32, allow_empty=True, finite=True):
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
        Reject NaN and Inf with ``ValueError``.
    """
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}")
    arr = np.asarray(x)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if arr.dtype.kind == "b":
        raise TypeError(f"{name} must be a numeric array, got dtype bool")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(str(a) for a in allowed)
            raise ValueError(f"{name} must be {want}-D, got shape {arr.shape}")
    if not allow_empty and arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    arr = np.ascontiguousarray(arr, dtype=dtype)
    if finite and arr.dtype.kind == "f" and arr.size and not _all_finite(arr):
        raise ValueError(f"{name} contains NaN or Inf")
    return arr


#: from this many float32 values on, the finiteness check is the engine's (one read on every
#: thread, no boolean temporary) rather than numpy's; a batch of 256 MNIST images is 200,704
_ENGINE_FINITE_MIN = 65536


def _all_finite(arr):
    if arr.dtype == np.float32 and arr.size >= _ENGINE_FINITE_MIN:
        from . import engine  # imported here: the engine's own modules import this one
        return engine.all_finite(arr)
    return bool(np.isfinite(arr).all())


def check_no_overlap(out, name, *inputs, inplace_ok=()):
    """Raise ``ValueError`` when the output buffer ``out`` shares memory with an input.

    ``inputs`` are ``(array, name)`` pairs (``None`` arrays are skipped). An exact alias (the
    same memory, shape and strides) of an input whose name is in ``inplace_ok`` is allowed:
    the element-wise kernels documented as "may be ``x``" run in place. Bounds-based
    (``numpy.may_share_memory``), so O(1); exact for the C-contiguous buffers of the kernels.
    """
    if out is None or out.size == 0:
        return
    for a, aname in inputs:
        if a is None or a.size == 0 or not np.may_share_memory(out, a):
            continue
        if (aname in inplace_ok and out.shape == a.shape and out.strides == a.strides
                and out.dtype == a.dtype
                and out.__array_interface__["data"][0] == a.__array_interface__["data"][0]):
            continue
        raise ValueError(f"{name} must not share memory with {aname}")


def check_labels(y, name="labels", n=None):
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


def check_int(v, name, minimum=None):
    """Validate an integer scalar (bool rejected); return it as ``int``."""
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    v = int(v)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v


def check_float(v, name, minimum=None, *, strict=False):
    """Validate a finite real scalar; return it as ``float``."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(v).__name__}")
    v = float(v)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if minimum is not None and (v <= minimum if strict else v < minimum):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {minimum}, got {v}")
    return v


def as_generator(seed, name="seed"):
    """A ``numpy.random.Generator`` from an int seed, a Generator, or None (fresh entropy)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(check_int(seed, name, minimum=0))


def check_kernel_input(x, name, ndim=None):
    """An engine-wrapper input as float32 C-contiguous (no copy if it already is).

    Unlike :func:`check_array` it does not scan for NaN (the kernels are the inner layer;
    the public classes check finiteness once). Raises ``ValueError`` for a wrong ``ndim``.
    """
    if type(x) is np.ndarray and x.dtype == np.float32 and x.flags.c_contiguous:
        arr = x
    else:
        arr = check_array(x, name, finite=False)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    return arr


def check_kernel_output(a, name, shape, dtype=np.float32):
    """A caller-provided output buffer of an engine wrapper, or a new one when ``a`` is None.

    Raises ``TypeError`` for a non-ndarray or a wrong dtype, ``ValueError`` for a wrong shape,
    a non-contiguous or a read-only buffer.
    """
    if a is None:
        return np.empty(shape, dtype=dtype)
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(a).__name__}")
    if a.dtype != dtype:
        raise TypeError(f"{name} must have dtype {np.dtype(dtype).name}, got {a.dtype}")
    if a.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {a.shape}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    if not a.flags.writeable:
        raise ValueError(f"{name} must be writeable")
    return a
