/* pool.c: 2-D max pooling (implicit -inf padding, floor mode) and average pooling (no padding), as torch.nn.functional.max_pool2d
 * and avg_pool2d, and the global average pooling.
 * Planes (n, c) are independent: OpenMP over the N*C planes, schedule(static).
 * Ties: the first maximum in row-major window order wins (torch's CPU kernel does the same);
 * a NaN in a window is propagated (the last NaN wins, as in torch: `val > max || isnan(val)`). */
#include "engine.h"
#include "row_sum.h"
#include "simd_internal.h"

#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define ME_POOL_X86 1
#include <immintrin.h>
#else
#define ME_POOL_X86 0
#endif

#if ME_POOL_X86
/* 2x2 window, stride 2, one output row (WO values) from input rows r0, r1 (offsets o0, o0 + W
 * in the plane): 16 outputs per step, even/odd columns split with a two-source permute,
 * the four taps visited in window order with the same "v > best || isnan(v)" rule. */
__attribute__((target("avx512f")))
static void pool2x2_row_avx512(const float *r0, const float *r1, float *yr, int32_t *ar,
                               int64_t WO, int32_t o0, int32_t W) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512i one = _mm512_set1_epi32(1), wv = _mm512_set1_epi32(W);
    for (int64_t wo = 0; wo < WO; wo += 16) {
        const int64_t n = WO - wo < 16 ? WO - wo : 16;    /* outputs this step */
        const int64_t n2 = 2 * n;                          /* input floats per row */
        const __mmask16 mlo = me_lanes16(n2), mhi = me_lanes16(n2 - 16), mout = me_lanes16(n);
        const float *p0 = r0 + 2 * wo, *p1 = r1 + 2 * wo;
        const __m512 lo0 = _mm512_maskz_loadu_ps(mlo, p0), hi0 = _mm512_maskz_loadu_ps(mhi, p0 + 16);
        const __m512 lo1 = _mm512_maskz_loadu_ps(mlo, p1), hi1 = _mm512_maskz_loadu_ps(mhi, p1 + 16);
        const __m512 a = _mm512_permutex2var_ps(lo0, even, hi0), b = _mm512_permutex2var_ps(lo0, odd, hi0);
        const __m512 c = _mm512_permutex2var_ps(lo1, even, hi1), d = _mm512_permutex2var_ps(lo1, odd, hi1);
        const __m512i ia = _mm512_add_epi32(_mm512_set1_epi32(o0 + (int32_t)(2 * wo)),
                                            _mm512_slli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 1));
        __m512 best = a;
        __m512i idx = ia;
        __mmask16 m = _mm512_cmp_ps_mask(b, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);
        best = _mm512_mask_blend_ps(m, best, b);
        idx = _mm512_mask_blend_epi32(m, idx, _mm512_add_epi32(ia, one));
        const __m512i ic = _mm512_add_epi32(ia, wv);
        m = _mm512_cmp_ps_mask(c, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q);
        best = _mm512_mask_blend_ps(m, best, c);
        idx = _mm512_mask_blend_epi32(m, idx, ic);
        m = _mm512_cmp_ps_mask(d, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(d, d, _CMP_UNORD_Q);
        best = _mm512_mask_blend_ps(m, best, d);
        idx = _mm512_mask_blend_epi32(m, idx, _mm512_add_epi32(ic, one));
        _mm512_mask_storeu_ps(yr + wo, mout, best);
        _mm512_mask_storeu_epi32(ar + wo, mout, idx);
    }
}
/* The AVX2 counterpart: 8 outputs per step (the even/odd columns split by shuffle + lane
 * permute), the same visiting order and rule; the last WO mod 8 outputs by masked loads and
 * stores (nothing read past the row's 2*WO floats). */
__attribute__((target("avx2"))) static inline __m256 pool_take(__m256 v, __m256 best, __m256 *mask) {
    *mask = _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    return _mm256_blendv_ps(best, v, *mask);
}

