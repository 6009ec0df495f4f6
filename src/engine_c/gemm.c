/*
 * SGEMM: C (M,N) = alpha * op(A) (M,K) @ op(B) (K,N) + beta * C, row-major, float32.
 *
 * Algorithm (BLIS / GotoBLAS, written for a row-major C so the vector dimension is N):
 *
 *   for ic in M step MC          A panel  (MC x KC, packed in MR-row slivers)    ~ L3
 *     for pc in K step KC        one K block; beta is applied at pc == 0 only
 *       pack A[ic:ic+MC, pc:pc+KC]
 *       for jc in N step NC      B block  (KC x NC, packed in NR-column slivers)  ~ L2
 *         pack B[pc:pc+KC, jc:jc+NC]     (or read B in place, see below)
 *         for ir in MC step MR   A sliver (MR x KC)                              ~ L1
 *           for jr in NC step NR B sliver (KC x NR) streamed from L2
 *             micro-kernel: MR x NR tile of C, KC rank-1 updates in registers
 *
 * This is BLIS's loop nest for C^T = B^T A^T (BLIS' zen4 sgemm is a 32x12 kernel over a
 * column-major C; ours is 14x32 over a row-major C, the same register tile transposed).
 * Blocking: KC = 384, NC = 512 (a KC*NC*4 B = 768 KiB B block for a 1 MiB L2 per core; an
 * A sliver 14*384*4 B = 21 KiB stays in a 32 KiB L1d), MC up to 2016 rows (3 MiB of L3).
 * K is cut into equal blocks of at most KC; each element's sum runs over the K blocks in
 * order (beta applied with the first), each block an FMA chain in k order.
 *
 * Micro-kernels, chosen at run time (cpu.c: me_gemm_kernel_id; MANTISSA_EMBED_GEMM_KERNEL):
 *   avx512  MR=14, NR=32  28 zmm accumulators, B row in 2 zmm, A broadcast (AVX-512F+FMA);
 *                         AVX-512 packing by 16x16 transposes
 *   avx2    MR=6,  NR=16  12 ymm accumulators (AVX2+FMA)
 *   generic MR=4,  NR=8   portable C (the compiler vectorizes it with the baseline ISA)
 * Each is compiled with __attribute__((target(...))), so this file needs no special flags
 * (-DME_NO_X86 builds the portable code only).
 * Edges: A slivers are zero-padded to MR rows and each kernel is specialized on the number
 * of live rows (mr = 1..MR) and vectors, so an 8-row or 16-column problem wastes no FMA;
 * the last vector of a row uses masked loads/stores (N need not be a multiple of 16 or 8).
 * Transposes are absorbed by the packing routines (both layouts of A and of B).
 * beta == 0 overwrites C without reading it, so NaN/Inf already in C never propagate.
 * alpha == 0 or K == 0 only scale C by beta (A and B are not read).
 *
 * Small shapes (the layers call SGEMM with e.g. (8x9)@(9x784), (64x784)@(784x64)):
 *  - B in place: when B is not transposed and M <= 4*MR, or K <= 16, or B has at most 16K
 *    floats, the kernel reads B's rows directly (row stride ldb) instead of a packed copy
 *    (packing would cost as much as the few A slivers that reuse it);
 *  - dot-product path (AVX-512 only): A @ B^T with K >= 128, B within 512 KiB and M*N <=
 *    16384 is computed as 4x4 blocks of dot products along K (both operands contiguous
 *    along K, nothing packed; a 14x32 tile would be mostly empty for (8x9)@(9x784)^T);
 *  - no malloc when the packed A fits in a 32 KiB stack buffer; no threads below 2^18
 *    multiply-adds (me_sgemm).
 *
 * Memory: no allocation in any loop. One aligned block is allocated per call
 * (threads * (MC*KC + KC*NC) floats at most, each thread using its own slice), or the
 * stack buffer above. If the allocation fails, a plain unpacked loop computes the result.
 *
 * Threads (me_sgemm): C is cut into mt x nt rectangles (mt * nt = threads, the split
 * chosen from the shape), one per thread (static), each computed by the single-threaded
 * algorithm with private packing buffers (A or B is packed twice: O(MK + KN) extra against
 * O(MNK) work). No reduction is ever split across threads, and the path (packed or dot) and
 * the K blocking depend on the whole problem's shape only, so every C element is summed in
 * the same K order by the same FMA chain whatever the thread count: me_sgemm and
 * me_sgemm_st give bitwise-identical results, for any number of threads, on every call.
 * Results differ (in rounding) between micro-kernels and between the two paths.
 * Calls made from inside an OpenMP parallel region run single-threaded.
 */
