/*
 * knn_codes's tile pass on AVX-512: 8 queries x 32 rows (two panel groups) per register block,
 * 16 accumulators. Modes (knn_codes.c): F32 (AVX-512F FMA; float16 rows were converted when the
 * tile was packed), BF16DOT (vdpbf16ps, AVX-512 BF16), U8DOT (vpdpbusd, AVX-512 VNNI).
 * t (one packed tile), queries [i0, i1) -> pushes into the queries' heaps.
 */
#include "knn_internal.h"

#include <math.h>

#pragma GCC optimize("fp-contract=off") /* the packed norms are the portable packing's, bit for bit */

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define Q8 8

/* one query's scores for one group of 16 rows (dot products in dot; rv: the rows' squared norms,
 * or 1/|r| for the cosine) -> pushes of the valid lanes below the heap root */
__attribute__((target("avx512f"), always_inline)) static inline void kc512_push(int metric, __m512 dot, __m512 rv,
                                                                              __mmask16 valid, int64_t base,
                                                                              float *h, int64_t *x, int64_t k) {
    __m512 s;
    if (metric == ME_KNN_INNER_PRODUCT)
        s = _mm512_sub_ps(_mm512_setzero_ps(), dot);
    else if (metric == ME_KNN_COSINE)
        s = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(dot, rv));
    else
        s = _mm512_fmadd_ps(dot, _mm512_set1_ps(-2.0f), rv);
    const __mmask16 m = _mm512_mask_cmp_ps_mask(valid, s, _mm512_set1_ps(h[0]), _CMP_LT_OQ);
    if (m) {
        float sv[KC_LANES];
        _mm512_storeu_ps(sv, s);
        knn_push_mask(sv, m, base, h, x, k);
    }
}

/* per pair of groups (g, g+1): the rows' norms (or inverse norms) and valid lanes */
#define KC512_GROUPS                                                                                   \
    const float *rvp = (c->metric == ME_KNN_COSINE ? t->rinv : t->rn) + g * KC_LANES;                  \
    const __m512 rv0 = _mm512_load_ps(rvp), rv1 = g + 1 < G ? _mm512_load_ps(rvp + KC_LANES) : rv0;    \
    const int64_t nl = t->br - g * KC_LANES;                                                           \
    const __mmask16 v0 = (__mmask16)(nl >= KC_LANES ? 0xFFFFu : (1u << nl) - 1u);                      \
    const __mmask16 v1 = (__mmask16)(nl >= 2 * KC_LANES ? 0xFFFFu : nl > KC_LANES ? (1u << (nl - KC_LANES)) - 1u : 0u); \
    const int64_t base = t->r0 + g * KC_LANES;

/* query a + i's pushes for its two accumulators (dot products d0, d1) */
#define KC512_EPI(i, d0, d1)                                                                \
    if (i < nq) {                                                                           \
        float *h_ = hv + (a + i) * c->k;                                                    \
        int64_t *x_ = hi + (a + i) * c->k;                                                  \
        kc512_push(c->metric, d0, rv0, v0, base, h_, x_, c->k);                             \
        kc512_push(c->metric, d1, rv1, v1, base + KC_LANES, h_, x_, c->k);                  \
    }

/* the queries of one block: nq real ones from a, the rest repeat a (computed, never pushed) */
static inline void kc512_rows(const kc_ctx *c, int64_t a, int nq, int64_t stride, const void *base,
                              const void *rows[Q8]) {
    for (int i = 0; i < Q8; i++)
        rows[i] = (const char *)base + (a + (i < nq ? i : 0)) * stride;
    (void)c;
}

/* The register block every mode shares: 8 queries (rows of NW words of type QT from QBASE) x two
 * groups of 16 rows (panel words P0, P1), 16 accumulators of type VEC from ZERO. For each word w:
 * p0, p1 = LOAD(panel words), then STEP(qq, x0, x1) adds query qq's word w to the pair (x0, x1);
 * after the last word EPILOGUE pushes the block's scores. */