/* outputs wo .. wo+7 of the row (the first nout of them stored; nout == 8: unmasked) */
__attribute__((target("avx2"), always_inline))
static inline void pool2x2_step_avx2(const float *r0, const float *r1, float *yr, int32_t *ar, int64_t wo,
                                     int64_t nout, int32_t o0, int32_t W) {
    const __m256i lane2 = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14), one = _mm256_set1_epi32(1);
    const float *p0 = r0 + 2 * wo, *p1 = r1 + 2 * wo;
    __m256 lo0, hi0, lo1, hi1;
    if (nout == 8) {
        lo0 = _mm256_loadu_ps(p0), hi0 = _mm256_loadu_ps(p0 + 8);
        lo1 = _mm256_loadu_ps(p1), hi1 = _mm256_loadu_ps(p1 + 8);
    } else {
        const __m256i ml = me_lanes8(2 * nout), mh = me_lanes8(2 * nout - 8);
        lo0 = _mm256_maskload_ps(p0, ml), hi0 = _mm256_maskload_ps(p0 + 8, mh);
        lo1 = _mm256_maskload_ps(p1, ml), hi1 = _mm256_maskload_ps(p1 + 8, mh);
    }
    /* shuffle gives lanes (0 2 8 10 | 4 6 12 14); the 64-bit permute 0xD8 restores the order */
    const __m256 a = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo0, hi0, 0x88)), 0xD8));
    const __m256 b = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo0, hi0, 0xDD)), 0xD8));
    const __m256 c = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo1, hi1, 0x88)), 0xD8));
    const __m256 d = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo1, hi1, 0xDD)), 0xD8));
    const __m256i ia = _mm256_add_epi32(_mm256_set1_epi32(o0 + (int32_t)(2 * wo)), lane2);
    const __m256i ic = _mm256_add_epi32(ia, _mm256_set1_epi32(W));
    __m256 m, best = a;
    __m256 idx = _mm256_castsi256_ps(ia);
    best = pool_take(b, best, &m);
    idx = _mm256_blendv_ps(idx, _mm256_castsi256_ps(_mm256_add_epi32(ia, one)), m);
    best = pool_take(c, best, &m);
    idx = _mm256_blendv_ps(idx, _mm256_castsi256_ps(ic), m);
    best = pool_take(d, best, &m);
    idx = _mm256_blendv_ps(idx, _mm256_castsi256_ps(_mm256_add_epi32(ic, one)), m);
    if (nout == 8) {
        _mm256_storeu_ps(yr + wo, best);
        _mm256_storeu_si256((__m256i *)(ar + wo), _mm256_castps_si256(idx));
    } else {
        const __m256i mo = me_lanes8(nout);
        _mm256_maskstore_ps(yr + wo, mo, best);
        _mm256_maskstore_epi32((int *)(ar + wo), mo, _mm256_castps_si256(idx));
    }
}

__attribute__((target("avx2")))
static int64_t pool2x2_row_avx2(const float *r0, const float *r1, float *yr, int32_t *ar,
                                int64_t WO, int32_t o0, int32_t W) {
    int64_t wo = 0;
    for (; wo + 8 <= WO; wo += 8) pool2x2_step_avx2(r0, r1, yr, ar, wo, 8, o0, W);
    if (wo < WO) pool2x2_step_avx2(r0, r1, yr, ar, wo, WO - wo, o0, W);
    return WO;
}
#endif

/* x (N,C,H,W) -> y (N,C,HO,WO), argmax (N,C,HO,WO) int32 offset into the H*W plane.
 * Each output row is initialised from the window's first tap, then the other taps are visited
 * in row-major window order with branch-free selects over the row (vectorizable):
 * "v > best || v is NaN" replaces the running maximum, as torch's CPU kernel does. */
/* output (ho, wo) of a plane with implicit -inf padding: the valid taps of its window in
 * row-major order, with the unpadded rule (a larger value or a NaN replaces), so a padding tap
 * never wins; the offset into the H*W input plane */
