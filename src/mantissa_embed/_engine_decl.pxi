# C declarations of engine.h (one block per family; each family's owner edits only its block).
from libc.stdint cimport int64_t, int32_t

cdef extern from "engine.h" nogil:
    # cpu.c
    int me_cpu_features()
    const char *me_gemm_kernel_name()
    void me_set_num_threads(int n)
    int me_get_num_threads()
    # gemm.c
    void me_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                  float *C, int64_t ldc)
    void me_sgemm_st(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                     const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                     float *C, int64_t ldc)
