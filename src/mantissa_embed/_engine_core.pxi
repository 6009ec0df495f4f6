# cpu, threads and SGEMM wrappers (owner: engine core).

def get_num_threads():
    """Number of threads the engine uses (int >= 1)."""
    return me_get_num_threads()


def set_num_threads(int n):
    """Set the engine's thread count. Raises ValueError when n < 1."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    me_set_num_threads(n)


def gemm_kernel_name():
    """The SGEMM micro-kernel chosen at runtime: 'avx512', 'avx2' or 'generic'."""
    return me_gemm_kernel_name().decode()


def sgemm(A, B, C=None, *, bint trans_a=False, bint trans_b=False, float alpha=1.0, float beta=0.0):
    """C = alpha * op(A) @ op(B) + beta * C (float32). Placeholder wrapper."""
    cdef float[:, ::1] a = np.ascontiguousarray(A, dtype=np.float32)
    cdef float[:, ::1] b = np.ascontiguousarray(B, dtype=np.float32)
    cdef int64_t M = a.shape[1] if trans_a else a.shape[0]
    cdef int64_t K = a.shape[0] if trans_a else a.shape[1]
    cdef int64_t Kb = b.shape[1] if trans_b else b.shape[0]
    cdef int64_t N = b.shape[0] if trans_b else b.shape[1]
    if K != Kb:
        raise ValueError(f"inner dimensions differ: A gives K={K}, B gives K={Kb}")
    if C is None:
        C = np.zeros((M, N), dtype=np.float32)
    cdef float[:, ::1] c = C
    if M == 0 or N == 0:
        return C
    if K == 0:
        C *= beta
        return C
    with nogil:
        me_sgemm(trans_a, trans_b, M, N, K, alpha, &a[0, 0], a.shape[1],
                 &b[0, 0], b.shape[1], beta, &c[0, 0], N)
    return C
