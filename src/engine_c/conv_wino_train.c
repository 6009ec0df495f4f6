/* conv_wino_train.c: the AVX2 + FMA Winograd F(2x2, 3x3) training kernels, stride 1, pad 1
 * (picked by conv.c with the AVX2 SGEMM kernel, for 3x3 pad 1 with at least 8 input and 8 output
 * channels): the forward and the input gradient of one image (conv_wino_train_image), its pooled
 * forward (conv_wino_pool_image), and the weight gradient (conv_wt_dw_image, conv_wt_dw_finish).
 *
 * y (F,H,W) = conv(x (C,H,W), w (F,C,3,3), pad 1) (+ b, then act), one image: the forward of a
 * 3x3 "same" convolution and, with the flipped channel-swapped weights, its input gradient
 * (a correlation of dy padded by 1). Lavin & Gray 2016 as in the inference kernels of
 * conv_wino_pool.c, laid out for whole images and any H, W: the ymm lanes are 8 tiles,
 * consecutive tiles of one tile row (rows mode, TW > 4 tiles per row, a row padded to a multiple
 * of 8 tiles) or two tile rows of 4 (pairs mode, TW <= 4: 7x7 and 8x8 planes fill all lanes).
 * Steps:
 *  1. wt_split: the zero-padded plane (pad 1, plus the rows and columns the last tiles read)
 *     split into even and odd columns, so that a patch column of 8 tiles is one contiguous run;
 *  then per chunk of tile rows (at most ME_WT_CHUNK vectors of tiles, TC lanes):
 *  2. wt_input: V = B^T d B per (channel, 8 tiles), position-major: V (16, C, TC);
 *  3. wt_multiply: M_p (F, TC) = U_p (F, C) @ V_p (C, TC) for each position p in turn (U_p and
 *     V_p stay in L1), register blocks of 4 filters x 3 vectors as in direct_block_avx2
 *     (conv_direct_avx2.c);
 *  4. wt_output: Y = A^T M A per filter into a (4, TC) row, scattered to y with b and act.
 * 16 multiplies per (tile, channel, filter) instead of 36. Sums are reassociated (float32
 * rounding of a few ulps of the patch magnitude differs from the direct kernels); a non-finite
 * input value reaches every output of the tiles whose patches contain it (Inf - Inf in the
 * transforms), not only the outputs whose 3x3 windows do. Scratch: wt_scratch floats. */
#include "engine.h"
#include "simd_internal.h"
#include "conv_internal.h"

#include <math.h>
#include <string.h>

#define ME_WT_MIN_C 8 /* fewer input channels: the transforms cost more than the products save */
#define ME_WT_MIN_F 8
#define ME_WT_AVX512_MIN_HW 196 /* pixels per plane from which the AVX-512 kernel trains by Winograd */
#define ME_WT_AVX512_MIN_C 32   /* and input and output channels */
#define ME_WT_CHUNK 8 /* vectors of tiles per chunk (at least one tile row) */

typedef struct {
    int64_t TH, TW, pairs, nvr, TWv, THv, Hq, WE, nrows, rchunk, TC;
} wt_geom;

static wt_geom wt_geometry(int64_t H, int64_t W) {
    wt_geom t;
    t.TH = (H + 1) / 2;
    t.TW = (W + 1) / 2;
    t.pairs = t.TW <= 4;
    if (t.pairs) { /* a vector row: 2 tile rows of 4 lanes */
        t.TWv = 4;
        t.nvr = 1;
        t.THv = (t.TH + 1) / 2 * 2;
        t.nrows = t.THv / 2;
    } else { /* a vector row: 1 tile row in nvr vectors */
        t.nvr = (t.TW + 7) / 8;
        t.TWv = t.nvr * 8;
        t.THv = t.TH;
        t.nrows = t.TH;
    }
    t.Hq = 2 * t.THv + 2; /* plane rows: 1 of padding, the image, then zeros up to the last patch */
    t.WE = t.TWv + 1;     /* floats per row of the even (and of the odd) columns */
    t.rchunk = ME_WT_CHUNK / t.nvr > 0 ? ME_WT_CHUNK / t.nvr : 1; /* vector rows per chunk */
    if (t.rchunk > t.nrows) t.rchunk = t.nrows;
    t.TC = t.rchunk * t.nvr * 8; /* lanes of a full chunk */
    return t;
}

