/*
 * knn_codes's tile pass on AVX2 + FMA: 4 queries x 16 rows (one panel group, two ymm) per register
 * block, 8 accumulators. Modes (knn_codes.c): F32 (FMA; float16 rows were converted when the tile
 * was packed) and U7DOT (vpmaddubsw then vpmaddwd: int8 rows, the query quantized to 7 bits so
 * that no pair sum saturates int16).
 * t (one packed tile), queries [i0, i1) -> pushes into the queries' heaps.
 */
#include "knn_internal.h"

#include <math.h>
#include <string.h>

#pragma GCC optimize("fp-contract=off") /* scores as the numpy twin rounds them; FMA only where written */

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define Q4 4

__attribute__((target("avx2,fma"), always_inline)) static inline void kc256_push(
    const kc_ctx *c, const kc_tile *t, __m256 d0, __m256 d1, int64_t g, int64_t i, float *hv, int64_t *hi) {
    const int64_t nl = t->br - g * KC_LANES;
    float *h = hv + i * c->k;
    const float *rv = (c->metric == ME_KNN_COSINE ? t->rinv : t->rn) + g * KC_LANES;
    __m256 s0, s1;
    if (c->metric == ME_KNN_INNER_PRODUCT) {
        s0 = _mm256_sub_ps(_mm256_setzero_ps(), d0);
        s1 = _mm256_sub_ps(_mm256_setzero_ps(), d1);
    } else if (c->metric == ME_KNN_COSINE) {
        s0 = _mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(d0, _mm256_load_ps(rv)));
        s1 = _mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(d1, _mm256_load_ps(rv + 8)));
    } else {
        const __m256 m2 = _mm256_set1_ps(-2.0f);
        s0 = _mm256_fmadd_ps(d0, m2, _mm256_load_ps(rv));
        s1 = _mm256_fmadd_ps(d1, m2, _mm256_load_ps(rv + 8));
    }
    const __m256 thr = _mm256_set1_ps(h[0]);
    uint32_t m = (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(s0, thr, _CMP_LT_OQ)) |
                 ((uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(s1, thr, _CMP_LT_OQ)) << 8);
    m &= nl >= KC_LANES ? 0xFFFFu : (1u << nl) - 1u;
    if (m) {
        float sv[KC_LANES];
        _mm256_storeu_ps(sv, s0);
        _mm256_storeu_ps(sv + 8, s1);
        knn_push_mask(sv, m, t->r0 + g * KC_LANES, h, hi + i * c->k, c->k);
    }
}

__attribute__((target("avx2,fma"))) static void kc256_f32(const kc_ctx *c, const kc_tile *t, int64_t i0,
                                                          int64_t i1, float *hv, int64_t *hi) {
    const int64_t D = c->D, G = (t->br + KC_LANES - 1) / KC_LANES;
    for (int64_t a = i0; a < i1; a += Q4) {
        const int nq = (int)(i1 - a < Q4 ? i1 - a : Q4);
        const float *q0 = c->q + a * D;
        const float *q1 = c->q + (a + (nq > 1 ? 1 : 0)) * D;
        const float *q2 = c->q + (a + (nq > 2 ? 2 : 0)) * D;
        const float *q3 = c->q + (a + (nq > 3 ? 3 : 0)) * D;
        for (int64_t g = 0; g < G; g++) {
            const float *P = (const float *)(const void *)(t->panel + g * D * KC_LANES);
            __m256 a00 = _mm256_setzero_ps(), a01 = a00, a10 = a00, a11 = a00;
            __m256 a20 = a00, a21 = a00, a30 = a00, a31 = a00;
            for (int64_t d = 0; d < D; d++) {
                const __m256 p0 = _mm256_load_ps(P + d * KC_LANES), p1 = _mm256_load_ps(P + d * KC_LANES + 8);
                __m256 b;
#define KC_FMA2(qq, x0, x1)              \
    b = _mm256_broadcast_ss(qq + d);     \
    x0 = _mm256_fmadd_ps(b, p0, x0);     \
    x1 = _mm256_fmadd_ps(b, p1, x1);
                KC_FMA2(q0, a00, a01) KC_FMA2(q1, a10, a11) KC_FMA2(q2, a20, a21) KC_FMA2(q3, a30, a31)
#undef KC_FMA2
            }
            kc256_push(c, t, a00, a01, g, a, hv, hi);
            if (nq > 1) kc256_push(c, t, a10, a11, g, a + 1, hv, hi);
            if (nq > 2) kc256_push(c, t, a20, a21, g, a + 2, hv, hi);
            if (nq > 3) kc256_push(c, t, a30, a31, g, a + 3, hv, hi);
        }
    }
}

/* sum (c_r + 128) c_q in int32 -> float dots of the decoded vectors, 8 lanes */
__attribute__((target("avx2,fma"), always_inline)) static inline __m256 kc256_u7dot(const kc_tile *t,
                                                                                    __m256i acc, int64_t l0,
                                                                                    float qs, int32_t qsum) {
    const __m256 f = _mm256_cvtepi32_ps(_mm256_sub_epi32(acc, _mm256_set1_epi32(qsum * 128)));
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(qs), _mm256_load_ps(t->scale + l0)), f);
}