#include "engine.h"
#include "dot4x4_avx512.h"
#include "simd_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if !defined(ME_NO_X86) && (defined(__x86_64__) || defined(__i386__)) && \
    (defined(__GNUC__) || defined(__clang__))
#define ME_GEMM_X86 1
#include <immintrin.h>
#else
#define ME_GEMM_X86 0
#endif

#ifndef ME_KC
#define ME_KC 384                /* K block */
#endif
#ifndef ME_NC
#define ME_NC 512                /* B block columns (L2) */
#endif
#ifndef ME_MC_ROWS
#define ME_MC_ROWS 2016          /* A panel rows (L3); rounded to a multiple of MR */
#endif
#define ME_DIRECT_B_SLIVERS 4    /* read B in place when M <= this many A slivers */
#ifndef ME_DIRECT_B_K
#define ME_DIRECT_B_K 16         /* ... or when K <= this */
#endif
#ifndef ME_DIRECT_B_FLOATS
#define ME_DIRECT_B_FLOATS 16384 /* ... or when all of B is this small (64 KiB) */
#endif
#define ME_STACK_FLOATS 8192     /* stack packing buffer (32 KiB) */
#define ME_GEMM_PAR_MIN (1 << 18) /* fewer multiply-adds than this: single-threaded */
#ifndef ME_DOT_MIN_K
#define ME_DOT_MIN_K 128         /* dot-product path (A @ B^T): K >= this, ... */
#endif
#ifndef ME_DOT_MAX_BK
#define ME_DOT_MAX_BK 131072     /* ... B (N x K) within 512 KiB (L2), ... */
#endif
#ifndef ME_DOT_MAX_MN
#define ME_DOT_MAX_MN 16384      /* ... and M * N <= this */
#endif

typedef void (*me_kernel_fn)(int64_t kc, const float *a, const float *b, int64_t ldb,
                             float *c, int64_t ldc, int mr, int nr, float alpha, float beta);

/* Packing (see pack_a_generic / pack_b_generic for the layouts). */
typedef void (*me_pack_a_fn)(int trans_a, const float *A, int64_t lda, int64_t i0, int64_t p0,
                             int64_t mc, int64_t kc, int MR, float *dst);
typedef void (*me_pack_b_fn)(int trans_b, const float *B, int64_t ldb, int64_t p0, int64_t j0,
                             int64_t kc, int64_t nc, int NR, float *dst);

typedef struct {
    int mr, nr;
    me_kernel_fn kernel;
    me_pack_a_fn pack_a;
    me_pack_b_fn pack_b;
    int dot; /* 1: the AVX-512 dot-product path (no packing; mr = nr = 4 are its tile) */
} me_gemm_cfg;

/* ======================================================================= packing */
/* A sliver s of an (mc x kc) block starting at row i0, col p0 of op(A):
 * dst[s*MR*kc + k*MR + i] = op(A)[i0 + s*MR + i, p0 + k], zero for rows past mc. */
static void pack_a_generic(int trans_a, const float *A, int64_t lda, int64_t i0, int64_t p0,
                           int64_t mc, int64_t kc, int MR, float *dst) {
    for (int64_t s = 0; s * MR < mc; s++) {
        const int64_t r0 = i0 + s * MR;
        const int mr = (int)(mc - s * MR < MR ? mc - s * MR : MR);
        float *d = dst + s * MR * kc;
        if (trans_a) { /* A is (K, M): row p0+k holds op(A)[:, p0+k] */
            for (int64_t k = 0; k < kc; k++) {
                const float *src = A + (p0 + k) * lda + r0;
                float *dk = d + k * MR;
                int i = 0;
                for (; i < mr; i++) dk[i] = src[i];
                for (; i < MR; i++) dk[i] = 0.0f;
            }
        } else { /* A is (M, K) */
            int i = 0;
            for (; i < mr; i++) {
                const float *src = A + (r0 + i) * lda + p0;
                for (int64_t k = 0; k < kc; k++) d[k * MR + i] = src[k];
            }
            for (; i < MR; i++)
                for (int64_t k = 0; k < kc; k++) d[k * MR + i] = 0.0f;
        }
    }
}

/* B sliver s of a (kc x nc) block starting at row p0, col j0 of op(B):
 * dst[s*NR*kc + k*NR + j] = op(B)[p0 + k, j0 + s*NR + j], zero for columns past nc. */