/* floats of scratch of conv_wino_train_image for C input and F output channels on H x W */
static int64_t wt_scratch(int64_t C, int64_t H, int64_t W, int64_t F) {
    const wt_geom t = wt_geometry(H, W);
    return 2 * C * t.Hq * t.WE + 16 * C * t.TC + 16 * ((F + 3) / 4 * 4) * t.TC + 4 * t.TC + 8;
}

/* Does a convolution of these shapes (C -> F channels) take the Winograd training kernels, given
 * the AVX2 kernels are in use? A function of the shapes only (it sizes the workspace). */
int conv_wt_shape_applies(int64_t C, int64_t F, int64_t KH, int64_t KW, int64_t stride, int64_t pad) {
    return KH == 3 && KW == 3 && stride == 1 && pad == 1 && C >= ME_WT_MIN_C && F >= ME_WT_MIN_F;
}

/* Do the Winograd training kernels run for these shapes on this CPU? Always where they apply
 * with the AVX2 SGEMM kernel; with the AVX-512 one from ME_WT_AVX512_MIN_HW pixels per plane
 * and ME_WT_AVX512_MIN_C channels on both sides (below them that kernel's im2col + GEMM,
 * direct and dot-product paths are faster). */
int conv_use_wt(int64_t C, int64_t F, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t stride, int64_t pad) {
    if (!conv_wt_shape_applies(C, F, KH, KW, stride, pad)) return 0;
    if (conv_use_avx2()) return 1;
    return me_gemm_kernel_id() == 2 && H * W >= ME_WT_AVX512_MIN_HW && C >= ME_WT_AVX512_MIN_C &&
           F >= ME_WT_AVX512_MIN_C;
}

/* the scratch floats a group slot needs for the Winograd forward and input gradient (0: none) */
int64_t conv_wt_slot_floats(int64_t C, int64_t H, int64_t W, int64_t F, int64_t KH, int64_t KW,
                            int64_t stride, int64_t pad) {
    int64_t need = 0;
    if (conv_wt_shape_applies(C, F, KH, KW, stride, pad)) need = wt_scratch(C, H, W, F);
    if (conv_wt_shape_applies(F, C, KH, KW, stride, pad)) {
        const int64_t t = wt_scratch(F, H, W, C); /* pad 1: dy is H x W too */
        if (t > need) need = t;
    }
    return need;
}

/* the Winograd weight gradient: floats of its per-image scratch and of its dU sums */
void conv_wt_dw_geometry(int64_t C, int64_t H, int64_t W, int64_t F, int64_t *scratch, int64_t *du) {
    const wt_geom t = wt_geometry(H, W);
    const int64_t Cp = (C + 7) / 8 * 8, Fr = (F + 3) / 4 * 4;
    *scratch = 2 * C * t.Hq * t.WE + 16 * t.TC * Cp + 2 * F * 2 * t.THv * t.TWv + 16 * Fr * t.TC;
    *du = 16 * Fr * Cp;
}

/* Is every value of x (n floats) finite and at most ME_WT_MAX = 2^40 in magnitude? With both
 * operands (inputs, weights or gradients) within it, no product or sum of either path can
 * overflow (2^80 products, sums of fewer than 2^40 terms after the transforms' at most 16x
 * growth), so the Winograd and the direct results are finite alike; beyond it the transforms
 * could overflow, or turn Inf into NaN, where the direct sums do not, so such an image (or such
 * weights: the whole call) takes the direct path. */
#define ME_WT_MAX 1099511627776.0f
#if ME_CONV_X86
__attribute__((target("avx2"))) static int wt_in_range_avx2(const float *x, int64_t n) {
    const __m256 lim = _mm256_set1_ps(ME_WT_MAX), sign = _mm256_set1_ps(-0.0f);
    __m256 b[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++) /* |x| > lim or unordered (NaN) */
            b[k] = _mm256_or_ps(b[k], _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + i + 8 * k)), lim,
                                                    _CMP_NLE_UQ));
    int ok = _mm256_testz_ps(_mm256_or_ps(_mm256_or_ps(b[0], b[1]), _mm256_or_ps(b[2], b[3])),
                             _mm256_or_ps(_mm256_or_ps(b[0], b[1]), _mm256_or_ps(b[2], b[3])));
    for (; i < n; i++) ok &= fabsf(x[i]) <= ME_WT_MAX;
    return ok;
}
#endif

int conv_wt_in_range(const float *x, int64_t n) {
#if ME_CONV_X86
    if (me_cpu_features() & ME_CPU_AVX2) return wt_in_range_avx2(x, n);
#endif
    int ok = 1;
    for (int64_t i = 0; i < n; i++) ok &= fabsf(x[i]) <= ME_WT_MAX; /* false for NaN */
    return ok;
}

