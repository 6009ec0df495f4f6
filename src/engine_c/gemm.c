/* SGEMM. Placeholder naive implementation: helper A owns this file. */
#include "engine.h"

void me_sgemm_st(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                 const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                 float *C, int64_t ldc) {
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < K; k++) {
                float a = trans_a ? A[k * lda + i] : A[i * lda + k];
                float b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
                acc += a * b;
            }
            C[i * ldc + j] = alpha * acc + (beta == 0.0f ? 0.0f : beta * C[i * ldc + j]);
        }
    }
}

void me_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
              const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
              float *C, int64_t ldc) {
    me_sgemm_st(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
