"""numpy twins of the engine core: threads, CPU features and SGEMM.

Same names, signatures, argument checks and error messages as the wrappers in
``mantissa_embed.engine``. The thread functions only record the value (numpy's
own BLAS threads are not touched); ``sgemm`` accumulates in float64 and rounds once.
"""
from __future__ import annotations

import os

import numpy as np

from .._checks.gemm import (check_num_threads, env_num_threads, check_sgemm_operand, check_sgemm_out,
                            check_sgemm_scalar, check_sgemm_shapes)

__all__ = ["sgemm", "set_num_threads", "get_num_threads", "gemm_kernel_name", "cpu_features"]


def _default_threads():
    env = env_num_threads()  # RuntimeWarning for an invalid value, as the engine's import gives
    if env is not None:
        return env
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else (os.cpu_count() or 1))


_num_threads = None  # recorded by set_num_threads; None: the default, computed at first use


def get_num_threads():
    """The recorded thread count (int >= 1); the numpy backend does not use it."""
    global _num_threads
    if _num_threads is None:
        _num_threads = _default_threads()
    return _num_threads


def set_num_threads(n) -> None:
    """Record the thread count (no effect on numpy). Same checks as the engine.

    Raises ``TypeError`` when ``n`` is not an int, ``ValueError`` when ``n < 1`` or ``n > 4096``.
    """
    global _num_threads
    _num_threads = check_num_threads(n)


def gemm_kernel_name() -> str:
    """``'numpy'``: the reference backend computes products with numpy (float64)."""
    return "numpy"


def cpu_features():
    """The same keys as the engine's; all False (the reference backend uses no CPU kernel)."""
    return {"avx2": False, "fma": False, "avx512f": False, "avx512vl": False}


def sgemm(A, B, C=None, *, trans_a: bool = False, trans_b: bool = False, alpha: float = 1.0, beta: float = 0.0):
    """``C = alpha * op(A) @ op(B) + beta * C`` (float32 in and out, float64 inside).

    Shapes, dtypes, checks, errors and the in-place contract are those of
    ``mantissa_embed.engine.sgemm``; ``beta == 0`` ignores the content of ``C``.
    """
    check_sgemm_operand(A, "A")
    check_sgemm_operand(B, "B")
    falpha = check_sgemm_scalar(alpha, "alpha")
    fbeta = check_sgemm_scalar(beta, "beta")
    M, N, K = check_sgemm_shapes(A.shape, B.shape, trans_a, trans_b)
    if C is None:
        C = np.zeros((M, N), dtype=np.float32)
    else:
        check_sgemm_operand(C, "C")
        check_sgemm_out(C, M, N)
        if np.may_share_memory(C, A) or np.may_share_memory(C, B):
            raise ValueError("C must not share memory with A or B")
    if M == 0 or N == 0:
        return C
    a = (A.T if trans_a else A).astype(np.float64)
    b = (B.T if trans_b else B).astype(np.float64)
    out = falpha * (a @ b) if (K > 0 and falpha != 0.0) else np.zeros((M, N))
    if fbeta != 0.0:
        out = out + fbeta * C.astype(np.float64)
    C[...] = out
    return C