#if ME_CONV_X86
/* w (F,C,3,3) -> upk (16, F, Cpad) of the input-gradient problem: "filter" c, "channel" f,
 * taps w[f, c, 2-i, 2-j]; zero for c >= C */
void conv_wino_pack_weights_flipped(const float *w, float *upk, int64_t F, int64_t C, int64_t Cpad) {
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (Cpad * F >= 1024)
    for (int64_t c = 0; c < Cpad; c++)
        for (int64_t f = 0; f < F; f++) {
            float u[16] = {0};
            if (c < C) {
                float g[9];
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 3; j++) g[i * 3 + j] = w[((f * C + c) * 3 + 2 - i) * 3 + 2 - j];
                conv_wino_transform_filter(g, u);
            }
            for (int p = 0; p < 16; p++) upk[(p * F + f) * Cpad + c] = u[p];
        }
}


/* x (C,H,W) -> eo (C, 2, Hq, WE): row R of the plane padded by 1 (x row R-1), its even columns
 * then its odd columns; zero elsewhere */
static void wt_split(const float *x, float *eo, int64_t C, int64_t H, int64_t W, const wt_geom *t) {
    const int64_t ps = t->Hq * t->WE;
    memset(eo, 0, (size_t)(2 * C * ps) * sizeof(float));
    for (int64_t c = 0; c < C; c++) {
        float *E = eo + 2 * c * ps, *O = E + ps;
        for (int64_t h = 0; h < H; h++) {
            const float *r = x + (c * H + h) * W;
            float *e = E + (h + 1) * t->WE, *o = O + (h + 1) * t->WE;
            int64_t w = 0;
            for (; w + 1 < W; w += 2) { /* plane columns w+1 (odd) and w+2 (even) */
                o[w >> 1] = r[w];
                e[(w >> 1) + 1] = r[w + 1];
            }
            if (w < W) o[w >> 1] = r[w];
        }
    }
}

/* V[p], p = 4r + s: (B^T d B)[r][s] for the 4x4 patches d of the 8 tiles of vector v of the chunk
 * from vector row r0, channel planes E, O; B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1] */
__attribute__((target("avx2,fma"), always_inline)) static inline void wt_patch(
    const float *E, const float *O, const wt_geom *t, int64_t r0, int64_t v, __m256 V[16]) {
    const int64_t WE = t->WE;
    __m256 d[4][4];
    if (t->pairs) {
        const int64_t lo = 4 * (r0 + v) * WE, hi = lo + 2 * WE; /* tile rows 2(r0+v), +1 */
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
            for (int s = 0; s < 4; s++) {
                const float *src = ((s & 1) ? O : E) + (s >> 1) + r * WE;
                d[r][s] = _mm256_set_m128(_mm_loadu_ps(src + hi), _mm_loadu_ps(src + lo));
            }
    } else {
        const int64_t off = 2 * (r0 + v / t->nvr) * WE + (v % t->nvr) * 8;
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
            for (int s = 0; s < 4; s++) d[r][s] = _mm256_loadu_ps(((s & 1) ? O : E) + (s >> 1) + r * WE + off);
    }
    __m256 u[4][4];
#pragma GCC unroll 4
    for (int s = 0; s < 4; s++) { /* B^T d */
        u[0][s] = _mm256_sub_ps(d[0][s], d[2][s]);
        u[1][s] = _mm256_add_ps(d[1][s], d[2][s]);
        u[2][s] = _mm256_sub_ps(d[2][s], d[1][s]);
        u[3][s] = _mm256_sub_ps(d[1][s], d[3][s]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) { /* (B^T d) B */
        V[4 * r + 0] = _mm256_sub_ps(u[r][0], u[r][2]);
        V[4 * r + 1] = _mm256_add_ps(u[r][1], u[r][2]);
        V[4 * r + 2] = _mm256_sub_ps(u[r][2], u[r][1]);
        V[4 * r + 3] = _mm256_sub_ps(u[r][1], u[r][3]);
    }
}

/* eo -> V (16, C, tc): the transformed patches of the tc tiles of the chunk from vector row r0 */
__attribute__((target("avx2,fma")))
static void wt_input(const float *eo, float *V, int64_t C, const wt_geom *t, int64_t r0, int64_t tc) {
    const int64_t ps = t->Hq * t->WE, nv = tc / 8;
    for (int64_t c = 0; c < C; c++) {
        const float *E = eo + 2 * c * ps, *O = E + ps;
        for (int64_t v = 0; v < nv; v++) {
            __m256 x[16];
            wt_patch(E, O, t, r0, v, x);
            float *dst = V + c * tc + v * 8;
#pragma GCC unroll 16
            for (int p = 0; p < 16; p++) _mm256_storeu_ps(dst + p * C * tc, x[p]);
        }
    }
}

/* One register block of wt_gemm: NFB rows x NV vectors of 8 (NFB * NV <= 12 accumulators),
 * m[f*ms + 8k] (+)= sum_i u[f*ufs + i*uis] * v[i*vis + 8k], i < n */
__attribute__((target("avx2,fma"), always_inline)) static inline void wt_block(
    const float *u, int64_t ufs, int64_t uis, const float *v, int64_t vis, int64_t n, float *m, int64_t ms,
    int accumulate, const int NFB, const int NV) {
    __m256 acc[8][3];
#pragma GCC unroll 8
    for (int f = 0; f < NFB; f++)
#pragma GCC unroll 3
        for (int k = 0; k < NV; k++) acc[f][k] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i++, u += uis, v += vis) {
        __m256 x[3];
#pragma GCC unroll 3
        for (int k = 0; k < NV; k++) x[k] = _mm256_loadu_ps(v + 8 * k);
#pragma GCC unroll 8
        for (int f = 0; f < NFB; f++) {
            const __m256 wf = _mm256_broadcast_ss(u + f * ufs);
#pragma GCC unroll 3
            for (int k = 0; k < NV; k++) acc[f][k] = _mm256_fmadd_ps(wf, x[k], acc[f][k]);
        }
    }
#pragma GCC unroll 8
    for (int f = 0; f < NFB; f++)
#pragma GCC unroll 3
        for (int k = 0; k < NV; k++) {
            float *d = m + f * ms + 8 * k;
            _mm256_storeu_ps(d, accumulate ? _mm256_add_ps(_mm256_loadu_ps(d), acc[f][k]) : acc[f][k]);
        }
}