static inline void maxpool_padded_one(const float *xp, float *yp, int32_t *ap, int64_t ho, int64_t wo, int64_t H,
                                      int64_t W, int64_t WO, int64_t size, int64_t stride, int64_t pad) {
    const int64_t h0 = ho * stride - pad, hs = h0 > 0 ? h0 : 0, he = h0 + size < H ? h0 + size : H;
    const int64_t w0 = wo * stride - pad, ws = w0 > 0 ? w0 : 0, we = w0 + size < W ? w0 + size : W;
    float best = xp[hs * W + ws];
    int32_t idx = (int32_t)(hs * W + ws);
    for (int64_t h = hs; h < he; h++)
        for (int64_t w = (h == hs ? ws + 1 : ws); w < we; w++) {
            const float v = xp[h * W + w];
            const int better = (v > best) | (v != v);
            best = better ? v : best;
            idx = better ? (int32_t)(h * W + w) : idx;
        }
    yp[ho * WO + wo] = best;
    ap[ho * WO + wo] = idx;
}

/* One plane with implicit -inf padding (pad >= 0), as maxpool_padded_one for every output: the
 * columns whose window lies inside the plane [wlo, whi) row by row over the taps in window order,
 * each row initialised from the window's first tap (vectorizable, the same visiting order and
 * rule), the border columns one by one. */
static void maxpool_padded_plane(const float *xp, float *yp, int32_t *ap, int64_t H, int64_t W, int64_t HO,
                                 int64_t WO, int64_t size, int64_t stride, int64_t pad) {
    int64_t wlo = (pad + stride - 1) / stride, whi = W + pad >= size ? (W + pad - size) / stride + 1 : 0;
    if (wlo > WO) wlo = WO;
    if (whi > WO) whi = WO;
    if (whi < wlo) whi = wlo;
    for (int64_t ho = 0; ho < HO; ho++) {
        for (int64_t wo = 0; wo < wlo; wo++) maxpool_padded_one(xp, yp, ap, ho, wo, H, W, WO, size, stride, pad);
        for (int64_t wo = whi; wo < WO; wo++) maxpool_padded_one(xp, yp, ap, ho, wo, H, W, WO, size, stride, pad);
        if (whi == wlo) continue;
        const int64_t h0 = ho * stride - pad, hs = h0 > 0 ? h0 : 0, he = h0 + size < H ? h0 + size : H;
        float *yr = yp + ho * WO;
        int32_t *ar = ap + ho * WO;
        const float *x0 = xp + hs * W - pad;
        for (int64_t wo = wlo; wo < whi; wo++) {
            yr[wo] = x0[wo * stride];
            ar[wo] = (int32_t)(hs * W - pad + wo * stride);
        }
        for (int64_t h = hs; h < he; h++)
            for (int64_t j = (h == hs); j < size; j++) {
                const float *xr = xp + h * W - pad + j;
                const int32_t base = (int32_t)(h * W - pad + j);
                for (int64_t wo = wlo; wo < whi; wo++) {
                    const float v = xr[wo * stride], best = yr[wo];
                    const int better = (v > best) | (v != v);
                    yr[wo] = better ? v : best;
                    ar[wo] = better ? base + (int32_t)(wo * stride) : ar[wo];
                }
            }
    }
}

void me_maxpool2d_forward(const float *x, float *y, int32_t *argmax,
                          int64_t N, int64_t C, int64_t H, int64_t W, int64_t size, int64_t stride,
                          int64_t pad) {
    const int64_t HO = (H + 2 * pad - size) / stride + 1, WO = (W + 2 * pad - size) / stride + 1;
    const int64_t planes = N * C;
    const int kid = me_gemm_kernel_id(); /* follows the SGEMM kernel in use (tests force "generic") */
    const int avx512 = kid == 2, avx2 = kid == 1;
    (void)avx512; (void)avx2;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (planes * HO * WO >= 16384)
    for (int64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * H * W;
#if ME_POOL_X86
        if (size == 2 && stride == 2 && pad == 0 && avx512) {
            for (int64_t ho = 0; ho < HO; ho++)
                pool2x2_row_avx512(xp + 2 * ho * W, xp + (2 * ho + 1) * W, y + (pl * HO + ho) * WO,
                                   argmax + (pl * HO + ho) * WO, WO, (int32_t)(2 * ho * W), (int32_t)W);
            continue;
        }
#endif
        if (size == 2 && stride == 2 && pad == 0) { /* the common case: one pass over the four taps */
            for (int64_t ho = 0; ho < HO; ho++) {
                float *yr = y + (pl * HO + ho) * WO;
                int32_t *ar = argmax + (pl * HO + ho) * WO;
                const float *r0 = xp + 2 * ho * W, *r1 = r0 + W;
                const int32_t o0 = (int32_t)(2 * ho * W), o1 = o0 + (int32_t)W;
                int64_t wo = 0;
#if ME_POOL_X86
                if (avx2) wo = pool2x2_row_avx2(r0, r1, yr, ar, WO, o0, (int32_t)W);
#endif
                for (; wo < WO; wo++) {
                    const int64_t c = 2 * wo;
                    float best = r0[c];
                    int32_t idx = o0 + (int32_t)c;
                    float v = r0[c + 1];
                    int better = (v > best) | (v != v);
                    best = better ? v : best;
                    idx = better ? o0 + (int32_t)c + 1 : idx;
                    v = r1[c];
                    better = (v > best) | (v != v);
                    best = better ? v : best;
                    idx = better ? o1 + (int32_t)c : idx;
                    v = r1[c + 1];
                    better = (v > best) | (v != v);
                    best = better ? v : best;
                    idx = better ? o1 + (int32_t)c + 1 : idx;
                    yr[wo] = best;
                    ar[wo] = idx;
                }
            }
            continue;
        }
        /* any other window, stride and padding (with pad 0 every column is interior) */
        maxpool_padded_plane(xp, y + pl * HO * WO, argmax + pl * HO * WO, H, W, HO, WO, size, stride, pad);
    }
}