static void pack_b_generic(int trans_b, const float *B, int64_t ldb, int64_t p0, int64_t j0,
                           int64_t kc, int64_t nc, int NR, float *dst) {
    for (int64_t s = 0; s * NR < nc; s++) {
        const int64_t c0 = j0 + s * NR;
        const int nr = (int)(nc - s * NR < NR ? nc - s * NR : NR);
        float *d = dst + s * NR * kc;
        if (trans_b) { /* B is (N, K) */
            int j = 0;
            for (; j < nr; j++) {
                const float *src = B + (c0 + j) * ldb + p0;
                for (int64_t k = 0; k < kc; k++) d[k * NR + j] = src[k];
            }
            for (; j < NR; j++)
                for (int64_t k = 0; k < kc; k++) d[k * NR + j] = 0.0f;
        } else { /* B is (K, N) */
            for (int64_t k = 0; k < kc; k++) {
                const float *src = B + (p0 + k) * ldb + c0;
                float *dk = d + k * NR;
                int j = 0;
                for (; j < nr; j++) dk[j] = src[j];
                for (; j < NR; j++) dk[j] = 0.0f;
            }
        }
    }
}


/* ======================================================================= kernels */
/* Kernel contract: a (kc x MR) packed A sliver (a[k*MR + i], rows >= mr zero), b rows of
 * at least nr floats with row stride ldb (packed: ldb = NR; in place: the caller's ldb);
 * c (mr x nr) tile of C with row stride ldc: c = alpha * a^T b + beta * c (beta == 0:
 * c is not read). Only the mr x nr tile is read or written. */

/* ---------------------------------------------------------------- generic 4x8 */
#define G_MR 4
#define G_NR 8
static void kernel_generic(int64_t kc, const float *a, const float *b, int64_t ldb, float *c,
                           int64_t ldc, int mr, int nr, float alpha, float beta) {
    float acc[G_MR][G_NR];
    memset(acc, 0, sizeof(acc));
    if (nr == G_NR) {
        for (int64_t k = 0; k < kc; k++) {
            for (int i = 0; i < G_MR; i++) {
                const float ai = a[i];
                for (int j = 0; j < G_NR; j++) acc[i][j] += ai * b[j];
            }
            a += G_MR;
            b += ldb;
        }
    } else {
        for (int64_t k = 0; k < kc; k++) {
            for (int i = 0; i < G_MR; i++) {
                const float ai = a[i];
                for (int j = 0; j < nr; j++) acc[i][j] += ai * b[j];
            }
            a += G_MR;
            b += ldb;
        }
    }
    for (int i = 0; i < mr; i++) {
        float *ci = c + i * ldc;
        if (beta == 0.0f)
            for (int j = 0; j < nr; j++) ci[j] = alpha * acc[i][j];
        else
            for (int j = 0; j < nr; j++) ci[j] = alpha * acc[i][j] + beta * ci[j];
    }
}

#if ME_GEMM_X86
/* ----------------------------------------------------------------- avx2 6x16 */
#define V2_MR 6
#define V2_NR 16
#define ME_AVX2 __attribute__((target("avx2,fma")))