#define ME_WT_BLOCK(NFB, NV) wt_block(u + f0 * ufs, ufs, uis, v + v0 * 8, vis, n, m + f0 * ms + v0 * 8, ms, accumulate, NFB, NV)

/* m (rows, nv vectors of 8; row stride ms) (+)= u (rows x n, strides ufs, uis) @ v (n x 8 nv, row
 * stride vis); rows a multiple of 4. Blocks of 4 rows x 3 vectors; a last 2 vectors in blocks of
 * 6 rows (then 4 or 2), a last 1 in blocks of 8 (then 4), so that every block keeps at least 8
 * independent accumulators. */
__attribute__((target("avx2,fma")))
static void wt_gemm(const float *u, int64_t ufs, int64_t uis, int64_t rows, const float *v, int64_t vis, int64_t nv,
                    int64_t n, float *m, int64_t ms, int accumulate) {
    const int64_t v3 = nv / 3 * 3, rem = nv - v3;
    int64_t f0, v0;
    for (f0 = 0; f0 < rows; f0 += 4)
        for (v0 = 0; v0 < v3; v0 += 3) ME_WT_BLOCK(4, 3);
    v0 = v3;
    f0 = 0;
    if (rem == 2) {
        for (; f0 + 6 <= rows; f0 += 6) ME_WT_BLOCK(6, 2);
        if (rows - f0 == 4) ME_WT_BLOCK(4, 2);
        else if (rows - f0 == 2) ME_WT_BLOCK(2, 2);
    } else if (rem == 1) {
        for (; f0 + 8 <= rows; f0 += 8) ME_WT_BLOCK(8, 1);
        if (rows - f0 == 4) ME_WT_BLOCK(4, 1);
    }
}
#undef ME_WT_BLOCK

/* V (16, C, tc), upk (16, C, Fpad) -> M (16, Fpad, tc), M_p = U_p^T @ V_p, position by position
 * (U_p and V_p stay in L1) */
static void wt_multiply(const float *V, const float *upk, int64_t Fpad, float *M, int64_t C, int64_t tc) {
    for (int p = 0; p < 16; p++)
        wt_gemm(upk + p * C * Fpad, 1, Fpad, Fpad, V + p * C * tc, tc, tc / 8, C, M + p * Fpad * tc, tc, 0);
}

/* y[k], k = 2 qy + qx: output (qy, qx) of the 8 tiles of vector v, filter f: Y = A^T M A,
 * A^T = [1 1 1 0; 0 1 -1 -1], from M (16, Fpad, tc) */
