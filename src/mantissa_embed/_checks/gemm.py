"""Argument checks of the thread count and of SGEMM."""
from __future__ import annotations

import numbers
import os
import re
import warnings

import numpy as np

from .arrays import F32_MAX


def check_num_threads(n):
    """``n`` as an int in [1, 4096]; ``TypeError`` for a non-int (bool rejected), else ``ValueError``."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if n > 4096:
        raise ValueError(f"n must be <= 4096, got {n}")
    return int(n)


NUM_THREADS_ENV = "MANTISSA_EMBED_NUM_THREADS"
# what the engine's strtol parse accepts (src/engine_c/cpu.c): leading space, optional "+", digits
_THREADS_RE = re.compile(r"[ \t\n\r\f\v]*\+?[0-9]+[ \t\n]*")
_warned_values: set[str] = set()


def env_num_threads():
    """The thread count ``MANTISSA_EMBED_NUM_THREADS`` asks for (an int in [1, 4096]), or None
    when it is unset, blank or invalid. An invalid value (``"abc"``, ``"0"``, ``"-3"``, ``"1.5"``)
    gives a ``RuntimeWarning`` naming the variable and the value (once per value and process);
    the engine then uses its default, as the C side (``cpu.c``) does."""
    raw = os.environ.get(NUM_THREADS_ENV)
    if raw is None or not raw.strip():
        return None
    # the significant digits, at most 4 before int(): int() of over 4300 digits is a ValueError
    digits = raw.strip().lstrip("+").lstrip("0") or "0"
    if _THREADS_RE.fullmatch(raw) and len(digits) <= 4 and 1 <= int(digits) <= 4096:
        return int(digits)
    if raw not in _warned_values:
        _warned_values.add(raw)
        shown = repr(raw) if len(raw) <= 40 else repr(raw[:40]) + f"... ({len(raw)} characters)"
        warnings.warn(f"{NUM_THREADS_ENV}={shown} is not a thread count (an integer from 1 to 4096): it is "
                      "ignored, the engine uses every processor available to the process", RuntimeWarning,
                      stacklevel=2)
    return None


def check_sgemm_operand(X, name):
    """X must be a 2-D C-contiguous float32 ndarray (and writeable when it is the output ``C``)."""
    if not isinstance(X, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray of float32, got {type(X).__name__}")
    if X.dtype != np.float32:
        raise TypeError(f"{name} must have dtype float32, got {X.dtype}")
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
    if not X.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (pass the untransposed array with "
                         f"trans_a/trans_b, or use numpy.ascontiguousarray)")
    if name == "C" and not X.flags.writeable:
        raise ValueError("C must be writeable")


def check_sgemm_scalar(v, name):
    """A real scalar in the float32 range (NaN rejected), returned rounded to float32."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(v).__name__}")
    d = float(v)
    if not (-F32_MAX <= d <= F32_MAX):  # also NaN
        raise ValueError(f"{name} must be finite (in float32 range), got {v}")
    return float(np.float32(d))


def check_sgemm_shapes(a_shape, b_shape, trans_a, trans_b):
    """(M, N, K) of ``op(A) @ op(B)``; ``ValueError`` when the inner dimensions differ."""
    M, K = (a_shape[1], a_shape[0]) if trans_a else (a_shape[0], a_shape[1])
    Kb, N = (b_shape[1], b_shape[0]) if trans_b else (b_shape[0], b_shape[1])
    if K != Kb:
        raise ValueError(f"inner dimensions differ: op(A) is ({M}, {K}) but op(B) is ({Kb}, {N}) "
                         f"(A {tuple(a_shape)}, trans_a={bool(trans_a)}; B {tuple(b_shape)}, "
                         f"trans_b={bool(trans_b)})")
    return M, N, K


def check_sgemm_out(C, M, N):
    """The output C: the right shape (after ``check_sgemm_operand``)."""
    if C.shape != (M, N):
        raise ValueError(f"C must have shape ({M}, {N}) = op(A) @ op(B), got {C.shape}")
