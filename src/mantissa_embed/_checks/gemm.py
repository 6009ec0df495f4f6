"""Argument checks of SGEMM (``src/engine_c/gemm.c``)."""

from __future__ import annotations

import numbers

import numpy as np

from .arrays import F32_MAX


def check_sgemm_operand(X, name):
    """X must be a 2-D C-contiguous float32 ndarray (and writeable when it is the output ``C``)."""
    if not isinstance(X, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray of float32, got {type(X).__name__}")
    if X.dtype != np.float32:
        raise TypeError(f"{name} must have dtype float32, got {X.dtype}")
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
    if not X.flags.c_contiguous:
        raise ValueError(
            f"{name} must be C-contiguous (pass the untransposed array with "
            f"trans_a/trans_b, or use numpy.ascontiguousarray)"
        )
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
        raise ValueError(
            f"inner dimensions differ: op(A) is ({M}, {K}) but op(B) is ({Kb}, {N}) "
            f"(A {tuple(a_shape)}, trans_a={bool(trans_a)}; B {tuple(b_shape)}, "
            f"trans_b={bool(trans_b)})"
        )
    return M, N, K


def check_sgemm_out(C, M, N):
    """The output C: the right shape (after ``check_sgemm_operand``)."""
    if C.shape != (M, N):
        raise ValueError(f"C must have shape ({M}, {N}) = op(A) @ op(B), got {C.shape}")