__attribute__((target("avx2"), always_inline)) static inline void wt_tile_out(const float *M, int64_t Fpad,
                                                                         int64_t f, int64_t tc, int64_t v,
                                                                         __m256 y[4]) {
    __m256 m[16];
#pragma GCC unroll 16
    for (int p = 0; p < 16; p++) m[p] = _mm256_loadu_ps(M + (p * Fpad + f) * tc + v * 8);
    __m256 s0[4], s1[4];
#pragma GCC unroll 4
    for (int s = 0; s < 4; s++) { /* A^T M */
        s0[s] = _mm256_add_ps(_mm256_add_ps(m[s], m[4 + s]), m[8 + s]);
        s1[s] = _mm256_sub_ps(_mm256_sub_ps(m[4 + s], m[8 + s]), m[12 + s]);
    }
    y[0] = _mm256_add_ps(_mm256_add_ps(s0[0], s0[1]), s0[2]);
    y[1] = _mm256_sub_ps(_mm256_sub_ps(s0[1], s0[2]), s0[3]);
    y[2] = _mm256_add_ps(_mm256_add_ps(s1[0], s1[1]), s1[2]);
    y[3] = _mm256_sub_ps(_mm256_sub_ps(s1[1], s1[2]), s1[3]);
}

/* M (16, Fpad, tc) of the vector rows r0.. -> y (F,H,W): per filter Y = A^T M A (wt_tile_out)
 * into yt (4, tc), then output (h, w) = entry (h&1)*2 + (w&1) of tile (h/2, w/2),
 * + b[f] (b may be NULL), then act */
__attribute__((target("avx2,fma")))
static void wt_output(const float *M, int64_t Fpad, float *yt, const float *b, int act, float slope, float *y,
                      int64_t F, int64_t H, int64_t W, const wt_geom *t, int64_t r0, int64_t tc) {
    const int64_t nv = tc / 8, rpv = t->pairs ? 2 : 1; /* tile rows per vector row */
    const int64_t h0 = 2 * rpv * r0, h1e = h0 + 2 * rpv * (nv / t->nvr), h1 = h1e < H ? h1e : H;
    for (int64_t f = 0; f < F; f++) {
        for (int64_t v = 0; v < nv; v++) {
            __m256 q[4];
            wt_tile_out(M, Fpad, f, tc, v, q);
            for (int k = 0; k < 4; k++) _mm256_storeu_ps(yt + k * tc + v * 8, q[k]);
        }
        const __m256 bf = _mm256_set1_ps(b ? b[f] : 0.0f), zero = _mm256_setzero_ps(), sl = _mm256_set1_ps(slope);
        for (int64_t h = h0; h < h1; h++) {
            const int64_t ty = (h >> 1) - rpv * r0; /* tile row within the chunk */
            const int64_t lane = t->pairs ? (ty >> 1) * 8 + (ty & 1) * 4 : ty * t->TWv;
            const float *e = yt + 2 * (h & 1) * tc + lane, *o = e + tc;
            float *dst = y + (f * H + h) * W;
            for (int64_t w0 = 0; w0 < W; w0 += 16) { /* 8 tiles: their columns interleaved */
                const __m256 ve = _mm256_loadu_ps(e + w0 / 2), vo = _mm256_loadu_ps(o + w0 / 2);
                const __m256 lo = _mm256_unpacklo_ps(ve, vo), hi = _mm256_unpackhi_ps(ve, vo);
                __m256 r[2] = {_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31)};
                for (int k = 0; k < 2; k++) {
                    const int64_t n = W - w0 - 8 * k;
                    if (n <= 0) break;
                    __m256 v = _mm256_add_ps(r[k], bf);
                    if (act == ME_ACT_RELU)
                        v = _mm256_max_ps(zero, v); /* NaN kept */
                    else if (act == ME_ACT_LEAKY_RELU)
                        v = _mm256_blendv_ps(v, _mm256_mul_ps(v, sl), _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
                    if (n >= 8)
                        _mm256_storeu_ps(dst + w0 + 8 * k, v);
                    else
                        _mm256_maskstore_ps(dst + w0 + 8 * k, me_lanes8(n), v);
                }
            }
        }
    }
}

/* As wt_output, then 2x2/2 max pooling: each tile is one pooling window, so the pooled output
 * (h, w) is max(relu?(Y + b)) over tile (h, w)'s 4 entries, stored into y (F, H/2, W/2) (floor:
 * a last odd row or column of outputs is dropped) */