/* dy (N,C,HO,WO), argmax (N,C,HO,WO) -> dx (N,C,H,W), overwritten; overlapping windows add up */
void me_maxpool2d_backward(const float *dy, const int32_t *argmax, float *dx,
                           int64_t N, int64_t C, int64_t H, int64_t W, int64_t HO, int64_t WO) {
    (void)me_maxpool2d_backward_checked(dy, argmax, dx, N, C, H, W, HO, WO);
}

/* The scatter of both backwards: dx = 0, then dx[argmax] += dy where the mask allows (y == NULL:
 * everywhere; else where y > 0, a select, so an Inf dy under a zero mask gives 0). Argmax
 * entries outside [0, H*W) are skipped; returns their number. */
static int64_t pool_scatter(const float *dy, const int32_t *argmax, const float *y, float *dx,
                            int64_t N, int64_t C, int64_t H, int64_t W, int64_t HO, int64_t WO) {
    const int64_t planes = N * C;
    const uint32_t HW = (uint32_t)(H * W);
    int64_t bad = 0;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) reduction(+ : bad) if (planes * H * W >= 16384)
    for (int64_t pl = 0; pl < planes; pl++) {
        float *dxp = dx + pl * H * W;
        const float *dyp = dy + pl * HO * WO, *yp = y ? y + pl * HO * WO : NULL;
        const int32_t *ap = argmax + pl * HO * WO;
        memset(dxp, 0, (size_t)(H * W) * sizeof(float));
        for (int64_t o = 0; o < HO * WO; o++) {
            const uint32_t a = (uint32_t)ap[o];
            if (a >= HW) bad++;
            else if (!yp || yp[o] > 0.0f) dxp[a] += dyp[o];
        }
    }
    return bad;
}

/* as me_maxpool2d_backward; argmax entries outside [0, H*W) are skipped and counted */
int64_t me_maxpool2d_backward_checked(const float *dy, const int32_t *argmax, float *dx,
                                      int64_t N, int64_t C, int64_t H, int64_t W, int64_t HO, int64_t WO) {
    return pool_scatter(dy, argmax, NULL, dx, N, C, H, W, HO, WO);
}

/* The max pooling backward fused with the backward of a ReLU that precedes the pooling:
 * dy (N,C,HO,WO), argmax, y (N,C,HO,WO) the pooling's output -> dx (N,C,H,W), overwritten,
 * = relu_backward(maxpool2d_backward(dy), relu output). Exact, not an approximation: every
 * gradient lands on its window's argmax p, where the ReLU output equals the pooled y, so the
 * ReLU mask "output(p) > 0" is "y > 0" and is applied as a select before the scatter (dy is
 * never multiplied: an Inf dy under a zero mask gives 0, as relu_backward does). One pass over
 * dx instead of two (pool scatter, then the ReLU select over the whole full-resolution
 * gradient). Argmax entries outside [0, H*W) are skipped and counted (returned). */