__attribute__((target("avx2,fma"))) static void kc256_u7(const kc_ctx *c, const kc_tile *t, int64_t i0,
                                                         int64_t i1, float *hv, int64_t *hi) {
    const int64_t DW = c->DW, G = (t->br + KC_LANES - 1) / KC_LANES;
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t a = i0; a < i1; a += Q4) {
        const int nq = (int)(i1 - a < Q4 ? i1 - a : Q4);
        const int32_t *q0 = (const int32_t *)c->qw + a * DW;
        const int32_t *q1 = (const int32_t *)c->qw + (a + (nq > 1 ? 1 : 0)) * DW;
        const int32_t *q2 = (const int32_t *)c->qw + (a + (nq > 2 ? 2 : 0)) * DW;
        const int32_t *q3 = (const int32_t *)c->qw + (a + (nq > 3 ? 3 : 0)) * DW;
        for (int64_t g = 0; g < G; g++) {
            const uint32_t *P = t->panel + g * DW * KC_LANES;
            __m256i a00 = _mm256_setzero_si256(), a01 = a00, a10 = a00, a11 = a00;
            __m256i a20 = a00, a21 = a00, a30 = a00, a31 = a00;
            for (int64_t w = 0; w < DW; w++) {
                const __m256i p0 = _mm256_load_si256((const __m256i *)(P + w * KC_LANES));
                const __m256i p1 = _mm256_load_si256((const __m256i *)(P + w * KC_LANES + 8));
                __m256i b;
#define KC_DP2(qq, x0, x1)                                                          \
    b = _mm256_set1_epi32(qq[w]);                                                   \
    x0 = _mm256_add_epi32(x0, _mm256_madd_epi16(_mm256_maddubs_epi16(p0, b), ones)); \
    x1 = _mm256_add_epi32(x1, _mm256_madd_epi16(_mm256_maddubs_epi16(p1, b), ones));
                KC_DP2(q0, a00, a01) KC_DP2(q1, a10, a11) KC_DP2(q2, a20, a21) KC_DP2(q3, a30, a31)
#undef KC_DP2
            }
            const int64_t l0 = g * KC_LANES;
            kc256_push(c, t, kc256_u7dot(t, a00, l0, c->qs[a], c->qsum[a]), kc256_u7dot(t, a01, l0 + 8, c->qs[a], c->qsum[a]), g, a, hv,
                       hi);
            if (nq > 1)
                kc256_push(c, t, kc256_u7dot(t, a10, l0, c->qs[a + 1], c->qsum[a + 1]), kc256_u7dot(t, a11, l0 + 8, c->qs[a + 1], c->qsum[a + 1]),
                           g, a + 1, hv, hi);
            if (nq > 2)
                kc256_push(c, t, kc256_u7dot(t, a20, l0, c->qs[a + 2], c->qsum[a + 2]), kc256_u7dot(t, a21, l0 + 8, c->qs[a + 2], c->qsum[a + 2]),
                           g, a + 2, hv, hi);
            if (nq > 3)
                kc256_push(c, t, kc256_u7dot(t, a30, l0, c->qs[a + 3], c->qsum[a + 3]), kc256_u7dot(t, a31, l0 + 8, c->qs[a + 3], c->qsum[a + 3]),
                           g, a + 3, hv, hi);
        }
    }
}

/* float16 rows through F16C, 8 values at a time; the other tiles as the portable packing */
__attribute__((target("avx2,f16c"))) void knn_codes_pack_avx2(int dtype, int mode, const void *codes,
                                                              const float *scales, int64_t D, int64_t DW,
                                                              int64_t r0, int64_t br, uint32_t *panel, float *rn,
                                                              float *scale, float *rinv) {
    if (dtype != ME_CODES_F16 || mode != ME_CODES_MODE_F32) {
        knn_codes_pack_generic(dtype, mode, codes, scales, D, DW, r0, br, panel, rn, scale, rinv);
        return;
    }
    const int64_t G = (br + KC_LANES - 1) / KC_LANES;
    for (int64_t g = 0; g < G; g++) {
        uint32_t *P = panel + g * DW * KC_LANES;
        for (int l = 0; l < KC_LANES; l++) {
            const int64_t row = g * KC_LANES + l;
            float ss = 0.0f;
            if (row >= br) {
                for (int64_t w = 0; w < DW; w++) P[w * KC_LANES + l] = 0;
            } else {
                const uint16_t *src = (const uint16_t *)codes + (r0 + row) * D;
                for (int64_t w = 0; w < D; w += 8) {
                    const int n = D - w < 8 ? (int)(D - w) : 8;
                    uint16_t h[8] = {0};
                    memcpy(h, src + w, (size_t)n * 2);
                    float v[8];
                    _mm256_storeu_ps(v, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h)));
                    for (int e = 0; e < n; e++) {
                        memcpy(P + (w + e) * KC_LANES + l, v + e, 4);
                        ss += v[e] * v[e];
                    }
                }
            }
            rn[row] = ss;
            rinv[row] = ss > 0.0f ? 1.0f / sqrtf(ss) : 0.0f;
            scale[row] = 0.0f;
        }
    }
}

void knn_codes_tile_avx2(const kc_ctx *c, const kc_tile *t, int64_t i0, int64_t i1, float *hv, int64_t *hi) {
    if (c->mode == ME_CODES_MODE_U7DOT)
        kc256_u7(c, t, i0, i1, hv, hi);
    else
        kc256_f32(c, t, i0, i1, hv, hi);
}

#else /* not x86: never selected */
void knn_codes_pack_avx2(int dtype, int mode, const void *codes, const float *scales, int64_t D, int64_t DW,
                         int64_t r0, int64_t br, uint32_t *panel, float *rn, float *scale, float *rinv) {
    knn_codes_pack_generic(dtype, mode, codes, scales, D, DW, r0, br, panel, rn, scale, rinv);
}
void knn_codes_tile_avx2(const kc_ctx *c, const kc_tile *t, int64_t i0, int64_t i1, float *hv, int64_t *hi) {
    knn_codes_tile_generic(c, t, i0, i1, hv, hi);
}
#endif