__attribute__((target("avx2,fma")))
static void wt_output_pool(const float *M, int64_t Fpad, const float *b, int relu, float *y, int64_t F,
                           int64_t H, int64_t W, const wt_geom *t, int64_t r0, int64_t tc) {
    const int64_t nv = tc / 8, HQ = H / 2, WQ = W / 2;
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t f = 0; f < F; f++) {
        const __m256 bf = _mm256_set1_ps(b ? b[f] : 0.0f);
        for (int64_t v = 0; v < nv; v++) {
            __m256 e[4];
            wt_tile_out(M, Fpad, f, tc, v, e);
            __m256 q = _mm256_add_ps(me_max_nan8(me_max_nan8(e[0], e[1]), me_max_nan8(e[2], e[3])), bf);
            if (relu) q = _mm256_max_ps(zero, q); /* NaN kept */
            if (t->pairs) { /* tile rows 2(r0+v) (lanes 0-3) and 2(r0+v)+1 (lanes 4-7), 4 tiles each */
                const int64_t ty = 2 * (r0 + v), n = WQ < 4 ? WQ : 4;
                const __m128i mk = _mm256_castsi256_si128(me_lanes8(n < 8 ? n : 7));
                if (ty < HQ) _mm_maskstore_ps(y + (f * HQ + ty) * WQ, mk, _mm256_castps256_ps128(q));
                if (ty + 1 < HQ) _mm_maskstore_ps(y + (f * HQ + ty + 1) * WQ, mk, _mm256_extractf128_ps(q, 1));
            } else {
                const int64_t ty = r0 + v / t->nvr, tx0 = (v % t->nvr) * 8, n = WQ - tx0;
                if (ty >= HQ || n <= 0) continue;
                float *dst = y + (f * HQ + ty) * WQ + tx0;
                if (n >= 8)
                    _mm256_storeu_ps(dst, q);
                else
                    _mm256_maskstore_ps(dst, me_lanes8(n), q);
            }
        }
    }
}

/* pooled (F, H/2, W/2) = maxpool2(relu?(conv3x3 pad 1 of x + b)), as conv_wino_train_image (0
 * when x is out of range) */
int conv_wino_pool_image(const float *x, int64_t C, int64_t H, int64_t W, const float *upk, int64_t Fpad,
                         int64_t F, const float *b, int relu, float *y, float *scratch) {
    if (!conv_wt_in_range(x, C * H * W)) return 0;
    const wt_geom t = wt_geometry(H, W);
    float *eo = scratch, *V = eo + 2 * C * t.Hq * t.WE, *M = V + 16 * C * t.TC;
    wt_split(x, eo, C, H, W, &t);
    for (int64_t r0 = 0; r0 < t.nrows; r0 += t.rchunk) {
        const int64_t nr = t.nrows - r0 < t.rchunk ? t.nrows - r0 : t.rchunk, tc = nr * t.nvr * 8;
        wt_input(eo, V, C, &t, r0, tc);
        wt_multiply(V, upk, Fpad, M, C, tc);
        wt_output_pool(M, Fpad, b, relu, y, F, H, W, &t, r0, tc);
    }
    return 1;
}

/* y (F,H,W) = conv3x3 pad 1 of x (C,H,W) with the transformed weights upk (16, C, Fpad) (+ b, act).
 * Returns 0, y untouched, when x is not conv_wt_in_range (the caller then takes the direct
 * path). */
int conv_wino_train_image(const float *x, int64_t C, int64_t H, int64_t W, const float *upk, int64_t Fpad,
                          int64_t F, const float *b, int act, float slope, float *y, float *scratch) {
    if (!conv_wt_in_range(x, C * H * W)) return 0;
    const wt_geom t = wt_geometry(H, W);
    float *eo = scratch, *V = eo + 2 * C * t.Hq * t.WE, *M = V + 16 * C * t.TC, *yt = M + 16 * Fpad * t.TC;
    wt_split(x, eo, C, H, W, &t);
    for (int64_t r0 = 0; r0 < t.nrows; r0 += t.rchunk) {
        const int64_t nr = t.nrows - r0 < t.rchunk ? t.nrows - r0 : t.rchunk, tc = nr * t.nvr * 8;
        wt_input(eo, V, C, &t, r0, tc);
        wt_multiply(V, upk, Fpad, M, C, tc);
        wt_output(M, Fpad, yt, b, act, slope, y, F, H, W, &t, r0, tc);
    }
    return 1;
}

