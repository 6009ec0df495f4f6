/*
 * k nearest neighbours over stored codes: float32, float16, bfloat16 or int8 rows (int8 with one
 * float32 scale per row), without decoding the gallery to a float32 copy.
 * q (N,D) float32, codes (M,D) -> indices (N,k) int64, distances (N,k) float32.
 *
 * Reference rows are taken in tiles (about 256 KB of panel each); the threads share out the tiles
 * (tile b to thread b mod the team size) and keep one bounded max-heap of k (score, index) pairs per query
 * each. A tile is packed once into panels of 16 rows x DW 32-bit words (one word per lane), so the
 * ISA kernels (knn_codes_avx2.c, knn_codes_avx512.c) read 16 rows' word w as one vector and
 * broadcast the query's word w; the scores never leave the registers unless they beat a heap root.
 * The modes (engine.h) set the words and the arithmetic of the ranking scores:
 *   F32      word = decoded float32 value; dot = sum q_d r_d in float32 (FMA on AVX2 / AVX-512,
 *            a product then a sum on the portable path);
 *   BF16DOT  word = two bfloat16 values (dims 2w, 2w+1): the bfloat16 codes, or float16 codes
 *            rounded to bfloat16 (nearest even); the query rounded likewise; vdpbf16ps sums the
 *            pair products into float32 (subnormal bfloat16 inputs count as zero);
 *   U8DOT    word = four int8 codes plus 128 (unsigned bytes); the query quantized per row,
 *            sq = max|q|/127, c_q = rint(q/sq) in [-127, 127]; vpdpbusd gives
 *            sum (c_r + 128) c_q exactly in int32, and dot = (sq * s_r) * (that - 128 sum c_q);
 *   U7DOT    the same with sq = max|q|/63 (vpmaddubsw's pairs of u8 x s8 products then stay
 *            below 2^15).
 * Scores: |r|^2 - 2 dot (Euclidean; |r|^2 of the decoded row in float32), -dot (inner product),
 * -dot/|r| (cosine, unit queries). After the last tile the per-thread heaps are merged by
 * (score, index), so the candidates are the k best whatever the thread count, and each query's
 * values are recomputed in double from q and the decoded rows and sorted by (value, index).
 * Memory: per thread one tile's panel, norms and scales, and (threads > 1) N*k heap entries.
 */
#include "knn_internal.h"

