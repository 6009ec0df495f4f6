/* dot4x4_avx512.h (private): C (+)= A @ B^T as 4x4 blocks of dot products, AVX-512.
 *
 * A small output with a long reduction (a convolution's weight gradient (F,P) @ (K,P)^T, or an
 * SGEMM with trans_b and a contiguous A) is the shape a packed GEMM handles worst: its register
 * tile is mostly empty and B must be packed transposed. Here each 4x4 block of C keeps 16 zmm
 * accumulators, lane l summing the products at positions = l mod 16 (8 loads per 16 FMAs, a
 * masked tail), then one transpose-and-add tree gives the 16 sums. No packing, no scratch.
 *
 * Rows of B are given as col_rows (the rows of a column matrix that need not exist: the
 * convolution reads its im2col rows in place from the padded plane). Used by conv.c and
 * conv_direct_avx2.c (weight gradients) and gemm.c (the dot-product path of me_sgemm).
 */
#ifndef ME_DOT4X4_AVX512_H
#define ME_DOT4X4_AVX512_H

#include <math.h>
#include <stdint.h>

/* Row k of a (K, P) column matrix, without materializing it: row (c, i, j) (k = (c*KH + i)*KW
 * + j) starts at base + c*cs + i*rs + j. A plain matrix with row stride ld is {B, K, 1, 0, ld}
 * (row k at B + k*ld); the convolution's wide layout reads the padded plane in place:
 * {xp, KH*KW, KW, Hp*Wp, Wp}. */
typedef struct {
    const float *base;
    int64_t khkw, kw, cs, rs;
    int64_t plane; /* floats readable from base (the padded plane), for the finiteness check */
} col_rows;

static inline const float *col_row(const col_rows *cr, int64_t k) {
    const int64_t c = k / cr->khkw, r = k % cr->khkw;
    return cr->base + c * cr->cs + (r / cr->kw) * cr->rs + r % cr->kw;
}

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "simd_internal.h"

/* The 16 horizontal sums of acc[i][j] in one vector, lane 4*j + i = sum of acc[i][j]: a
 * transpose-and-add tree (4 levels, 15 adds) instead of 16 separate reductions. */
__attribute__((target("avx512f"))) static inline __m512 me_hsum16_transposed(__m512 acc[4][4]) {
    const __m512 *v = &acc[0][0];
    __m512 t[8], u[4], w[2];
    for (int m = 0; m < 8; m++) /* 512 -> 256: lanes 0-7 from v[2m], 8-15 from v[2m+1] */
        t[m] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0x44),
                             _mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0xEE));
    for (int q = 0; q < 4; q++) /* -> 128: chunk c holds v[4q + c] */
        u[q] = _mm512_add_ps(_mm512_shuffle_f32x4(t[2 * q], t[2 * q + 1], 0x88),
                             _mm512_shuffle_f32x4(t[2 * q], t[2 * q + 1], 0xDD));
    for (int r = 0; r < 2; r++) /* -> 64: chunk c, lanes 0-1 v[8r + c], lanes 2-3 v[8r + 4 + c] */
        w[r] = _mm512_add_ps(_mm512_shuffle_ps(u[2 * r], u[2 * r + 1], 0x44),
                             _mm512_shuffle_ps(u[2 * r], u[2 * r + 1], 0xEE));
    /* -> 32: chunk c, lane l holds v[4l + c] = acc[l][c] */
    return _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD));
}

/* A (M, HO rows of WO at stride Wp; row stride lda), B (N rows given by cr, the same layout):
 * C (M,N; row stride ldc) = alpha * A @ B^T + beta * C, the sum over the valid columns only
 * (on a wide grid, Wp > WO, the scratch columns are never read: 0 times a NaN or Inf a shifted
 * row holds there would not be 0). A contiguous A is HO = 1, WO = Wp = its row length.
 * beta == 0 writes C without reading it; rows or columns past the edge reuse the last valid
 * one (computed, never stored). */
__attribute__((target("avx512f,fma")))
static inline void me_dot4x4_avx512(int64_t M, int64_t N, int64_t HO, int64_t WO, int64_t Wp, const float *A,
                             int64_t lda, const col_rows *cr, float alpha, float beta, float *C, int64_t ldc) {
    const int64_t W16 = WO & ~(int64_t)15;
    const __mmask16 tail = me_lanes16(WO - W16);
    for (int64_t i0 = 0; i0 < M; i0 += 4) {
        const float *a[4];
        for (int i = 0; i < 4; i++) a[i] = A + (i0 + i < M ? i0 + i : M - 1) * lda;
        for (int64_t j0 = 0; j0 < N; j0 += 4) {
            const float *b[4];
            for (int j = 0; j < 4; j++) b[j] = col_row(cr, j0 + j < N ? j0 + j : N - 1);
            __m512 acc[4][4];
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++)
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) acc[i][j] = _mm512_setzero_ps();
            for (int64_t r = 0; r < HO * Wp; r += Wp) {
                for (int64_t p = r; p < r + W16; p += 16) {
                    __m512 va[4], vb[4];
#pragma GCC unroll 4
                    for (int i = 0; i < 4; i++) va[i] = _mm512_loadu_ps(a[i] + p);
#pragma GCC unroll 4
                    for (int j = 0; j < 4; j++) vb[j] = _mm512_loadu_ps(b[j] + p);
#pragma GCC unroll 4
                    for (int i = 0; i < 4; i++)
#pragma GCC unroll 4
                        for (int j = 0; j < 4; j++) acc[i][j] = _mm512_fmadd_ps(va[i], vb[j], acc[i][j]);
                }
                if (tail) {
                    __m512 va[4], vb[4];
#pragma GCC unroll 4
                    for (int i = 0; i < 4; i++) va[i] = _mm512_maskz_loadu_ps(tail, a[i] + r + W16);
#pragma GCC unroll 4
                    for (int j = 0; j < 4; j++) vb[j] = _mm512_maskz_loadu_ps(tail, b[j] + r + W16);
#pragma GCC unroll 4
                    for (int i = 0; i < 4; i++)
#pragma GCC unroll 4
                        for (int j = 0; j < 4; j++) acc[i][j] = _mm512_fmadd_ps(va[i], vb[j], acc[i][j]);
                }
            }
            __m512 sums = me_hsum16_transposed(acc);
            if (alpha != 1.0f) sums = _mm512_mul_ps(_mm512_set1_ps(alpha), sums);
            float out[16] __attribute__((aligned(64)));
            _mm512_store_ps(out, sums);
            for (int i = 0; i < 4 && i0 + i < M; i++) {
                float *c = C + (i0 + i) * ldc + j0;
                for (int j = 0; j < 4 && j0 + j < N; j++) {
                    const float v = out[4 * j + i];
                    c[j] = beta == 0.0f ? v : fmaf(beta, c[j], v);
                }
            }
        }
    }
}
#endif

#endif /* ME_DOT4X4_AVX512_H */
