"""numpy twins of the engine core: threads, CPU features and SGEMM.

Same names, signatures, argument checks and error messages as the wrappers in
``mantissa_embed/_engine_core.pxi``. The thread functions only record the value (numpy's
own BLAS threads are not touched); ``sgemm`` accumulates in float64 and rounds once.
"""
from __future__ import annotations

import numbers
import os

import numpy as np

__all__ = ["sgemm", "set_num_threads", "get_num_threads", "gemm_kernel_name", "cpu_features",
           "add_transpose_forward", "gram_forward"]


def _default_threads():
    env = os.environ.get("MANTISSA_EMBED_NUM_THREADS", "").strip()
    if env.isdigit() and 1 <= int(env) <= 4096:
        return int(env)
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else (os.cpu_count() or 1))


_num_threads = None  # recorded by set_num_threads; None: the default, computed at first use


def get_num_threads():
    """The recorded thread count (int >= 1); the numpy backend does not use it."""
    global _num_threads
    if _num_threads is None:
        _num_threads = _default_threads()
    return _num_threads


def set_num_threads(n):
    """Record the thread count (no effect on numpy). Same checks as the engine.

    Raises ``TypeError`` when ``n`` is not an int, ``ValueError`` when ``n < 1`` or ``n > 4096``.
    """
    global _num_threads
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if n > 4096:
        raise ValueError(f"n must be <= 4096, got {n}")
    _num_threads = int(n)


def gemm_kernel_name():
    """``'numpy'``: the reference backend computes products with numpy (float64)."""
    return "numpy"


def cpu_features():
    """The same keys as the engine's; all False (the reference backend uses no CPU kernel)."""
    return {"avx2": False, "fma": False, "avx512f": False, "avx512vl": False}


def _check_operand(X, name):
    if not isinstance(X, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray of float32, got {type(X).__name__}")
    if X.dtype != np.float32:
        raise TypeError(f"{name} must have dtype float32, got {X.dtype}")
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
    if not X.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (pass the untransposed array with "
                         f"trans_a/trans_b, or use numpy.ascontiguousarray)")


_F32_MAX = 3.4028234663852886e38


def _check_scalar(v, name):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(v).__name__}")
    d = float(v)
    if not (-_F32_MAX <= d <= _F32_MAX):  # also NaN
        raise ValueError(f"{name} must be finite (in float32 range), got {v}")
    return float(np.float32(d))


def sgemm(A, B, C=None, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0):
    """``C = alpha * op(A) @ op(B) + beta * C`` (float32 in and out, float64 inside).

    Shapes, dtypes, checks, errors and the in-place contract are those of
    :func:`mantissa_embed.engine.sgemm`; ``beta == 0`` ignores the content of ``C``.
    """
    _check_operand(A, "A")
    _check_operand(B, "B")
    falpha = _check_scalar(alpha, "alpha")
    fbeta = _check_scalar(beta, "beta")
    M, K = (A.shape[1], A.shape[0]) if trans_a else A.shape
    Kb, N = (B.shape[1], B.shape[0]) if trans_b else B.shape
    if K != Kb:
        raise ValueError(f"inner dimensions differ: op(A) is ({M}, {K}) but op(B) is ({Kb}, {N}) "
                         f"(A {A.shape}, trans_a={bool(trans_a)}; B {B.shape}, "
                         f"trans_b={bool(trans_b)})")
    if C is None:
        C = np.zeros((M, N), dtype=np.float32)
    else:
        _check_operand(C, "C")
        if not C.flags.writeable:
            raise ValueError("C must be writeable")
        if C.shape != (M, N):
            raise ValueError(f"C must have shape ({M}, {N}) = op(A) @ op(B), got {C.shape}")
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


# --------------------------------------------------------------------------------------------
# symmetric (same-set) helpers of the similarity matrices (src/engine_c/distance.c)
# --------------------------------------------------------------------------------------------
def _check_add_transpose(a, out):
    from .._validation import check_kernel_input, check_kernel_output, check_no_overlap
    a = check_kernel_input(a, "a", ndim=2)
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"a must be square, got shape {a.shape}")
    out = check_kernel_output(out, "out", a.shape)
    check_no_overlap(out, "out", (a, "a"))
    return a, out


def _check_gram(x, out):
    from .._validation import check_kernel_input, check_kernel_output, check_no_overlap
    x = check_kernel_input(x, "x", ndim=2)
    out = check_kernel_output(out, "out", (x.shape[0], x.shape[0]))
    check_no_overlap(out, "out", (x, "x"))
    return x, out


def add_transpose_forward(a, out=None):
    """``out = a + a.T`` for a square float32 ``a`` (N, N) -> out (N, N) float32, exactly symmetric.

    The same-set backward of a similarity matrix in one product: ``(dS + dS.T) @ x``. ``out`` must
    not overlap ``a``.
    """
    a, out = _check_add_transpose(a, out)
    out[...] = a + a.T
    return out


def gram_forward(x, out=None):
    """Gram matrix ``out = x @ x.T`` of x (N, D) float32 -> out (N, N) float32 (float64 inside;
    the engine computes the blocks on and above the diagonal and mirrors them)."""
    x, out = _check_gram(x, out)
    if x.shape[1] == 0:
        out[...] = 0
        return out
    xd = x.astype(np.float64)
    g = xd @ xd.T
    out[...] = np.triu(g) + np.triu(g, 1).T
    return out