int64_t me_maxpool2d_relu_backward(const float *dy, const int32_t *argmax, const float *y, float *dx,
                                   int64_t N, int64_t C, int64_t H, int64_t W, int64_t HO, int64_t WO) {
    return pool_scatter(dy, argmax, y, dx, N, C, H, W, HO, WO);
}

/* ------------------------------------------------------------------ average pooling
 * As torch.nn.functional.avg_pool2d with no padding and floor mode (the divisor is always
 * size*size), and the global average over each H*W plane (adaptive_avg_pool2d to 1x1).
 * OpenMP over the N*C planes; every output sums its window in row-major order (fixed). */

/* x (N,C,H,W) -> y (N,C,HO,WO), HO = (H - size)/stride + 1: the mean of each size x size window */
void me_avgpool2d_forward(const float *x, float *y, int64_t N, int64_t C, int64_t H, int64_t W,
                          int64_t size, int64_t stride) {
    const int64_t HO = (H - size) / stride + 1, WO = (W - size) / stride + 1;
    const int64_t planes = N * C;
    const float inv = 1.0f / (float)(size * size);
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (planes * HO * WO * size * size >= 65536)
    for (int64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * H * W;
        for (int64_t ho = 0; ho < HO; ho++) {
            float *yr = y + (pl * HO + ho) * WO;
            for (int64_t wo = 0; wo < WO; wo++) yr[wo] = 0.0f;
            for (int64_t i = 0; i < size; i++) {
                const float *xr = xp + (ho * stride + i) * W;
                for (int64_t j = 0; j < size; j++)
                    for (int64_t wo = 0; wo < WO; wo++) yr[wo] += xr[wo * stride + j];
            }
            for (int64_t wo = 0; wo < WO; wo++) yr[wo] *= inv;
        }
    }
}

/* dy (N,C,HO,WO) -> dx (N,C,H,W), overwritten: each dy / (size*size) added to its window
 * (overlapping windows add up; pixels in no window get 0) */
void me_avgpool2d_backward(const float *dy, float *dx, int64_t N, int64_t C, int64_t H, int64_t W,
                           int64_t size, int64_t stride) {
    const int64_t HO = (H - size) / stride + 1, WO = (W - size) / stride + 1;
    const int64_t planes = N * C;
    const float inv = 1.0f / (float)(size * size);
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (planes * H * W >= 65536)
    for (int64_t pl = 0; pl < planes; pl++) {
        float *dxp = dx + pl * H * W;
        const float *dyp = dy + pl * HO * WO;
        memset(dxp, 0, (size_t)(H * W) * sizeof(float));
        for (int64_t ho = 0; ho < HO; ho++) {
            const float *dr = dyp + ho * WO;
            for (int64_t i = 0; i < size; i++) {
                float *xr = dxp + (ho * stride + i) * W;
                for (int64_t j = 0; j < size; j++)
                    for (int64_t wo = 0; wo < WO; wo++) xr[wo * stride + j] += dr[wo] * inv;
            }
        }
    }
}

/* x (N,C,H,W) -> y (N,C) = the mean of each H*W plane (16 partial sums, added in a fixed order) */
void me_global_avgpool2d_forward(const float *x, float *y, int64_t N, int64_t C, int64_t H, int64_t W) {
    const int64_t planes = N * C, HW = H * W;
    const float inv = 1.0f / (float)HW;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (planes * HW >= 65536)
    for (int64_t pl = 0; pl < planes; pl++) {
        y[pl] = me_row_sum(x + pl * HW, HW) * inv;
    }
}

/* dy (N,C) -> dx (N,C,H,W), overwritten: dy / (H*W) broadcast over each plane */
void me_global_avgpool2d_backward(const float *dy, float *dx, int64_t N, int64_t C, int64_t H, int64_t W) {
    const int64_t planes = N * C, HW = H * W;
    const float inv = 1.0f / (float)HW;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (planes * HW >= 65536)
    for (int64_t pl = 0; pl < planes; pl++) {
        const float g = dy[pl] * inv;
        float *d = dx + pl * HW;
        for (int64_t p = 0; p < HW; p++) d[p] = g;
    }
}
