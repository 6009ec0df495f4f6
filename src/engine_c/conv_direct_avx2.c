/* conv_direct_avx2.c: the AVX2 + FMA direct kernels of the convolution, picked with the AVX2
 * SGEMM kernel (conv_use_avx2): the direct forward and dx on the wide grid of the zero-padded
 * plane (conv_direct_wide_avx2) and the weight gradient as blocks of dot products
 * (conv_dw_dot_avx2), the AVX2 counterparts of conv_direct_avx512.c and of the AVX-512
 * dot-product dw. Their register block is 4 filters x 3 vectors of 8 outputs (12 ymm
 * accumulators): each tap (c,i,j) is 3 loads of the padded plane and 4 broadcast weights for 12
 * FMAs. The direct kernels write the wide grid (row f of yw holds output (ho, wo) at ho*Wp + wo;
 * the columns wo >= WO are scratch), which the caller compacts with the bias and the activation;
 * the weights are packed once per call (conv_pack_direct_weights, NF = ME_D2_NF). Each kernel
 * carries its target attribute.
 */
#include "engine.h"
#include "simd_internal.h"
/* for col_rows and col_row; the static AVX-512 kernel of that header (me_dot4x4_avx512) runs in
 * conv.c, not here */
#include "dot4x4_avx512.h"
#include "conv_internal.h"

#define ME_D2_NV 3 /* AVX2 direct kernels: 8-float output vectors per register block */
#define ME_D2_L1 4096 /* AVX2 direct kernels: floats of the plane slice kept in L1 */
#define ME_D2_DOT_ROWS 2048 /* AVX2 dw: rows whose addresses are tabulated (on the stack) */

/* Are the AVX2 direct kernels used (the AVX2 SGEMM kernel is in use)? */
int conv_use_avx2(void) {
#if ME_CONV_X86
    return me_gemm_kernel_id() == 1;
#else
    return 0;
#endif
}

/* floats of the AVX2 kernels' packed weights (forward or flipped), after the group scratch */
int64_t conv_avx2_pack_floats(int64_t C, int64_t F, int64_t KH, int64_t KW) {
    const int64_t fw = (F + ME_D2_NF - 1) / ME_D2_NF * ME_D2_NF * C * KH * KW;
    const int64_t tw = (C + ME_D2_NF - 1) / ME_D2_NF * ME_D2_NF * F * KH * KW;
    int64_t need = fw > tw ? fw : tw;
    if (KH == 3 && KW == 3) { /* the Winograd weights, 16 per (filter, channel) */
        const int64_t uf = 16 * C * ((F + 3) / 4 * 4), ut = 16 * F * ((C + 3) / 4 * 4);
        if (uf > need) need = uf;
        if (ut > need) need = ut;
    }
    return need;
}

#if ME_CONV_X86
/* One register block of conv_direct_wide_avx2: NV (1..3, a constant after inlining) vectors
 * starting at wide positions s[], 4 filters of the packed weights wb, over the channels c0..c1-1;
 * the sums start from zero (first) or from what yw holds (a previous channel block); nf filters
 * stored. */
__attribute__((target("avx2,fma"), always_inline)) static inline void direct_block_avx2(
    const float *xp, const float *wb, float *yw, int64_t ldy, int64_t nf, const int64_t *s, const int NV,
    int64_t c0, int64_t c1, int first, int64_t KH, int64_t KW, int64_t Hp, int64_t Wp) {
    __m256 acc[ME_D2_NF][ME_D2_NV];
#pragma GCC unroll 4
    for (int f = 0; f < ME_D2_NF; f++)
#pragma GCC unroll 3
        for (int k = 0; k < NV; k++)
            acc[f][k] = first || f >= nf ? _mm256_setzero_ps() : _mm256_loadu_ps(yw + f * ldy + s[k]);
    const float *wt = wb + c0 * KH * KW * ME_D2_NF;
    for (int64_t c = c0; c < c1; c++)
        for (int64_t i = 0; i < KH; i++) {
            const float *row = xp + (c * Hp + i) * Wp;
            for (int64_t j = 0; j < KW; j++, wt += ME_D2_NF) {
                __m256 v[ME_D2_NV];
#pragma GCC unroll 3
                for (int k = 0; k < NV; k++) v[k] = _mm256_loadu_ps(row + j + s[k]);
#pragma GCC unroll 4
                for (int f = 0; f < ME_D2_NF; f++) {
                    const __m256 wf = _mm256_broadcast_ss(wt + f);
#pragma GCC unroll 3
                    for (int k = 0; k < NV; k++) acc[f][k] = _mm256_fmadd_ps(wf, v[k], acc[f][k]);
                }
            }
        }
#pragma GCC unroll 4
    for (int f = 0; f < ME_D2_NF; f++)
#pragma GCC unroll 3
        for (int k = 0; k < NV; k++)
            if (f < nf) _mm256_storeu_ps(yw + f * ldy + s[k], acc[f][k]);
}

/* xp (C,Hp,Wp) + ME_SLACK zero floats, wpk ceil(F/4) blocks of (K,4) -> yw (F, ldy >= HO*Wp + 8).
 * The vectors walk the wide grid flat (8 consecutive positions), or row by row (ceil(WO/8) per
 * output row) when that takes fewer vectors (small WO); the last block has 1-3 vectors. The
 * channels are taken in blocks whose slice of the plane fits in ME_D2_L1 floats, so that it stays
 * in L1 while every filter block reads it (the partial sums wait in yw). */