#define KC512_BLOCKS(VEC, ZERO, PV, LOAD, QT, QBASE, NW, STEP, EPILOGUE)                               \
    const int64_t nw = (NW), G = (t->br + KC_LANES - 1) / KC_LANES;                                 \
    for (int64_t a = i0; a < i1; a += Q8) {                                                         \
        const int nq = (int)(i1 - a < Q8 ? i1 - a : Q8);                                            \
        const void *rows[Q8];                                                                       \
        kc512_rows(c, a, nq, nw * 4, (QBASE), rows);                                                \
        const QT *q0 = rows[0], *q1 = rows[1], *q2 = rows[2], *q3 = rows[3];                        \
        const QT *q4 = rows[4], *q5 = rows[5], *q6 = rows[6], *q7 = rows[7];                        \
        for (int64_t g = 0; g < G; g += 2) {                                                        \
            const uint32_t *P0 = t->panel + g * nw * KC_LANES;                                      \
            const uint32_t *P1 = g + 1 < G ? P0 + nw * KC_LANES : P0;                               \
            VEC a00 = ZERO, a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00;       \
            VEC a31 = a00, a40 = a00, a41 = a00, a50 = a00, a51 = a00, a60 = a00, a61 = a00;        \
            VEC a70 = a00, a71 = a00;                                                               \
            for (int64_t w = 0; w < nw; w++) {                                                      \
                const PV p0 = LOAD(P0 + w * KC_LANES), p1 = LOAD(P1 + w * KC_LANES);                \
                STEP(q0, a00, a01) STEP(q1, a10, a11) STEP(q2, a20, a21) STEP(q3, a30, a31)         \
                STEP(q4, a40, a41) STEP(q5, a50, a51) STEP(q6, a60, a61) STEP(q7, a70, a71)         \
            }                                                                                       \
            KC512_GROUPS                                                                            \
            EPILOGUE                                                                                \
        }                                                                                           \
    }

#define KC512_EPI_ALL                                                                                \
    KC512_EPI(0, a00, a01) KC512_EPI(1, a10, a11) KC512_EPI(2, a20, a21) KC512_EPI(3, a30, a31)      \
    KC512_EPI(4, a40, a41) KC512_EPI(5, a50, a51) KC512_EPI(6, a60, a61) KC512_EPI(7, a70, a71)

#define KC_LOAD_PS(p) _mm512_load_ps((const float *)(const void *)(p))
#define KC_STEP_FMA(qq, x0, x1)                     \
    {                                               \
        const __m512 b = _mm512_set1_ps(qq[w]);     \
        x0 = _mm512_fmadd_ps(b, p0, x0);            \
        x1 = _mm512_fmadd_ps(b, p1, x1);            \
    }

/* F32: float32 FMA of the query's values and the decoded rows */
__attribute__((target("avx512f,fma"))) static void kc512_f32(const kc_ctx *c, const kc_tile *t, int64_t i0,
                                                             int64_t i1, float *hv, int64_t *hi) {
    KC512_BLOCKS(__m512, _mm512_setzero_ps(), __m512, KC_LOAD_PS, float, c->q, c->D, KC_STEP_FMA, KC512_EPI_ALL)
}

#define KC_LOAD_BH(p) ((__m512bh)_mm512_load_si512(p))
#define KC_STEP_BF16(qq, x0, x1)                                   \
    {                                                              \
        const __m512bh b = (__m512bh)_mm512_set1_epi32(qq[w]);     \
        x0 = _mm512_dpbf16_ps(x0, b, p0);                          \
        x1 = _mm512_dpbf16_ps(x1, b, p1);                          \
    }

/* BF16DOT: vdpbf16ps of the query's bfloat16 pairs and the rows' */
__attribute__((target("avx512f,avx512bf16"))) static void kc512_bf16(const kc_ctx *c, const kc_tile *t,
                                                                     int64_t i0, int64_t i1, float *hv,
                                                                     int64_t *hi) {
    KC512_BLOCKS(__m512, _mm512_setzero_ps(), __m512bh, KC_LOAD_BH, int32_t, c->qw, c->DW, KC_STEP_BF16,
                 KC512_EPI_ALL)
}

/* sum (c_r + 128) c_q in int32 -> float dot of the decoded vectors */
__attribute__((target("avx512f"), always_inline)) static inline __m512 kc512_u8dot(__m512i acc, __m512 scale,
                                                                                   float qs, int32_t qsum) {
    const __m512 f = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc, _mm512_set1_epi32(qsum * 128)));
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(qs), scale), f);
}