/* ---- the weight gradient by Winograd: dw = G^T dU G, dU_p (F, C) = sum over tiles of
 * dM_p (F, T) @ V_p^T (T, C), dM = A dY A^T the adjoint of the output transform (A = [1 0; 1 1;
 * 1 -1; 0 -1]) of each 2x2 tile dY of dy. dU is summed over the images of a group
 * (conv_wt_dw_image), then transformed into the group's dw partial sums (conv_wt_dw_finish). The
 * tiles are in the lanes of dM; V is transposed to (T, Cp) (8x8 transposes) so that the products are again register
 * blocks of rows x vectors (wt_gemm, accumulating). */

/* dy (F,H,W) -> dyeo (F, 2, 2*THv, TWv): even then odd columns of each row, zero beyond dy */
static void wt_split_dy(const float *dy, float *dyeo, int64_t F, int64_t H, int64_t W, const wt_geom *t) {
    const int64_t TWv = t->TWv, ps = 2 * t->THv * TWv;
    memset(dyeo, 0, (size_t)(2 * F * ps) * sizeof(float));
    for (int64_t f = 0; f < F; f++) {
        float *E = dyeo + 2 * f * ps, *O = E + ps;
        for (int64_t h = 0; h < H; h++) {
            const float *r = dy + (f * H + h) * W;
            float *e = E + h * TWv, *o = O + h * TWv;
            int64_t w = 0;
            for (; w + 1 < W; w += 2) {
                e[w >> 1] = r[w];
                o[w >> 1] = r[w + 1];
            }
            if (w < W) e[w >> 1] = r[w];
        }
    }
}

/* dyeo -> dM (16, Fr, tc) for the chunk from vector row r0; rows F .. Fr-1 zero */
__attribute__((target("avx2,fma")))
static void wt_dy_input(const float *dyeo, float *dM, int64_t F, int64_t Fr, const wt_geom *t, int64_t r0,
                        int64_t tc) {
    const int64_t TWv = t->TWv, ps = 2 * t->THv * TWv, nv = tc / 8, ld = Fr * tc;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int p = 0; p < 16; p++)
        if (Fr > F) memset(dM + p * ld + F * tc, 0, (size_t)((Fr - F) * tc) * sizeof(float));
    for (int64_t f = 0; f < F; f++) {
        const float *E = dyeo + 2 * f * ps, *O = E + ps;
        for (int64_t v = 0; v < nv; v++) {
            __m256 y[2][2];
            if (t->pairs) {
                const int64_t lo = 4 * (r0 + v) * TWv, hi = lo + 2 * TWv;
                for (int a = 0; a < 2; a++)
                    for (int b = 0; b < 2; b++) {
                        const float *src = (b ? O : E) + a * TWv;
                        y[a][b] = _mm256_set_m128(_mm_loadu_ps(src + hi), _mm_loadu_ps(src + lo));
                    }
            } else {
                const int64_t off = 2 * (r0 + v / t->nvr) * TWv + (v % t->nvr) * 8;
                for (int a = 0; a < 2; a++)
                    for (int b = 0; b < 2; b++) y[a][b] = _mm256_loadu_ps((b ? O : E) + off + a * TWv);
            }
            __m256 q[4][2]; /* A dY */
            for (int b = 0; b < 2; b++) {
                q[0][b] = y[0][b];
                q[1][b] = _mm256_add_ps(y[0][b], y[1][b]);
                q[2][b] = _mm256_sub_ps(y[0][b], y[1][b]);
                q[3][b] = _mm256_xor_ps(y[1][b], sign);
            }
            float *dst = dM + f * tc + v * 8;
            for (int r = 0; r < 4; r++) { /* (A dY) A^T */
                _mm256_storeu_ps(dst + (4 * r + 0) * ld, q[r][0]);
                _mm256_storeu_ps(dst + (4 * r + 1) * ld, _mm256_add_ps(q[r][0], q[r][1]));
                _mm256_storeu_ps(dst + (4 * r + 2) * ld, _mm256_sub_ps(q[r][0], q[r][1]));
                _mm256_storeu_ps(dst + (4 * r + 3) * ld, _mm256_xor_ps(q[r][1], sign));
            }
        }
    }
}