static const int32_t me_mask8_table[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

/* MRR live rows, NV vectors of 8; the last one masked by `m` when PART (AMD runs masked
 * stores slowly, so full tiles use plain loads and stores). */
static inline __attribute__((always_inline)) ME_AVX2 __m256 me_ld8(const int part, const float *p,
                                                                  __m256i m) {
    return part ? _mm256_maskload_ps(p, m) : _mm256_loadu_ps(p);
}
static inline __attribute__((always_inline)) ME_AVX2 void me_st8(const int part, float *p, __m256i m,
                                                                __m256 v) {
    if (part) _mm256_maskstore_ps(p, m, v);
    else _mm256_storeu_ps(p, v);
}

static inline __attribute__((always_inline)) ME_AVX2 void
avx2_body(const int MRR, const int NV, const int PART, int64_t kc, const float *restrict a,
          const float *restrict b, int64_t ldb, float *restrict c, int64_t ldc, __m256i m,
          float alpha, float beta) {
    __m256 acc[V2_MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < MRR; i++) {
        acc[i][0] = _mm256_setzero_ps();
        acc[i][1] = _mm256_setzero_ps();
    }
    for (int64_t k = 0; k < kc; k++) {
        __m256 b0, b1 = _mm256_setzero_ps();
        if (NV == 2) {
            b0 = _mm256_loadu_ps(b);
            b1 = me_ld8(PART, b + 8, m);
        } else {
            b0 = me_ld8(PART, b, m);
        }
#pragma GCC unroll 6
        for (int i = 0; i < MRR; i++) {
            const __m256 ai = _mm256_broadcast_ss(a + i);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            if (NV == 2) acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += V2_MR;
        b += ldb;
    }
    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    const int a1 = alpha == 1.0f, b0 = beta == 0.0f, b1 = beta == 1.0f;
#pragma GCC unroll 6
    for (int i = 0; i < MRR; i++) {
        float *ci = c + i * ldc;
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) {
            const int part = PART && v == NV - 1;
            __m256 r = a1 ? acc[i][v] : _mm256_mul_ps(va, acc[i][v]);
            if (!b0) {
                const __m256 cv = me_ld8(part, ci + 8 * v, m);
                r = b1 ? _mm256_add_ps(cv, r) : _mm256_fmadd_ps(vb, cv, r);
            }
            me_st8(part, ci + 8 * v, m, r);
        }
    }
}

static ME_AVX2 void kernel_avx2(int64_t kc, const float *a, const float *b, int64_t ldb, float *c,
                                int64_t ldc, int mr, int nr, float alpha, float beta) {
    const int nv = nr > 8 ? 2 : 1;
    const int rem = nr - 8 * (nv - 1); /* 1..8 live lanes in the last vector */
    const int part = rem != 8;
    const __m256i m = _mm256_loadu_si256((const __m256i *)(me_mask8_table + 8 - rem));
#define ME_A2V(R, NVV)                                                                  \
    if (part) avx2_body(R, NVV, 1, kc, a, b, ldb, c, ldc, m, alpha, beta);             \
    else avx2_body(R, NVV, 0, kc, a, b, ldb, c, ldc, m, alpha, beta);
#define ME_A2(R)                                                                        \
    case R:                                                                             \
        if (nv == 2) { ME_A2V(R, 2) } else { ME_A2V(R, 1) }                             \
        break;
    switch (mr) {
        ME_A2(1) ME_A2(2) ME_A2(3) ME_A2(4) ME_A2(5) ME_A2(6)
        default: break;
    }
#undef ME_A2
#undef ME_A2V
}

/* --------------------------------------------------------------- avx512 14x32 */
#define V5_MR 14
#define V5_NR 32
#define ME_AVX512 __attribute__((target("avx512f,fma")))

static inline __attribute__((always_inline)) ME_AVX512 void
avx512_body(const int MRR, const int NV, int64_t kc, const float *restrict a,
            const float *restrict b, int64_t ldb, float *restrict c, int64_t ldc, __mmask16 m,
            float alpha, float beta) {
    __m512 acc[V5_MR][2];
#pragma GCC unroll 14
    for (int i = 0; i < MRR; i++) {
        acc[i][0] = _mm512_setzero_ps();
        acc[i][1] = _mm512_setzero_ps();
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
        if (NV == 2) _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
    }
    for (int64_t k = 0; k < kc; k++) {
        __m512 b0, b1 = _mm512_setzero_ps();
        if (NV == 2) {
            b0 = _mm512_loadu_ps(b);
            b1 = _mm512_maskz_loadu_ps(m, b + 16);
        } else {
            b0 = _mm512_maskz_loadu_ps(m, b);
        }
#pragma GCC unroll 14
        for (int i = 0; i < MRR; i++) {
            const __m512 ai = _mm512_set1_ps(a[i]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            if (NV == 2) acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += V5_MR;
        b += ldb;
    }
    /* alpha == 1 skips the multiply and beta == 1 uses an add: both round exactly as the
     * general fma(beta, C, alpha * acc), so results do not depend on these shortcuts. */
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    const int a1 = alpha == 1.0f, b0 = beta == 0.0f, b1 = beta == 1.0f;
#pragma GCC unroll 14
    for (int i = 0; i < MRR; i++) {
        float *ci = c + i * ldc;
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) {
            const __mmask16 mv = v == NV - 1 ? m : (__mmask16)0xFFFF;
            __m512 r = a1 ? acc[i][v] : _mm512_mul_ps(va, acc[i][v]);
            if (!b0) {
                const __m512 cv = _mm512_maskz_loadu_ps(mv, ci + 16 * v);
                r = b1 ? _mm512_add_ps(cv, r) : _mm512_fmadd_ps(vb, cv, r);
            }
            _mm512_mask_storeu_ps(ci + 16 * v, mv, r);
        }
    }
}

static ME_AVX512 void kernel_avx512(int64_t kc, const float *a, const float *b, int64_t ldb,
                                    float *c, int64_t ldc, int mr, int nr, float alpha,
                                    float beta) {
    const int nv = nr > 16 ? 2 : 1;
    const int rem = nr - 16 * (nv - 1); /* 1..16 live lanes in the last vector */
    const __mmask16 m = (__mmask16)(rem == 16 ? 0xFFFFu : ((1u << rem) - 1u));
#define ME_A5(R)                                                                    \
    case R:                                                                         \
        if (nv == 2) avx512_body(R, 2, kc, a, b, ldb, c, ldc, m, alpha, beta);      \
        else avx512_body(R, 1, kc, a, b, ldb, c, ldc, m, alpha, beta);              \
        break;
    switch (mr) {
        ME_A5(1) ME_A5(2) ME_A5(3) ME_A5(4) ME_A5(5) ME_A5(6) ME_A5(7)
        ME_A5(8) ME_A5(9) ME_A5(10) ME_A5(11) ME_A5(12) ME_A5(13) ME_A5(14)
        default: break;
    }
#undef ME_A5
}

/* 16x16 transpose in registers: r[i] lane j  ->  r[j] lane i. */
static inline __attribute__((always_inline)) ME_AVX512 void me_tr16x16(__m512 r[16]) {
    __m512 t[16];
#pragma GCC unroll 8
    for (int p = 0; p < 8; p++) {
        t[2 * p] = _mm512_unpacklo_ps(r[2 * p], r[2 * p + 1]);
        t[2 * p + 1] = _mm512_unpackhi_ps(r[2 * p], r[2 * p + 1]);
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) { /* r[4q+c] lane L: column 4L+c of rows 4q..4q+3 */
        r[4 * q] = _mm512_shuffle_ps(t[4 * q], t[4 * q + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * q + 1] = _mm512_shuffle_ps(t[4 * q], t[4 * q + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[4 * q + 2] = _mm512_shuffle_ps(t[4 * q + 1], t[4 * q + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * q + 3] = _mm512_shuffle_ps(t[4 * q + 1], t[4 * q + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) { /* 4x4 transpose of the 128-bit lanes of r[c], r[4+c], ... */
        const __m512 y0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
        const __m512 y1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);
        const __m512 y2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        const __m512 y3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
        t[c] = _mm512_shuffle_f32x4(y0, y2, 0x88);
        t[8 + c] = _mm512_shuffle_f32x4(y0, y2, 0xDD);
        t[4 + c] = _mm512_shuffle_f32x4(y1, y3, 0x88);
        t[12 + c] = _mm512_shuffle_f32x4(y1, y3, 0xDD);
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) r[i] = t[i];
}

/* Transpose-pack `rows` (<= 16) source rows of `kc` floats (row stride ld, from src) into
 * dst[k*dstride + r] for r < 16 (rows >= `rows` zero), storing `width` lanes per k. */
static inline __attribute__((always_inline)) ME_AVX512 void
me_pack_transpose16(const float *src, int64_t ld, int rows, int64_t kc, float *dst, int64_t dstride,
                    __mmask16 wmask) {
    for (int64_t k = 0; k < kc; k += 16) {
        const int64_t kk = kc - k < 16 ? kc - k : 16;
        const __mmask16 lm = me_lanes16(kk);
        __m512 r[16];
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++)
            r[i] = i < rows ? _mm512_maskz_loadu_ps(lm, src + i * ld + k) : _mm512_setzero_ps();
        me_tr16x16(r);
        for (int64_t q = 0; q < kk; q++) _mm512_mask_storeu_ps(dst + (k + q) * dstride, wmask, r[q]);
    }
}

/* pack_a_generic's layout for MR = 14. */
static ME_AVX512 void pack_a_avx512(int trans_a, const float *A, int64_t lda, int64_t i0, int64_t p0,
                                    int64_t mc, int64_t kc, int MR, float *dst) {
    (void)MR;
    const __mmask16 m14 = 0x3FFF;
    for (int64_t s = 0; s * V5_MR < mc; s++) {
        const int64_t r0 = i0 + s * V5_MR;
        const int mr = (int)(mc - s * V5_MR < V5_MR ? mc - s * V5_MR : V5_MR);
        float *d = dst + s * V5_MR * kc;
        if (trans_a) { /* A is (K, M): a contiguous run of mr floats per k */
            const __mmask16 lm = me_lanes16(mr);
            const float *src = A + p0 * lda + r0;
            for (int64_t k = 0; k < kc; k++)
                _mm512_mask_storeu_ps(d + k * V5_MR, m14, _mm512_maskz_loadu_ps(lm, src + k * lda));
        } else { /* A is (M, K): transpose 14 rows, 16 k at a time */
            me_pack_transpose16(A + r0 * lda + p0, lda, mr, kc, d, V5_MR, m14);
        }
    }
}

/* pack_b_generic's layout for NR = 32. */
static ME_AVX512 void pack_b_avx512(int trans_b, const float *B, int64_t ldb, int64_t p0, int64_t j0,
                                    int64_t kc, int64_t nc, int NR, float *dst) {
    (void)NR;
    const int64_t ns = (nc + V5_NR - 1) / V5_NR;
    if (!trans_b) { /* B is (K, N): stream each row of the block once */
        for (int64_t k = 0; k < kc; k++) {
            const float *src = B + (p0 + k) * ldb + j0;
            for (int64_t s = 0; s < ns; s++) {
                const int64_t n0 = s * V5_NR;
                float *d = dst + s * V5_NR * kc + k * V5_NR;
                if (nc - n0 >= V5_NR) {
                    _mm512_storeu_ps(d, _mm512_loadu_ps(src + n0));
                    _mm512_storeu_ps(d + 16, _mm512_loadu_ps(src + n0 + 16));
                } else {
                    const int64_t rem = nc - n0;
                    _mm512_storeu_ps(d, _mm512_maskz_loadu_ps(me_lanes16(rem), src + n0));
                    _mm512_storeu_ps(d + 16, _mm512_maskz_loadu_ps(me_lanes16(rem - 16),
                                                                   src + n0 + 16));
                }
            }
        }
        return;
    }
    /* B is (N, K): transpose 16 rows (columns of op(B)) at a time */
    for (int64_t s = 0; s < ns; s++) {
        const int64_t n0 = s * V5_NR;
        float *d = dst + s * V5_NR * kc;
        for (int h = 0; h < 2; h++) {
            const int64_t c0 = n0 + 16 * h;
            int rows = (int)(nc - c0 < 0 ? 0 : (nc - c0 < 16 ? nc - c0 : 16));
            if (rows == 0) {
                for (int64_t k = 0; k < kc; k++)
                    _mm512_storeu_ps(d + k * V5_NR + 16, _mm512_setzero_ps());
                continue;
            }
            me_pack_transpose16(B + (j0 + c0) * ldb + p0, ldb, rows, kc, d + 16 * h, V5_NR, 0xFFFF);
        }
    }
}

#endif /* ME_GEMM_X86 */

/* AVX-512 dot-product path (A @ B^T): for trans_b with A untransposed both operands are
 * contiguous along K, so a small output with a long reduction ((8x9)@(9x784)^T) runs as 4x4
 * blocks of dot products, me_dot4x4_avx512 (dot4x4_avx512.h, shared with the convolution's weight gradient). */

/* Use the dot-product path? Decided on the whole problem's shape only (never on a thread's
 * share of it), so the result does not depend on the thread count. */
#if ME_GEMM_X86
static int me_use_dot(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K) {
    return !trans_a && trans_b && K >= ME_DOT_MIN_K && N * K <= ME_DOT_MAX_BK &&
           M * N <= ME_DOT_MAX_MN;
}
#endif

/* The plan of one call: micro-kernel, packing routines, or the dot-product path. */
static me_gemm_cfg me_gemm_config(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K) {
    me_gemm_cfg cfg = {G_MR, G_NR, kernel_generic, pack_a_generic, pack_b_generic, 0};
#if ME_GEMM_X86
    switch (me_gemm_kernel_id()) {
        case 2:
            cfg.mr = V5_MR; cfg.nr = V5_NR; cfg.kernel = kernel_avx512;
            cfg.pack_a = pack_a_avx512; cfg.pack_b = pack_b_avx512;
            if (me_use_dot(trans_a, trans_b, M, N, K)) {
                cfg.dot = 1;
                cfg.mr = 4;
                cfg.nr = 4;
            }
            break;
        case 1: cfg.mr = V2_MR; cfg.nr = V2_NR; cfg.kernel = kernel_avx2; break;
        default: break;
    }
#else
    (void)trans_a; (void)trans_b; (void)M; (void)N; (void)K;
#endif
    return cfg;
}

/* ======================================================================= driver */
static inline int64_t me_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t me_round_up(int64_t a, int64_t b) { return me_ceil_div(a, b) * b; }
static inline int64_t me_min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The K block: depends on K only (never on the thread split) so the summation order of
 * every element is fixed. K is cut into equal blocks of at most ME_KC. */
static int64_t me_kc_block(int64_t K) { return me_ceil_div(K, me_ceil_div(K, ME_KC)); }

/* The A panel height for an M-row problem (a multiple of MR, at most ME_MC_ROWS rounded). */
static int64_t me_mc_block(int64_t M, int MR) {
    const int64_t mcmax = me_round_up(ME_MC_ROWS, MR);
    return me_round_up(me_ceil_div(M, me_ceil_div(M, mcmax)), MR);
}

static int me_direct_b(int trans_b, int64_t M, int64_t N, int64_t K, int MR) {
    return !trans_b && (M <= (int64_t)ME_DIRECT_B_SLIVERS * MR || K <= ME_DIRECT_B_K ||
                        K * N <= ME_DIRECT_B_FLOATS);
}

/* Floats of workspace one thread needs for an (M, N, K) problem. */
static int64_t me_ws_floats(int trans_b, int64_t M, int64_t N, int64_t K, const me_gemm_cfg *cfg) {
    if (cfg->dot) return 0;
    const int64_t kc = me_kc_block(K);
    /* an upper bound of me_mc_block(m) for every m <= M (me_mc_block is not monotone) */
    int64_t w = me_min64(me_round_up(M, cfg->mr), me_round_up(ME_MC_ROWS, cfg->mr)) * kc;
    if (!me_direct_b(trans_b, M, N, K, cfg->mr)) w += me_round_up(me_min64(N, ME_NC), cfg->nr) * kc;
    return me_round_up(w, 16);
}

/* op(A) rows [0, M), op(B) columns [0, N) of the pointers given (already offset). */
static void gemm_rect(const me_gemm_cfg *cfg, int trans_a, int trans_b, int64_t M, int64_t N,
                      int64_t K, float alpha, const float *A, int64_t lda, const float *B,
                      int64_t ldb, float beta, float *C, int64_t ldc, float *ws) {
    const int MR = cfg->mr, NR = cfg->nr;
    const me_kernel_fn kernel = cfg->kernel;
    const int64_t kcb = me_kc_block(K), mcb = me_mc_block(M, MR);
    const int direct = me_direct_b(trans_b, M, N, K, MR);
    float *wa = ws, *wb = ws + mcb * kcb;
    for (int64_t ic = 0; ic < M; ic += mcb) {
        const int64_t mc = me_min64(mcb, M - ic);
        for (int64_t pc = 0; pc < K; pc += kcb) {
            const int64_t kc = me_min64(kcb, K - pc);
            const float beta_k = pc == 0 ? beta : 1.0f;
            cfg->pack_a(trans_a, A, lda, ic, pc, mc, kc, MR, wa);
            for (int64_t jc = 0; jc < N; jc += ME_NC) {
                const int64_t nc = me_min64(ME_NC, N - jc);
                if (!direct) cfg->pack_b(trans_b, B, ldb, pc, jc, kc, nc, NR, wb);
                for (int64_t ir = 0; ir < mc; ir += MR) {
                    const float *as = wa + (ir / MR) * MR * kc;
                    const int mr = (int)me_min64(MR, mc - ir);
                    float *crow = C + (ic + ir) * ldc + jc;
                    for (int64_t jr = 0; jr < nc; jr += NR) {
                        const int nr = (int)me_min64(NR, nc - jr);
                        if (direct)
                            kernel(kc, as, B + pc * ldb + jc + jr, ldb, crow + jr, ldc, mr, nr,
                                   alpha, beta_k);
                        else
                            kernel(kc, as, wb + (jr / NR) * NR * kc, NR, crow + jr, ldc, mr, nr,
                                   alpha, beta_k);
                    }
                }
            }
        }
    }
}

/* Fallback when no workspace can be allocated: plain loops, same semantics. */
static void gemm_unpacked(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                          const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                          float *C, int64_t ldc) {
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < K; k++) {
                const float a = trans_a ? A[k * lda + i] : A[i * lda + k];
                const float b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
                acc += a * b;
            }
            float *c = C + i * ldc + j;
            *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
        }
    }
}

/* C = beta * C (beta == 0: zero, even over NaN). */
static void scale_c(int64_t M, int64_t N, float beta, float *C, int64_t ldc) {
    for (int64_t i = 0; i < M; i++) {
        float *c = C + i * ldc;
        if (beta == 0.0f)
            memset(c, 0, (size_t)N * sizeof(float));
        else if (beta != 1.0f)
            for (int64_t j = 0; j < N; j++) c[j] *= beta;
    }
}

static float *me_alloc_floats(int64_t n) {
    size_t bytes = (size_t)me_round_up(n * (int64_t)sizeof(float), 64);
    return (float *)aligned_alloc(64, bytes);
}

/* Sub-problem pointers for the rectangle rows [i0, i0+m), columns [j0, j0+n). */
static void gemm_sub(const me_gemm_cfg *cfg, int trans_a, int trans_b, int64_t i0, int64_t m,
                     int64_t j0, int64_t n, int64_t K, float alpha, const float *A, int64_t lda,
                     const float *B, int64_t ldb, float beta, float *C, int64_t ldc, float *ws) {
    const float *As = trans_a ? A + i0 : A + i0 * lda;
    const float *Bs = trans_b ? B + j0 * ldb : B + j0;
#if ME_GEMM_X86
    if (cfg->dot) {
        const col_rows rows = {Bs, n, 1, 0, ldb, 0}; /* row j of B at Bs + j*ldb */
        me_dot4x4_avx512(m, n, 1, K, K, As, lda, &rows, alpha, beta, C + i0 * ldc + j0, ldc);
        return;
    }
#endif
    gemm_rect(cfg, trans_a, trans_b, m, n, K, alpha, As, lda, Bs, ldb, beta, C + i0 * ldc + j0, ldc,
              ws);
}

/* C (M,N) = alpha * op(A) (M,K) @ op(B) (K,N) + beta * C on the calling thread */
void me_sgemm_st(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                 const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                 float *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0.0f) {
        scale_c(M, N, beta, C, ldc);
        return;
    }
    const me_gemm_cfg cfg = me_gemm_config(trans_a, trans_b, M, N, K);
    const int64_t wsn = me_ws_floats(trans_b, M, N, K, &cfg);
    if (wsn <= ME_STACK_FLOATS) {
        float stack_ws[ME_STACK_FLOATS] __attribute__((aligned(64)));
        gemm_sub(&cfg, trans_a, trans_b, 0, M, 0, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stack_ws);
        return;
    }
    float *ws = me_alloc_floats(wsn);
    if (ws == NULL) {
        gemm_unpacked(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    gemm_sub(&cfg, trans_a, trans_b, 0, M, 0, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ws);
    free(ws);
}

/* Cut the (M, N) output among `nth` threads as mt x nt rectangles (mt * nt <= nth) of whole
 * MR x NR tiles, minimizing the largest per-thread cost (multiply-adds + packing). */
static void me_split(int64_t M, int64_t N, int64_t K, int nth, const me_gemm_cfg *cfg, int *mt_out,
                     int *nt_out) {
    const int64_t um = me_ceil_div(M, cfg->mr), un = me_ceil_div(N, cfg->nr);
    double best = -1.0;
    int bm = 1, bn = 1;
    for (int nt = 1; nt <= nth; nt++) {
        if (nth % nt) continue;
        int mt = nth / nt;
        int64_t mtu = me_min64(mt, um), ntu = me_min64(nt, un);
        double rows = (double)me_ceil_div(um, mtu) * cfg->mr;
        double cols = (double)me_ceil_div(un, ntu) * cfg->nr;
        double panels = (double)me_ceil_div((int64_t)rows, me_mc_block((int64_t)rows, cfg->mr));
        double cost = rows * cols * (double)K;
        if (!cfg->dot) cost += 8.0 * (rows * (double)K + panels * cols * (double)K);
        if (best < 0.0 || cost < best) {
            best = cost;
            bm = (int)mtu;
            bn = (int)ntu;
        }
    }
    *mt_out = bm;
    *nt_out = bn;
}

/* the same on me_get_num_threads() threads, bitwise equal to me_sgemm_st */
void me_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
              const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
              float *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return;
    int nth = me_get_num_threads();
#ifdef _OPENMP
    if (omp_in_parallel()) nth = 1;
#else
    nth = 1;
#endif
    if (nth <= 1 || K <= 0 || alpha == 0.0f || (double)M * (double)N * (double)K < ME_GEMM_PAR_MIN) {
        me_sgemm_st(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    const me_gemm_cfg cfg = me_gemm_config(trans_a, trans_b, M, N, K);
    int mt, nt;
    me_split(M, N, K, nth, &cfg, &mt, &nt);
    const int parts = mt * nt;
    if (parts <= 1) {
        me_sgemm_st(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    const int64_t um = me_ceil_div(M, cfg.mr), un = me_ceil_div(N, cfg.nr);
    /* workspace for the largest rectangle, one slice per thread */
    const int64_t mmax = me_min64(me_ceil_div(um, mt) * cfg.mr, M);
    const int64_t nmax = me_min64(me_ceil_div(un, nt) * cfg.nr, N);
    const int64_t per = me_ws_floats(trans_b, mmax, nmax, K, &cfg);
    float *ws = per > 0 ? me_alloc_floats(per * parts) : NULL;
    if (per > 0 && ws == NULL) {
        gemm_unpacked(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel for num_threads(parts) schedule(static)
#endif
    for (int p = 0; p < parts; p++) {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        const int64_t pm = p / nt, pn = p % nt;
        const int64_t i0 = me_min64((pm * um / mt) * cfg.mr, M);
        const int64_t i1 = me_min64(((pm + 1) * um / mt) * cfg.mr, M);
        const int64_t j0 = me_min64((pn * un / nt) * cfg.nr, N);
        const int64_t j1 = me_min64(((pn + 1) * un / nt) * cfg.nr, N);
        if (i1 > i0 && j1 > j0)
            gemm_sub(&cfg, trans_a, trans_b, i0, i1 - i0, j0, j1 - j0, K, alpha, A, lda, B, ldb,
                     beta, C, ldc, ws == NULL ? NULL : ws + (int64_t)t * per);
    }
    free(ws);
}
