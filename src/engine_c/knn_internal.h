/* knn_internal.h (private): the bounded heaps that knn.c and knn_codes*.c share, and the
 * interface between knn_codes.c (driver, packing, the portable path) and its ISA files. */
#ifndef ME_KNN_INTERNAL_H
#define ME_KNN_INTERNAL_H

#include <stdint.h>

#include "engine.h"

/* (a, ia) ranks after (b, ib): larger score, or equal score and larger index */
static inline int knn_worse(float a, int64_t ia, float b, int64_t ib) {
    return a > b || (a == b && ia > ib);
}

/* Replace the root of the max-heap (v, ix) of size k by (nv, ni) and restore the heap. */
static inline void knn_heap_replace(float *v, int64_t *ix, int64_t k, float nv, int64_t ni) {
    int64_t p = 0;
    for (;;) {
        int64_t c = 2 * p + 1;
        if (c >= k) break;
        if (c + 1 < k && knn_worse(v[c + 1], ix[c + 1], v[c], ix[c])) c++;
        if (!knn_worse(v[c], ix[c], nv, ni)) break;
        v[p] = v[c];
        ix[p] = ix[c];
        p = c;
    }
    v[p] = nv;
    ix[p] = ni;
}

/* Heap of size k -> ascending (score, index) order, in place (heapsort). */
static inline void knn_heap_sort(float *v, int64_t *ix, int64_t k) {
    for (int64_t e = k - 1; e > 0; e--) {
        float tv = v[e];
        int64_t ti = ix[e];
        v[e] = v[0];
        ix[e] = ix[0];
        knn_heap_replace(v, ix, e, tv, ti);
    }
}

/* Re-sort (hv, hi) of size k by (value, index) after the values were recomputed: an insertion sort,
 * the order being already nearly right; slots with index < 0 (empty) stay last, unsorted. */
static inline void knn_resort(float *hv, int64_t *hi, int64_t k) {
    for (int64_t t = 1; t < k; t++) {
        float v = hv[t];
        int64_t ix = hi[t];
        if (ix < 0) break;
        int64_t u = t - 1;
        while (u >= 0 && knn_worse(hv[u], hi[u], v, ix)) {
            hv[u + 1] = hv[u];
            hi[u + 1] = hi[u];
            u--;
        }
        hv[u + 1] = v;
        hi[u + 1] = ix;
    }
}

/* Push the scores s[l] (l < 16, lanes set in mask, ascending) of rows base + l into the heap
 * (hv, hi) of size k whose rows so far all have lower indices. */
static inline void knn_push_mask(const float *s, uint32_t mask, int64_t base, float *hv, int64_t *hi,
                                 int64_t k) {
    while (mask) {
        int l = __builtin_ctz(mask);
        mask &= mask - 1;
        if (s[l] < hv[0]) knn_heap_replace(hv, hi, k, s[l], base + l);
    }
}

/* ---------------------------------------------------------------- knn_codes */
#define KC_LANES 16 /* rows per panel group */
#define KC_ALIGN 64

/* What every tile pass reads: the queries in the mode's form and the metric. */
typedef struct {
    int mode, metric;
    int64_t N, D, DW, k; /* DW: 32-bit words per row of the panel */
    const float *q;      /* (N, D) float32 (F32 mode) */
    const uint32_t *qw;  /* (N, DW) bfloat16 pairs or u8 quads (the other modes) */
    const float *qs;     /* (N) query scales (U8DOT / U7DOT) */
    const int32_t *qsum; /* (N) sums of the quantized query values (U8DOT / U7DOT) */
} kc_ctx;

/* One packed tile of br <= G * 16 reference rows starting at row r0. */
typedef struct {
    const uint32_t *panel; /* (G, DW, 16) words: word w of row g*16 + l at [(g*DW + w)*16 + l] */
    const float *rn;       /* (G*16) squared norms of the decoded rows (Euclidean metrics) */
    const float *scale;    /* (G*16) int8 scales (U modes) */
    const float *rinv;     /* (G*16) 1/|r| of the decoded rows, 0 for a zero row (cosine) */
    int64_t r0, br;
} kc_tile;

/* Every query [i0, i1) against one tile: scores below a query's heap root are pushed into its heap
 * (hv + i * k, hi + i * k). Lanes past br are never pushed. */
void knn_codes_tile_generic(const kc_ctx *c, const kc_tile *t, int64_t i0, int64_t i1, float *hv,
                            int64_t *hi);
void knn_codes_tile_avx2(const kc_ctx *c, const kc_tile *t, int64_t i0, int64_t i1, float *hv, int64_t *hi);
void knn_codes_tile_avx512(const kc_ctx *c, const kc_tile *t, int64_t i0, int64_t i1, float *hv,
                           int64_t *hi);

/* Pack rows [r0, r0 + br) of the codes into a tile (panel, rn, scale, rinv); the portable packing,
 * the AVX2 one (F16C conversions of float16 rows) and the AVX-512 one (AVX-512BW masked loads, a
 * 16 x 16 transpose) give bitwise the same tile. */
void knn_codes_pack_generic(int dtype, int mode, const void *codes, const float *scales, int64_t D,
                            int64_t DW, int64_t r0, int64_t br, uint32_t *panel, float *rn, float *scale,
                            float *rinv);
void knn_codes_pack_avx2(int dtype, int mode, const void *codes, const float *scales, int64_t D,
                         int64_t DW, int64_t r0, int64_t br, uint32_t *panel, float *rn, float *scale,
                         float *rinv);
void knn_codes_pack_avx512(int dtype, int mode, const void *codes, const float *scales, int64_t D,
                           int64_t DW, int64_t r0, int64_t br, uint32_t *panel, float *rn, float *scale,
                           float *rinv);

/* Ranking score of one lane from the mode's raw dot product (float for F32/BF16DOT; the exact
 * integer dot converted to float for the U modes, times the query's and the row's scales). */
static inline float kc_score(int metric, float dot, float rn, float rinv) {
    if (metric == ME_KNN_INNER_PRODUCT) return -dot;
    if (metric == ME_KNN_COSINE) return -(dot * rinv);
    return rn - 2.0f * dot;
}

#endif /* ME_KNN_INTERNAL_H */