#define KC_LOAD_SI(p) _mm512_load_si512(p)
#define KC_STEP_U8(qq, x0, x1)                         \
    {                                                  \
        const __m512i b = _mm512_set1_epi32(qq[w]);    \
        x0 = _mm512_dpbusd_epi32(x0, p0, b);           \
        x1 = _mm512_dpbusd_epi32(x1, p1, b);           \
    }
#define KC_U8(i, x0, x1)                                                       \
    KC512_EPI(i, kc512_u8dot(x0, sc0, c->qs[a + i], c->qsum[a + i]),           \
              kc512_u8dot(x1, sc1, c->qs[a + i], c->qsum[a + i]))
#define KC_EPI_U8                                                                                  \
    const __m512 sc0 = _mm512_load_ps(t->scale + g * KC_LANES);                                    \
    const __m512 sc1 = g + 1 < G ? _mm512_load_ps(t->scale + (g + 1) * KC_LANES) : sc0;            \
    KC_U8(0, a00, a01) KC_U8(1, a10, a11) KC_U8(2, a20, a21) KC_U8(3, a30, a31)                    \
    KC_U8(4, a40, a41) KC_U8(5, a50, a51) KC_U8(6, a60, a61) KC_U8(7, a70, a71)

/* U8DOT: vpdpbusd of the rows' unsigned bytes and the query's signed ones */
__attribute__((target("avx512f,avx512vnni"))) static void kc512_u8(const kc_ctx *c, const kc_tile *t,
                                                                   int64_t i0, int64_t i1, float *hv,
                                                                   int64_t *hi) {
    KC512_BLOCKS(__m512i, _mm512_setzero_si512(), __m512i, KC_LOAD_SI, int32_t, c->qw, c->DW, KC_STEP_U8,
                 KC_EPI_U8)
}

/* 16 x 16 transpose of 32-bit words: r[l] (row l) -> r[w] (word w of the 16 rows) */
__attribute__((target("avx512f"), always_inline)) static inline void kc512_transpose(__m512i r[16]) {
    __m512i t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) { /* u[4i + m], 128-bit lane L: word 4L + m of rows 4i .. 4i+3 */
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int m = 0; m < 4; m++) {
        const __m512i x0 = _mm512_shuffle_i32x4(u[m], u[4 + m], 0x88), x1 = _mm512_shuffle_i32x4(u[m], u[4 + m], 0xDD);
        const __m512i y0 = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0x88);
        const __m512i y1 = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0xDD);
        r[m] = _mm512_shuffle_i32x4(x0, y0, 0x88);
        r[4 + m] = _mm512_shuffle_i32x4(x1, y1, 0x88);
        r[8 + m] = _mm512_shuffle_i32x4(x0, y0, 0xDD);
        r[12 + m] = _mm512_shuffle_i32x4(x1, y1, 0xDD);
    }
}

/* 32 float16 values -> the same 32 values rounded to bfloat16 (nearest even), in order */
__attribute__((target("avx512f,avx512bf16"), always_inline)) static inline __m512i kc512_f16_to_bf16(__m512i h) {
    const __m512 lo = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
    const __m512 hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

/* words [w0, w0 + nw) (nw <= 16) of stored row j as the panel holds them */
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) static inline __m512i kc512_row_words(
    int dtype, int mode, const void *codes, const float *scales, int64_t D, int64_t j, int64_t w0, int64_t nw) {
    const __mmask16 m16 = (__mmask16)(nw >= 16 ? 0xFFFFu : (1u << nw) - 1u);
    if (mode == ME_CODES_MODE_F32) {
        if (dtype == ME_CODES_F32)
            return _mm512_castps_si512(_mm512_maskz_loadu_ps(m16, (const float *)codes + j * D + w0));
        if (dtype == ME_CODES_F16)
            return _mm512_castps_si512(
                _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m16, (const uint16_t *)codes + j * D + w0)));
        if (dtype == ME_CODES_BF16)
            return _mm512_slli_epi32(
                _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m16, (const uint16_t *)codes + j * D + w0)), 16);
        const __m512 v =
            _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m16, (const int8_t *)codes + j * D + w0)));
        return _mm512_castps_si512(_mm512_mul_ps(v, _mm512_set1_ps(scales[j])));
    }
    if (mode == ME_CODES_MODE_BF16DOT) {
        const int64_t nh = D - 2 * w0 < 32 ? D - 2 * w0 : 32;
        const __mmask32 m = (__mmask32)(nh >= 32 ? 0xFFFFFFFFu : (1u << nh) - 1u);
        return _mm512_maskz_loadu_epi16(m, (const uint16_t *)codes + j * D + 2 * w0); /* bfloat16 codes */
    }
    const int64_t nb = D - 4 * w0 < 64 ? D - 4 * w0 : 64;
    const __mmask64 m = (__mmask64)(nb >= 64 ? ~0ull : (1ull << nb) - 1ull);
    return _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, (const int8_t *)codes + j * D + 4 * w0),
                            _mm512_set1_epi8((char)0x80));
}