/* eo -> Vt (16, tc, Cp): V transposed, channels innermost, zero for channels C .. Cp-1 */
__attribute__((target("avx2,fma")))
static void wt_input_t(const float *eo, float *Vt, int64_t C, int64_t Cp, const wt_geom *t, int64_t r0, int64_t tc) {
    const int64_t ps = t->Hq * t->WE, nv = tc / 8;
    __m256 buf[16][8];
    for (int64_t c0 = 0; c0 < Cp; c0 += 8)
        for (int64_t v = 0; v < nv; v++) {
            for (int cc = 0; cc < 8; cc++) {
                __m256 x[16];
                if (c0 + cc < C) {
                    const float *E = eo + 2 * (c0 + cc) * ps;
                    wt_patch(E, E + ps, t, r0, v, x);
                } else {
                    for (int p = 0; p < 16; p++) x[p] = _mm256_setzero_ps();
                }
                for (int p = 0; p < 16; p++) buf[p][cc] = x[p];
            }
            for (int p = 0; p < 16; p++) {
                conv_transpose8x8(buf[p]);
                float *dst = Vt + (p * tc + v * 8) * Cp + c0;
                for (int l = 0; l < 8; l++) _mm256_storeu_ps(dst + l * Cp, buf[p][l]);
            }
        }
}

/* dU (16, Fr, Cp) (+)= the products of image x (C,H,W), dy (F,H,W) (overwritten when first);
 * Fr = F rounded up to 4 (the rows beyond F are zero).
 * Returns 0, dU untouched, when x or dy is not conv_wt_in_range (the caller takes the direct
 * path). */
int conv_wt_dw_image(const float *x, const float *dy, int64_t C, int64_t H, int64_t W, int64_t F, float *dU,
                     int first, float *scratch) {
    if (!conv_wt_in_range(x, C * H * W) || !conv_wt_in_range(dy, F * H * W)) return 0;
    const wt_geom t = wt_geometry(H, W);
    const int64_t Cp = (C + 7) / 8 * 8, Fr = (F + 3) / 4 * 4;
    float *eo = scratch, *Vt = eo + 2 * C * t.Hq * t.WE, *dyeo = Vt + 16 * t.TC * Cp;
    float *dM = dyeo + 2 * F * 2 * t.THv * t.TWv;
    wt_split(x, eo, C, H, W, &t);
    wt_split_dy(dy, dyeo, F, H, W, &t);
    for (int64_t r0 = 0; r0 < t.nrows; r0 += t.rchunk) {
        const int64_t nr = t.nrows - r0 < t.rchunk ? t.nrows - r0 : t.rchunk, tc = nr * t.nvr * 8;
        const int acc = !(first && r0 == 0); /* the group's first products overwrite dU */
        wt_input_t(eo, Vt, C, Cp, &t, r0, tc);
        wt_dy_input(dyeo, dM, F, Fr, &t, r0, tc);
        for (int p = 0; p < 16; p++) /* dU_p (Fr, Cp) (+)= dM_p (Fr, tc) @ Vt_p (tc, Cp) */
            wt_gemm(dM + p * Fr * tc, tc, 1, Fr, Vt + p * tc * Cp, Cp, Cp / 8, tc, dU + p * Fr * Cp, Cp, acc);
    }
    return 1;
}

/* dU (16, Fr, Cp) -> dwg (F, C, 3, 3) (+)= G^T dU G */
void conv_wt_dw_finish(const float *dU, int64_t F, int64_t C, float *dwg, int beta_one) {
    const int64_t Cp = (C + 7) / 8 * 8, Fr = (F + 3) / 4 * 4;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (F * C >= 512)
    for (int64_t f = 0; f < F; f++)
        for (int64_t c = 0; c < C; c++) {
            float u[4][4], tt[4][3];
            for (int p = 0; p < 16; p++) u[p >> 2][p & 3] = dU[(p * Fr + f) * Cp + c];
            for (int r = 0; r < 4; r++) { /* dU G */
                tt[r][0] = u[r][0] + 0.5f * (u[r][1] + u[r][2]);
                tt[r][1] = 0.5f * (u[r][1] - u[r][2]);
                tt[r][2] = 0.5f * (u[r][1] + u[r][2]) + u[r][3];
            }
            float *d = dwg + (f * C + c) * 9;
            for (int j = 0; j < 3; j++) { /* G^T (dU G) */
                const float g0 = tt[0][j] + 0.5f * (tt[1][j] + tt[2][j]);
                const float g1 = 0.5f * (tt[1][j] - tt[2][j]);
                const float g2 = 0.5f * (tt[1][j] + tt[2][j]) + tt[3][j];
                d[j] = beta_one ? d[j] + g0 : g0;
                d[3 + j] = beta_one ? d[3 + j] + g1 : g1;
                d[6 + j] = beta_one ? d[6 + j] + g2 : g2;
            }
        }
}
#endif