__attribute__((target("avx2,fma")))
void conv_direct_wide_avx2(const float *xp, const float *wpk, float *yw, int64_t ldy, int64_t F, int64_t C,
                           int64_t KH, int64_t KW, int64_t Hp, int64_t Wp, int64_t HO, int64_t WO) {
    const int64_t K = C * KH * KW, cpr = (WO + 7) / 8, nflat = (HO * Wp + 7) / 8, nrows = HO * cpr;
    const int rows = nrows < nflat;
    const int64_t nvec = rows ? nrows : nflat;
    int64_t CB = ME_D2_L1 / (Hp * Wp);
    if (CB < 1) CB = 1;
    for (int64_t c0 = 0; c0 < C; c0 += CB) {
    const int64_t c1 = C - c0 < CB ? C : c0 + CB;
    for (int64_t f0 = 0; f0 < F; f0 += ME_D2_NF) {
        const float *wb = wpk + (f0 / ME_D2_NF) * K * ME_D2_NF;
        const int64_t nf = F - f0 < ME_D2_NF ? F - f0 : ME_D2_NF;
        for (int64_t v0 = 0; v0 < nvec; v0 += ME_D2_NV) {
            const int64_t nv = nvec - v0 < ME_D2_NV ? nvec - v0 : ME_D2_NV;
            int64_t s[ME_D2_NV] = {0, 0, 0};
            for (int64_t k = 0; k < nv; k++) {
                const int64_t v = v0 + k;
                s[k] = rows ? (v / cpr) * Wp + (v % cpr) * 8 : v * 8;
            }
            float *yb = yw + f0 * ldy;
            if (nv == 3)
                direct_block_avx2(xp, wb, yb, ldy, nf, s, 3, c0, c1, c0 == 0, KH, KW, Hp, Wp);
            else if (nv == 2)
                direct_block_avx2(xp, wb, yb, ldy, nf, s, 2, c0, c1, c0 == 0, KH, KW, Hp, Wp);
            else
                direct_block_avx2(xp, wb, yb, ldy, nf, s, 1, c0, c1, c0 == 0, KH, KW, Hp, Wp);
        }
    }
    }
}

/* the 4 horizontal sums of a, b, c, d */
__attribute__((target("avx2"))) static inline __m128 hsum4_avx2(__m256 a, __m256 b, __m256 c, __m256 d) {
    const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

/* dy (F, ldd) and the rows of col (cr) on the wide grid HO x Wp -> dw (F,K) (+)= dy @ col^T over
 * the WO valid columns of each row: 8 at a time, the last vector of a row with its lanes >= WO
 * zeroed in the col operand (dy is zero there, but 0 * NaN from a neighbouring pixel is not); the
 * operands must be readable 8 floats past each row. 4x3 blocks of dot products (12 ymm
 * accumulators, 7 loads per 12 FMAs), reduced 4 at a time. */
__attribute__((target("avx2,fma")))
void conv_dw_dot_avx2(int64_t F, int64_t K, int64_t HO, int64_t WO, int64_t Wp, const float *dy, int64_t ldd,
                      const col_rows *cr, float *dw, int beta_one) {
    const int64_t W8 = WO & ~(int64_t)7, rem = WO - W8;
    const __m256 tail = _mm256_castsi256_ps(me_lanes8(rem));
    /* the rows' addresses once per call (col_row divides; with short rows that would dominate) */
    const float *rowp[ME_D2_DOT_ROWS];
    const int table = K <= ME_D2_DOT_ROWS;
    if (table)
        for (int64_t k = 0; k < K; k++) rowp[k] = col_row(cr, k);
    for (int64_t f0 = 0; f0 < F; f0 += 4) {
        const float *a[4];
        for (int i = 0; i < 4; i++) a[i] = dy + (f0 + i < F ? f0 + i : F - 1) * ldd;
        for (int64_t k0 = 0; k0 < K; k0 += 3) {
            const float *b[3];
            for (int j = 0; j < 3; j++) {
                const int64_t k = k0 + j < K ? k0 + j : K - 1;
                b[j] = table ? rowp[k] : col_row(cr, k);
            }
            __m256 acc[4][3];
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++)
#pragma GCC unroll 3
                for (int j = 0; j < 3; j++) acc[i][j] = _mm256_setzero_ps();
            for (int64_t ho = 0; ho < HO; ho++)
                for (int64_t wo = 0; wo < WO; wo += 8) {
                    const int64_t p = ho * Wp + wo;
                    __m256 b0 = _mm256_loadu_ps(b[0] + p), b1 = _mm256_loadu_ps(b[1] + p),
                           b2 = _mm256_loadu_ps(b[2] + p);
                    if (wo == W8) { /* the row's partial last vector */
                        b0 = _mm256_and_ps(b0, tail);
                        b1 = _mm256_and_ps(b1, tail);
                        b2 = _mm256_and_ps(b2, tail);
                    }
#pragma GCC unroll 4
                    for (int i = 0; i < 4; i++) {
                        const __m256 va = _mm256_loadu_ps(a[i] + p);
                        acc[i][0] = _mm256_fmadd_ps(va, b0, acc[i][0]);
                        acc[i][1] = _mm256_fmadd_ps(va, b1, acc[i][1]);
                        acc[i][2] = _mm256_fmadd_ps(va, b2, acc[i][2]);
                    }
                }
#pragma GCC unroll 3
            for (int j = 0; j < 3; j++) {
                if (k0 + j >= K) break;
                float out[4];
                _mm_storeu_ps(out, hsum4_avx2(acc[0][j], acc[1][j], acc[2][j], acc[3][j]));
                for (int i = 0; i < 4 && f0 + i < F; i++) {
                    float *d = dw + (f0 + i) * K + k0 + j;
                    *d = beta_one ? *d + out[i] : out[i];
                }
            }
        }
    }
}
#endif