/* the sum of squares of the decoded values of panel word vector v, added to ss in the portable
 * packing's order (d ascending, a product then a sum) */
__attribute__((target("avx512f,avx512bw"), always_inline)) static inline __m512 kc512_norm_add(
    int mode, __m512 ss, __m512i v, __m512 scale, int64_t d0, int64_t D) {
    if (mode == ME_CODES_MODE_F32) {
        const __m512 x = _mm512_castsi512_ps(v);
        return _mm512_add_ps(ss, _mm512_mul_ps(x, x));
    }
    if (mode == ME_CODES_MODE_BF16DOT) {
        const __m512 a = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
        const __m512 b = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xFFFF0000u)));
        ss = _mm512_add_ps(ss, _mm512_mul_ps(a, a));
        return d0 + 1 < D ? _mm512_add_ps(ss, _mm512_mul_ps(b, b)) : ss;
    }
    const __m512i c = _mm512_xor_si512(v, _mm512_set1_epi8((char)0x80)); /* the int8 codes again */
    for (int t = 0; t < 4 && d0 + t < D; t++) {
        const __m512i ct = _mm512_srai_epi32(_mm512_slli_epi32(c, 24 - 8 * t), 24);
        const __m512 x = _mm512_mul_ps(_mm512_cvtepi32_ps(ct), scale);
        ss = _mm512_add_ps(ss, _mm512_mul_ps(x, x));
    }
    return ss;
}

static void kc512_pack(int dtype, int mode, const void *codes, const float *scales, int64_t D, int64_t DW,
                       int64_t r0, int64_t br, uint32_t *panel, float *rn, float *scale, float *rinv);
static void kc512_pack_bf16(int dtype, int mode, const void *codes, const float *scales, int64_t D, int64_t DW,
                            int64_t r0, int64_t br, uint32_t *panel, float *rn, float *scale, float *rinv);

void knn_codes_pack_avx512(int dtype, int mode, const void *codes, const float *scales, int64_t D, int64_t DW,
                           int64_t r0, int64_t br, uint32_t *panel, float *rn, float *scale, float *rinv) {
    if (dtype == ME_CODES_F16 && mode == ME_CODES_MODE_BF16DOT) /* AVX-512 BF16 conversions */
        kc512_pack_bf16(dtype, mode, codes, scales, D, DW, r0, br, panel, rn, scale, rinv);
    else
        kc512_pack(dtype, mode, codes, scales, D, DW, r0, br, panel, rn, scale, rinv);
}

