"""Checks of the engine entry points shared by both backends: arrays, outputs, flags, indices.

Errors name the argument: ``TypeError`` for a wrong type or dtype, ``ValueError`` for a bad value
or shape.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

F32_MAX = float(np.finfo(np.float32).max)

#: Bound on every buffer size the engine computes in int64 (and numpy allocates): far beyond any
#: memory, it turns absurd sizes into a ValueError instead of an int64 overflow or a petabyte
#: allocation.
MAX_FLOATS = 1 << 56


def check_int(v: Any, name: str, minimum: int | None = None) -> int:
    """Validate an integer scalar (bool rejected); return it as ``int``."""
    if type(v) is int:  # the common case first: the kernel wrappers check their ints on every call
        if minimum is not None and v < minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {v}")
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    v = int(v)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v


def check_float(v: Any, name: str, minimum: float | None = None, *, strict: bool = False) -> float:
    """Validate a finite real scalar; return it as ``float``."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(v).__name__}")
    v = float(v)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if minimum is not None and (v <= minimum if strict else v < minimum):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {minimum}, got {v}")
    return v


def check_f32(v: Any, name: str, minimum: float | None = None, *, strict: bool = False) -> float:
    """A finite real scalar that stays finite as the C ``float`` a kernel takes (``abs(v) <=
    3.4e38``); numpy scalars accepted. TypeError / ValueError naming ``name``."""
    v = check_float(v, name, minimum=minimum, strict=strict)
    if abs(v) > F32_MAX:
        raise ValueError(f"{name} must be within the float32 range, got {v}")
    return v


def as_numeric_array(
    x: Any,
    name: str,
    ndim: int | tuple[int, ...] | None = None,
    *,
    dtype: Any = np.float32,
    allow_empty: bool = True,
) -> np.ndarray:
    """``x`` as a C-contiguous ``dtype`` array; booleans, strings and objects raise ``TypeError``,
    a wrong ``ndim`` (an int or a tuple of them) or an empty array with ``allow_empty=False``
    ``ValueError``. No NaN scan (see ``mantissa_embed._validation.check_array``)."""
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
    return np.asarray(arr, dtype=dtype, order="C")  # not ascontiguousarray: it makes 0-D 1-D


def check_kernel_input(x: Any, name: str, ndim: int | tuple[int, ...] | None = None) -> np.ndarray:
    """An engine-wrapper input as float32 C-contiguous (no copy if it already is).

    Unlike ``mantissa_embed._validation.check_array`` it does not scan for NaN (the kernels are the inner layer;
    the public classes check finiteness once). Raises ``ValueError`` for a wrong ``ndim``.
    """
    if type(x) is np.ndarray and x.dtype == np.float32 and x.flags.c_contiguous:
        arr = x
    else:
        arr = as_numeric_array(x, name)
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
        if (
            aname in inplace_ok
            and out.shape == a.shape
            and out.strides == a.strides
            and out.dtype == a.dtype
            and out.__array_interface__["data"][0] == a.__array_interface__["data"][0]
        ):
            continue
        raise ValueError(f"{name} must not share memory with {aname}")


def check_outs(outs, ins, inplace_ok=()) -> None:
    """Each output buffer ((array, name) pairs, None skipped) must not share memory with an
    input nor with another output (ValueError), except the exact in-place aliases of
    ``inplace_ok`` input names."""
    for i, (o, oname) in enumerate(outs):
        check_no_overlap(o, oname, *ins, *outs[i + 1 :], inplace_ok=inplace_ok)


def check_bool(v: Any, name: str) -> bool:
    """A bool argument (``bool`` or ``numpy.bool_``; ints are refused, unlike ``check_flag``),
    returned as ``bool``; ``TypeError`` naming ``name`` otherwise. The one bool check of the
    package: ``_validation`` re-exports it for the public classes."""
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(v).__name__}")
    return bool(v)


def check_inplace(a, name, shape=None):
    """An array updated in place (optimizer state): float32, C-contiguous, writeable."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(a).__name__}")
    return check_kernel_output(a, name, a.shape if shape is None else shape)


def check_int_array(a: Any, name: str, length: int | None = None, upper: int | None = None) -> np.ndarray:
    """A 1-D integer array as int64 C-contiguous; values in [0, upper) when upper is given."""
    if isinstance(a, (str, bytes)) or a is None:
        raise TypeError(f"{name} must be an integer array, got {type(a).__name__}")
    arr = np.asarray(a)
    if arr.dtype.kind not in "iu":
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.int64)  # an empty float array (np.array([])) is an empty index
        else:
            raise TypeError(f"{name} must have an integer dtype, got {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name} must have length {length}, got {arr.shape[0]}")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if upper is not None and arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= upper:
            raise ValueError(f"{name} must hold indices in [0, {upper}), got values in [{lo}, {hi}]")
    return arr


def check_flag(v: Any, name: str) -> bool:
    if not isinstance(v, (bool, np.bool_, numbers.Integral)):
        raise TypeError(f"{name} must be a bool, got {type(v).__name__}")
    return bool(v)


def check_shape(shape, name, ndim):
    """A shape argument as a tuple of ``ndim`` ints >= 0 (``x_shape``, ``w.shape``)."""
    if isinstance(shape, (str, bytes)):
        raise TypeError(f"{name} must be a tuple of {ndim} ints, got {type(shape).__name__}")
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"{name} must be a tuple of {ndim} ints, got {type(shape).__name__}") from None
    if len(shape) != ndim:
        raise ValueError(f"{name} must have {ndim} entries, got {shape}")
    if all(type(s) is int and s >= 0 for s in shape):
        return shape
    return tuple(check_int(s, f"{name}[{i}]", minimum=0) for i, s in enumerate(shape))


def check_bias(b, n, name: str = "b"):
    """An optional bias: None, or a 1-D float32 array of ``n`` values."""
    if b is None:
        return None
    b = check_kernel_input(b, name, 1)
    if b.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},), got {b.shape}")
    return b


def grad_buf(a, name, shape, accumulate):
    """A gradient output: the caller's buffer, or a new one (zeros when accumulating into it)."""
    if a is None:
        return np.zeros(shape, dtype=np.float32) if accumulate else np.empty(shape, dtype=np.float32)
    return check_kernel_output(a, name, shape)


def store_grad(buf, value, accumulate) -> None:
    """Write a gradient into its buffer, or add it when accumulating."""
    if accumulate:
        buf += value
    else:
        buf[...] = value