#pragma GCC optimize("fp-contract=off") /* the packed norms and the portable scores round as the numpy twin */

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ------------------------------------------------------------------ decoding */
static inline float kc_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint32_t kc_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* IEEE binary16 bits -> float32 (exact, subnormals, infinities and NaN included) */
static inline float kc_half(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1Fu) return kc_bits_f32(sign | 0x7F800000u | (m << 13));
    if (e == 0) { /* zero or subnormal: m * 2^-24 */
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return kc_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

/* float32 -> bfloat16 bits, round to nearest even (finite inputs) */
static inline uint32_t kc_bf16(float f) {
    uint32_t u = kc_f32_bits(f);
    return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

/* value d of stored row j, as Index._decode gives it */
static inline float kc_value(int dtype, const void *codes, const float *scales, int64_t D, int64_t j,
                             int64_t d) {
    switch (dtype) {
    case ME_CODES_F16: return kc_half(((const uint16_t *)codes)[j * D + d]);
    case ME_CODES_BF16: return kc_bits_f32((uint32_t)((const uint16_t *)codes)[j * D + d] << 16);
    case ME_CODES_I8: return (float)((const int8_t *)codes)[j * D + d] * scales[j];
    default: return ((const float *)codes)[j * D + d];
    }
}

/* ------------------------------------------------------------------ modes and sizes */
int me_knn_codes_mode(int dtype, int64_t D) {
    int f = me_cpu_features(), kid = me_gemm_kernel_id();
    if ((dtype == ME_CODES_BF16 || dtype == ME_CODES_F16) && kid == 2 && (f & ME_CPU_AVX512BF16))
        return ME_CODES_MODE_BF16DOT;
    if (dtype == ME_CODES_I8 && D <= 8192) { /* int32 sums of D products of |c| <= 255 x 127 */
        if (kid == 2 && (f & ME_CPU_AVX512VNNI)) return ME_CODES_MODE_U8DOT;
        if (kid >= 1) return ME_CODES_MODE_U7DOT;
    }
    return ME_CODES_MODE_F32;
}

static int64_t kc_words(int mode, int64_t D) {
    if (mode == ME_CODES_MODE_BF16DOT) return (D + 1) / 2;
    if (mode == ME_CODES_MODE_U8DOT || mode == ME_CODES_MODE_U7DOT) return (D + 3) / 4;
    return D;
}

int64_t me_knn_codes_tile(int mode, int64_t D, int64_t tile_r) {
    if (tile_r > 0) return tile_r;
    int64_t t = (262144 / (kc_words(mode, D) * 4)) / 32 * 32;
    return t < 32 ? 32 : t > 8192 ? 8192 : t;
}

static inline int64_t kc_up(int64_t n) { return (n + KC_ALIGN - 1) / KC_ALIGN * KC_ALIGN; }

/* bytes of one thread's tile buffers */
static int64_t kc_tile_bytes(int mode, int64_t D, int64_t tile_r) {
    int64_t G = (tile_r + KC_LANES - 1) / KC_LANES, DW = kc_words(mode, D);
    return kc_up(G * DW * KC_LANES * 4) + 3 * kc_up(G * KC_LANES * 4);
}

int64_t me_knn_codes_workspace_size(int mode, int64_t N, int64_t M, int64_t D, int64_t k, int64_t tile_r,
                                    int num_threads) {
    int64_t T = num_threads < 1 ? 1 : num_threads, DW = kc_words(mode, D);
    tile_r = me_knn_codes_tile(mode, D, tile_r);
    return KC_ALIGN + kc_up(N * DW * 4) + 2 * kc_up(N * 4) + T * kc_tile_bytes(mode, D, tile_r) +
           (T - 1) * (kc_up(N * k * 4) + kc_up(N * k * 8));
}

/* ------------------------------------------------------------------ packing */
/* rows [r0, r0 + br) -> the tile's panel (zero words past br; int8 codes as c + 128), norms, scales */
void knn_codes_pack_generic(int dtype, int mode, const void *codes, const float *scales, int64_t D,
                            int64_t DW, int64_t r0, int64_t br, uint32_t *panel, float *rn, float *scale,
                            float *rinv) {
    const int64_t G = (br + KC_LANES - 1) / KC_LANES;
    for (int64_t g = 0; g < G; g++) {
        uint32_t *P = panel + g * DW * KC_LANES;
        for (int l = 0; l < KC_LANES; l++) {
            const int64_t row = g * KC_LANES + l, j = r0 + row;
            float ss = 0.0f;
            if (row >= br) {
                for (int64_t w = 0; w < DW; w++) P[w * KC_LANES + l] = 0;
            } else if (mode == ME_CODES_MODE_F32) {
                for (int64_t w = 0; w < D; w++) {
                    float v = kc_value(dtype, codes, scales, D, j, w);
                    P[w * KC_LANES + l] = kc_f32_bits(v);
                    ss += v * v;
                }
            } else if (mode == ME_CODES_MODE_BF16DOT) {
                const uint16_t *src = (const uint16_t *)codes + j * D;
                for (int64_t w = 0; w < DW; w++) {
                    uint32_t lo = src[2 * w], hi = 2 * w + 1 < D ? src[2 * w + 1] : 0;
                    if (dtype == ME_CODES_F16) {
                        lo = kc_bf16(kc_half((uint16_t)lo));
                        hi = kc_bf16(kc_half((uint16_t)hi));
                    }
                    P[w * KC_LANES + l] = lo | (hi << 16);
                    float a = kc_bits_f32(lo << 16), b = kc_bits_f32(hi << 16);
                    ss += a * a;
                    ss += b * b;
                }
            } else { /* U8DOT, U7DOT */
                const int8_t *src = (const int8_t *)codes + j * D;
                for (int64_t w = 0; w < DW; w++) {
                    uint32_t word = 0;
                    for (int t = 0; t < 4; t++) {
                        int8_t c = 4 * w + t < D ? src[4 * w + t] : 0;
                        word |= (uint32_t)((uint8_t)c ^ 0x80u) << (8 * t);
                        float v = (float)c * scales[j];
                        if (4 * w + t < D) ss += v * v;
                    }
                    P[w * KC_LANES + l] = word;
                }
            }
            rn[row] = ss;
            rinv[row] = ss > 0.0f ? 1.0f / sqrtf(ss) : 0.0f;
            scale[row] = (row < br && scales) ? scales[j] : 0.0f;
        }
    }
}

/* ------------------------------------------------------------------ portable tile pass (F32) */
/* one query's scores for one group -> pushes (lanes past the tile's rows never) */
static inline void kc_push_group(const kc_ctx *c, const kc_tile *t, const float *acc, int64_t g, float *h,
                                 int64_t *x) {
    const int64_t nl = t->br - g * KC_LANES;
    const uint32_t valid = nl >= KC_LANES ? 0xFFFFu : (1u << nl) - 1u;
    float s[KC_LANES];
    uint32_t mask = 0;
    for (int l = 0; l < KC_LANES; l++) {
        s[l] = kc_score(c->metric, acc[l], t->rn[g * KC_LANES + l], t->rinv[g * KC_LANES + l]);
        mask |= (uint32_t)(s[l] < h[0]) << l;
    }
    knn_push_mask(s, mask & valid, t->r0 + g * KC_LANES, h, x, c->k);
}

/* two queries x 16 rows per block in GCC / Clang generic vectors (4 floats: SSE, NEON): 8
 * accumulators; without the vector extension, plain loops */
#if defined(__GNUC__) || defined(__clang__)
typedef float kc_v4 __attribute__((vector_size(16)));
#endif
void knn_codes_tile_generic(const kc_ctx *c, const kc_tile *t, int64_t i0, int64_t i1, float *hv,
                            int64_t *hi) {
    const int64_t D = c->D, G = (t->br + KC_LANES - 1) / KC_LANES;
    for (int64_t a = i0; a < i1; a += 2) {
        const int two = a + 1 < i1;
        const float *q0 = c->q + a * D, *q1 = c->q + (a + two) * D;
        for (int64_t g = 0; g < G; g++) {
            const float *P = (const float *)(const void *)(t->panel + g * D * KC_LANES);
            float acc0[KC_LANES], acc1[KC_LANES];
#if defined(__GNUC__) || defined(__clang__)
            kc_v4 x0 = {0, 0, 0, 0}, x1 = x0, x2 = x0, x3 = x0, y0 = x0, y1 = x0, y2 = x0, y3 = x0;
            for (int64_t d = 0; d < D; d++) {
                const kc_v4 *p = (const kc_v4 *)(const void *)(P + d * KC_LANES);
                const float b0 = q0[d], b1 = q1[d];
                x0 += b0 * p[0], x1 += b0 * p[1], x2 += b0 * p[2], x3 += b0 * p[3];
                y0 += b1 * p[0], y1 += b1 * p[1], y2 += b1 * p[2], y3 += b1 * p[3];
            }
            memcpy(acc0, &x0, 16), memcpy(acc0 + 4, &x1, 16), memcpy(acc0 + 8, &x2, 16), memcpy(acc0 + 12, &x3, 16);
            memcpy(acc1, &y0, 16), memcpy(acc1 + 4, &y1, 16), memcpy(acc1 + 8, &y2, 16), memcpy(acc1 + 12, &y3, 16);
#else
            for (int l = 0; l < KC_LANES; l++) acc0[l] = acc1[l] = 0.0f;
            for (int64_t d = 0; d < D; d++)
                for (int l = 0; l < KC_LANES; l++) {
                    acc0[l] += q0[d] * P[d * KC_LANES + l];
                    acc1[l] += q1[d] * P[d * KC_LANES + l];
                }
#endif
            kc_push_group(c, t, acc0, g, hv + a * c->k, hi + a * c->k);
            if (two) kc_push_group(c, t, acc1, g, hv + (a + 1) * c->k, hi + (a + 1) * c->k);
        }
    }
}

/* ------------------------------------------------------------------ driver */
static inline void *kc_align(void *p) {
    return (void *)(((uintptr_t)p + KC_ALIGN - 1) / KC_ALIGN * KC_ALIGN);
}

/* the queries in the mode's words (and scales) */
static void kc_prepare_queries(int mode, const float *q, int64_t N, int64_t D, int64_t DW, uint32_t *qw,
                               float *qs, int32_t *qsum) {
    for (int64_t i = 0; i < N; i++) {
        const float *qi = q + i * D;
        uint32_t *wi = qw + i * DW;
        if (mode == ME_CODES_MODE_BF16DOT) {
            for (int64_t w = 0; w < DW; w++)
                wi[w] = kc_bf16(qi[2 * w]) | (2 * w + 1 < D ? kc_bf16(qi[2 * w + 1]) << 16 : 0u);
        } else {
            const float lim = mode == ME_CODES_MODE_U8DOT ? 127.0f : 63.0f;
            int32_t sum = 0;
            float amax = 0.0f;
            int bad = 0;
            for (int64_t d = 0; d < D; d++) {
                const float a = fabsf(qi[d]);
                bad |= !(a <= 3.4028234663852886e38f); /* NaN or Inf (fmaxf would skip a NaN) */
                amax = fmaxf(amax, a);
            }
            /* a NaN / Inf query gets scale NaN and zero codes: every score NaN, no row pushed (index
             * -1), and no float -> int conversion of a NaN */
            const float s = bad ? NAN : amax / lim;
            qs[i] = s;
            for (int64_t w = 0; w < DW; w++) {
                uint32_t word = 0;
                for (int t = 0; t < 4; t++) {
                    float v = 0.0f;
                    if (4 * w + t < D && s > 0.0f) {
                        v = nearbyintf(qi[4 * w + t] / s);
                        v = v > lim ? lim : v < -lim ? -lim : v;
                    }
                    sum += (int32_t)v;
                    word |= ((uint32_t)(int32_t)v & 0xFFu) << (8 * t);
                }
                wi[w] = word;
            }
            qsum[i] = sum;
        }
    }
}

/* exact values of the heap (hv, hi) of query i, sorted by (value, index). Slots no row reached (a
 * query with NaN or scores beyond float32: no score is below +inf) keep +inf and get index -1. */
static void kc_finish(int dtype, const void *codes, const float *scales, const float *qi, int64_t M,
                      int64_t D, int64_t k, int metric, float *hv, int64_t *hi) {
    knn_heap_sort(hv, hi, k);
    for (int64_t t = 0; t < k; t++) {
        const int64_t j = hi[t];
        if (j < 0 || j >= M) {
            hi[t] = -1;
            hv[t] = INFINITY;
            continue;
        }
        double acc = 0.0, nrm = 0.0;
        if (metric == ME_KNN_SQEUCLIDEAN || metric == ME_KNN_EUCLIDEAN) {
            for (int64_t d = 0; d < D; d++) {
                double df = (double)qi[d] - (double)kc_value(dtype, codes, scales, D, j, d);
                acc += df * df;
            }
            hv[t] = (float)(metric == ME_KNN_EUCLIDEAN ? sqrt(acc) : acc);
        } else {
            for (int64_t d = 0; d < D; d++) {
                double r = (double)kc_value(dtype, codes, scales, D, j, d);
                acc += (double)qi[d] * r;
                nrm += r * r;
            }
            if (metric == ME_KNN_INNER_PRODUCT) {
                hv[t] = -(float)acc; /* ranking order: smaller first */
            } else {
                double v = nrm > 0.0 ? 1.0 - acc / sqrt(nrm) : 1.0;
                hv[t] = (float)(v < 0.0 ? 0.0 : v > 2.0 ? 2.0 : v);
            }
        }
    }
    knn_resort(hv, hi, k);
    if (metric == ME_KNN_INNER_PRODUCT)
        for (int64_t t = 0; t < k; t++) hv[t] = -hv[t];
}

void me_knn_codes(int dtype, int mode, const float *q, const void *codes, const float *scales, int64_t N,
                  int64_t M, int64_t D, int64_t k, int metric, int64_t tile_r, int num_threads,
                  void *workspace, int64_t *indices, float *distances) {
    if (N <= 0 || k <= 0) return;
    const int64_t DW = kc_words(mode, D);
    tile_r = me_knn_codes_tile(mode, D, tile_r);
    const int64_t ntiles = (M + tile_r - 1) / tile_r;
    int T = num_threads < 1 ? 1 : num_threads;
    const int64_t T_ws = T; /* the workspace was sized for num_threads */
    if (T > ntiles) T = (int)ntiles;
    const int kid = me_gemm_kernel_id();
    void (*tile_fn)(const kc_ctx *, const kc_tile *, int64_t, int64_t, float *, int64_t *) =
        mode == ME_CODES_MODE_BF16DOT || mode == ME_CODES_MODE_U8DOT ? knn_codes_tile_avx512
        : mode == ME_CODES_MODE_U7DOT                                ? knn_codes_tile_avx2
        : kid == 2                                                   ? knn_codes_tile_avx512
        : kid == 1                                                   ? knn_codes_tile_avx2
                                                                     : knn_codes_tile_generic;

    char *ws = (char *)kc_align(workspace);
    uint32_t *qw = (uint32_t *)ws;
    ws += kc_up(N * DW * 4);
    float *qs = (float *)ws;
    ws += kc_up(N * 4);
    int32_t *qsum = (int32_t *)ws;
    ws += kc_up(N * 4);
    char *tiles = ws;
    ws += T_ws * kc_tile_bytes(mode, D, tile_r);
    float *hv_extra = (float *)ws;
    ws += (T_ws - 1) * kc_up(N * k * 4);
    int64_t *hi_extra = (int64_t *)ws;
    if (mode != ME_CODES_MODE_F32) kc_prepare_queries(mode, q, N, D, DW, qw, qs, qsum);
    const kc_ctx ctx = {mode, metric, N, D, DW, k, q, qw, qs, qsum};
    const int feat = me_cpu_features();
    void (*pack_fn)(int, int, const void *, const float *, int64_t, int64_t, int64_t, int64_t, uint32_t *, float *,
                    float *, float *) = kid == 2 && (feat & ME_CPU_AVX512BW) && (feat & ME_CPU_AVX512VL) ? knn_codes_pack_avx512
                                        : kid >= 1 && (feat & ME_CPU_F16C)   ? knn_codes_pack_avx2
                                                                             : knn_codes_pack_generic;
    const int64_t G = (tile_r + KC_LANES - 1) / KC_LANES;

    #pragma omp parallel num_threads(T)
    {
#ifdef _OPENMP
        const int tid = omp_get_thread_num(), nth = omp_get_num_threads(); /* nth may be < T */
#else
        const int tid = 0, nth = 1;
#endif
        float *hv = tid == 0 ? distances : hv_extra + (tid - 1) * (kc_up(N * k * 4) / 4);
        int64_t *hi = tid == 0 ? indices : hi_extra + (tid - 1) * (kc_up(N * k * 8) / 8);
        for (int64_t i = 0; i < N * k; i++) {
            hv[i] = INFINITY;
            hi[i] = INT64_MAX;
        }
        char *tb = tiles + tid * kc_tile_bytes(mode, D, tile_r);
        uint32_t *panel = (uint32_t *)tb;
        float *rn = (float *)(tb + kc_up(G * DW * KC_LANES * 4));
        float *scale = rn + kc_up(G * KC_LANES * 4) / 4;
        float *rinv = scale + kc_up(G * KC_LANES * 4) / 4;
        for (int64_t b = tid; b < ntiles; b += nth) {
            const int64_t r0 = b * tile_r, br = M - r0 < tile_r ? M - r0 : tile_r;
            pack_fn(dtype, mode, codes, scales, D, DW, r0, br, panel, rn, scale, rinv);
            const kc_tile t = {panel, rn, scale, rinv, r0, br};
            tile_fn(&ctx, &t, 0, N, hv, hi);
        }
        #pragma omp barrier
        /* merge the other threads' heaps into thread 0's (the output), then finish each query */
        #pragma omp for schedule(static)
        for (int64_t i = 0; i < N; i++) {
            float *h0 = distances + i * k;
            int64_t *x0 = indices + i * k;
            for (int u = 1; u < nth; u++) {
                const float *hu = hv_extra + (u - 1) * (kc_up(N * k * 4) / 4) + i * k;
                const int64_t *xu = hi_extra + (u - 1) * (kc_up(N * k * 8) / 8) + i * k;
                for (int64_t t = 0; t < k; t++)
                    if (xu[t] != INT64_MAX && knn_worse(h0[0], x0[0], hu[t], xu[t]))
                        knn_heap_replace(h0, x0, k, hu[t], xu[t]);
            }
            kc_finish(dtype, codes, scales, q + i * D, M, D, k, metric, h0, x0);
        }
    }
}