/* the packing loop (ROW_WORDS: the row loader), shared by the two targets below */
#define KC512_PACK_BODY(ROW_WORDS) \
    const int64_t G = (br + KC_LANES - 1) / KC_LANES; \
    const int64_t per = mode == ME_CODES_MODE_F32 ? 1 : mode == ME_CODES_MODE_BF16DOT ? 2 : 4; /* dims per word */ \
    for (int64_t g = 0; g < G; g++) { \
        uint32_t *P = panel + g * DW * KC_LANES; \
        const int64_t nl = br - g * KC_LANES < KC_LANES ? br - g * KC_LANES : KC_LANES; \
        const __mmask16 valid = (__mmask16)(nl >= 16 ? 0xFFFFu : (1u << nl) - 1u); \
        __m512 sc = _mm512_setzero_ps(); \
        if (scales) sc = _mm512_maskz_loadu_ps(valid, scales + r0 + g * KC_LANES); \
        __m512 ss = _mm512_setzero_ps(); \
        for (int64_t w0 = 0; w0 < DW; w0 += 16) { \
            const int64_t nw = DW - w0 < 16 ? DW - w0 : 16; \
            __m512i r[16]; \
            for (int l = 0; l < 16; l++) \
                r[l] = l < nl ? ROW_WORDS(dtype, mode, codes, scales, D, r0 + g * KC_LANES + l, w0, nw) \
                              : _mm512_setzero_si512(); \
            kc512_transpose(r); \
            for (int64_t w = 0; w < nw; w++) { \
                _mm512_store_si512(P + (w0 + w) * KC_LANES, r[w]); \
                ss = kc512_norm_add(mode, ss, r[w], sc, (w0 + w) * per, D); \
            } \
        } \
        ss = _mm512_maskz_mov_ps(valid, ss); \
        _mm512_store_ps(rn + g * KC_LANES, ss); \
        const __mmask16 pos = _mm512_cmp_ps_mask(ss, _mm512_setzero_ps(), _CMP_GT_OQ); \
        _mm512_store_ps(rinv + g * KC_LANES, \
                        _mm512_maskz_div_ps(pos, _mm512_set1_ps(1.0f), _mm512_sqrt_ps(ss))); \
        _mm512_store_ps(scale + g * KC_LANES, sc); \
    } \
    (void)0

__attribute__((target("avx512f,avx512bw,avx512vl"))) static void kc512_pack(
    int dtype, int mode, const void *codes, const float *scales, int64_t D, int64_t DW, int64_t r0, int64_t br,
    uint32_t *panel, float *rn, float *scale, float *rinv) {
    KC512_PACK_BODY(kc512_row_words);
}

/* float16 codes for BF16DOT: rows converted by vcvtph2ps then vcvtne2ps2bf16 */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"), always_inline)) static inline __m512i kc512_row_bf16(
    int dtype, int mode, const void *codes, const float *scales, int64_t D, int64_t j, int64_t w0, int64_t nw) {
    const int64_t nh = D - 2 * w0 < 32 ? D - 2 * w0 : 32;
    const __mmask32 m = (__mmask32)(nh >= 32 ? 0xFFFFFFFFu : (1u << nh) - 1u);
    (void)dtype, (void)mode, (void)scales, (void)nw;
    return kc512_f16_to_bf16(_mm512_maskz_loadu_epi16(m, (const uint16_t *)codes + j * D + 2 * w0));
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) static void kc512_pack_bf16(
    int dtype, int mode, const void *codes, const float *scales, int64_t D, int64_t DW, int64_t r0, int64_t br,
    uint32_t *panel, float *rn, float *scale, float *rinv) {
    KC512_PACK_BODY(kc512_row_bf16);
}

void knn_codes_tile_avx512(const kc_ctx *c, const kc_tile *t, int64_t i0, int64_t i1, float *hv,
                           int64_t *hi) {
    if (c->mode == ME_CODES_MODE_BF16DOT)
        kc512_bf16(c, t, i0, i1, hv, hi);
    else if (c->mode == ME_CODES_MODE_U8DOT)
        kc512_u8(c, t, i0, i1, hv, hi);
    else
        kc512_f32(c, t, i0, i1, hv, hi);
}

#else /* not x86: never selected (me_knn_codes_mode and the SGEMM kernel id stay generic) */
void knn_codes_pack_avx512(int dtype, int mode, const void *codes, const float *scales, int64_t D,
                           int64_t DW, int64_t r0, int64_t br, uint32_t *panel, float *rn, float *scale,
                           float *rinv) {
    knn_codes_pack_generic(dtype, mode, codes, scales, D, DW, r0, br, panel, rn, scale, rinv);
}
void knn_codes_tile_avx512(const kc_ctx *c, const kc_tile *t, int64_t i0, int64_t i1, float *hv,
                           int64_t *hi) {
    knn_codes_tile_generic(c, t, i0, i1, hv, hi);
}
#endif
