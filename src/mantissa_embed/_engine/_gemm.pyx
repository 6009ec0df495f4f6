"""Float32 general matrix product (``src/engine_c/gemm.c``)."""
import numpy as np

from libc.stdint cimport int64_t

from mantissa_embed._checks.arrays import F32_MAX, check_flag
from mantissa_embed._checks.gemm import (check_sgemm_operand, check_sgemm_out, check_sgemm_scalar,
                                         check_sgemm_shapes)
from mantissa_embed._engine._cengine cimport me_sgemm, me_sgemm_st


__all__ = ['sgemm']


cdef double _F32_MAX = F32_MAX


cdef float[:, ::1] _sgemm_view(X, str name):
    """X as a typed memoryview; a bad X raises the ValueError/TypeError naming it."""
    cdef float[:, ::1] v
    if not isinstance(X, np.ndarray):
        check_sgemm_operand(X, name)
    try:
        v = X
    except (ValueError, TypeError, BufferError):
        check_sgemm_operand(X, name)
        raise
    return v


cdef const float[:, ::1] _sgemm_cview(X, str name):
    """Read-only operand (A, B) as a const typed memoryview: read-only arrays are accepted."""
    cdef const float[:, ::1] v
    if not isinstance(X, np.ndarray):
        check_sgemm_operand(X, name)
    try:
        v = X
    except (ValueError, TypeError, BufferError):
        check_sgemm_operand(X, name)
        raise
    return v


cdef float _sgemm_scalar(v, str name) except? -1.0:
    """alpha / beta as a float; plain ints and floats in range skip the Python-level check."""
    cdef double d
    if type(v) is float or type(v) is int:
        d = v
        if -_F32_MAX <= d <= _F32_MAX:
            return <float>d
    return check_sgemm_scalar(v, name)


cdef int _flag(v, str name) except -1:
    """trans_a / trans_b as 0 / 1: a bool (fast path) or what check_flag accepts; None, a str
    or a float raises TypeError instead of being taken as a truth value."""
    if type(v) is bool:
        return v
    return check_flag(v, name)


cdef inline bint _overlaps(const float[:, ::1] x, const float[:, ::1] y) noexcept nogil:
    """Do the (non-empty, contiguous) buffers of x and y overlap?"""
    cdef const float *x0 = &x[0, 0]
    cdef const float *y0 = &y[0, 0]
    return x0 < y0 + y.shape[0] * y.shape[1] and y0 < x0 + x.shape[0] * x.shape[1]


cdef object _sgemm_impl(A, B, C, bint trans_a, bint trans_b, alpha, beta, bint single_thread):
    cdef const float[:, ::1] a = _sgemm_cview(A, "A")
    cdef const float[:, ::1] b = _sgemm_cview(B, "B")
    cdef float[:, ::1] c
    cdef float falpha = _sgemm_scalar(alpha, "alpha")
    cdef float fbeta = _sgemm_scalar(beta, "beta")
    cdef int64_t M = a.shape[1] if trans_a else a.shape[0]
    cdef int64_t K = a.shape[0] if trans_a else a.shape[1]
    cdef int64_t Kb = b.shape[1] if trans_b else b.shape[0]
    cdef int64_t N = b.shape[0] if trans_b else b.shape[1]
    if K != Kb:
        check_sgemm_shapes(A.shape, B.shape, trans_a, trans_b)
    if C is None:
        C = np.zeros((M, N), dtype=np.float32) if fbeta != 0.0 else np.empty((M, N), dtype=np.float32)
        c = C
    else:
        c = _sgemm_view(C, "C")
        if c.shape[0] != M or c.shape[1] != N:
            check_sgemm_out(C, M, N)
        if M > 0 and N > 0 and ((a.shape[0] * a.shape[1] > 0 and _overlaps(c, a))
                                or (b.shape[0] * b.shape[1] > 0 and _overlaps(c, b))):
            raise ValueError("C must not share memory with A or B")
    if M == 0 or N == 0:
        return C
    if K == 0 or falpha == 0.0:
        if fbeta == 0.0:
            C.fill(0.0)
        elif fbeta != 1.0:
            np.multiply(C, np.float32(fbeta), out=C)
        return C
    cdef int64_t lda = a.shape[1], ldb = b.shape[1]
    with nogil:
        if single_thread:
            me_sgemm_st(trans_a, trans_b, M, N, K, falpha, &a[0, 0], lda, &b[0, 0], ldb, fbeta,
                        &c[0, 0], N)
        else:
            me_sgemm(trans_a, trans_b, M, N, K, falpha, &a[0, 0], lda, &b[0, 0], ldb, fbeta,
                     &c[0, 0], N)
    return C


def sgemm(A, B, C=None, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0):
    """General matrix product ``C = alpha * op(A) @ op(B) + beta * C`` in float32.

    ``op(A)`` is ``A`` or ``A.T`` (``trans_a``), likewise ``op(B)``. Runs the engine's packed,
    cache-blocked SGEMM (AVX-512 / AVX2+FMA / portable micro-kernel chosen at run time, see
    ``gemm_kernel_name``) on ``get_num_threads`` threads with the GIL released.

    Parameters
    ----------
    A : ndarray, float32, C-contiguous, shape (M, K), or (K, M) when ``trans_a``
    B : ndarray, float32, C-contiguous, shape (K, N), or (N, K) when ``trans_b``
    C : ndarray, float32, C-contiguous, shape (M, N), optional
        Output, written in place (and returned). Must not overlap ``A`` or ``B``. When
        omitted a new array is returned (``beta`` then multiplies zeros).
    trans_a, trans_b : bool, default False
    alpha, beta : float, default 1.0 and 0.0
        Finite scalars. ``beta == 0`` overwrites ``C`` without reading it, so NaN or Inf
        already in ``C`` never reach the result; ``alpha == 0`` or ``K == 0`` only scale ``C``.

    Returns
    -------
    C : ndarray, float32, shape (M, N)

    Raises
    ------
    TypeError
        ``A``, ``B`` or ``C`` is not a float32 ndarray; ``alpha`` or ``beta`` not a number;
        ``trans_a`` or ``trans_b`` not a bool.
    ValueError
        Not 2-D or not C-contiguous; inner dimensions differ; ``C`` has the wrong shape, is
        read-only or overlaps an input; ``alpha`` or ``beta`` not finite.

    Notes
    -----
    Each element of ``C`` is accumulated in float32 in a fixed K order (blocks of at most
    384, fused multiply-adds on the AVX kernels), independent of the thread count: results
    are bitwise identical across calls and thread counts for a given kernel. Algorithm:
    Goto & van de Geijn, "Anatomy of high-performance matrix multiplication", ACM TOMS 2008;
    Van Zee & van de Geijn, "BLIS", ACM TOMS 2015.
    """
    return _sgemm_impl(A, B, C, _flag(trans_a, "trans_a"), _flag(trans_b, "trans_b"), alpha, beta, False)


def _sgemm_st(A, B, C=None, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0):
    """``sgemm`` through ``me_sgemm_st`` (always single-threaded). For tests."""
    return _sgemm_impl(A, B, C, _flag(trans_a, "trans_a"), _flag(trans_b, "trans_b"), alpha, beta, True)
