/* conv_wino_pool.c: inference conv + bias + ReLU + 2x2 max pooling (me_conv2d_pool2_forward),
 * and two such layers in one pass (me_conv2d_pool2_chain_forward).
 *
 * me_conv2d_pool2_forward: for 3x3 stride 1 Winograd F(2x2, 3x3) (wino_pool_tiles /
 * wino_pool_images, wino1_pool_tiles); else, on AVX2 for 3x3 pad 1, the training Winograd kernels
 * of conv_wino_train.c with a pooling output (wino_pool_forward); else the direct kernel
 * (conv_direct_pool_image_NF). Two such layers in a row (me_conv2d_pool2_chain_forward) run in
 * one pass over blocks of 8 images, the first layer's output written straight into the second's
 * input plane. The Winograd pooling kernels (conv_wino_pool.h) are built for AVX-512VL and for
 * AVX2 + FMA, with the same bits; both leave a call holding a value out of conv_wt_in_range to
 * the other paths.
 *
 * Winograd F(2x2, 3x3) + pool:
 * x (N,C,H,W), w (F,C,3,3), b (F) -> y (N,F,HO/2,WO/2) = maxpool2(relu?(conv(x, w) + b)).
 * Inference of a 3x3 stride-1 convolution followed by 2x2/2 max pooling (Lavin & Gray 2016,
 * "Fast Algorithms for Convolutional Neural Networks"): a 2x2 output tile is exactly one pooling
 * window, computed from the 4x4 input patch under it as Y = A^T [(G g G^T) . (B^T d B)] A:
 * 16 multiplies per (tile, channel, filter) instead of 36. The products are 16 small GEMMs
 * (one per patch position) over the channels, blocked by ME_WINO_KB filters. Two layouts of the
 * 8 ymm lanes (wino_layout; per lane the same arithmetic in the same order, so an image's output
 * is bitwise the same in both):
 *  - tiles: 8 tiles of a tile row of one image. The padded plane is deinterleaved into even and
 *    odd columns, so the patch column cc of tiles tx.. is the contiguous run (cc even ? E : O)
 *    [tx + cc/2 ..]; pooled outputs go straight into y. Rows of TW tiles leave 8 - TW mod 8
 *    lanes idle (1 of 8 at 14x14, 5 of 8 at 7x7).
 *  - images (C > 1, whole blocks of 8 images): one tile of 8 images. The block is transposed
 *    into an interleaved plane (C, Hp, Wp, 8) and the pooled outputs out of a (F, TH*TW, 8)
 *    buffer (8x8 transposes); no idle lanes. The last N mod 8 images take the tiles layout, and
 *    so does C == 1, where the transposes cost more than the idle lanes save.
 * Sums are reassociated relative to the direct kernel (float32 rounding differs by a few ulps of
 * the patch magnitude). An Inf input would give NaN instead of Inf (Inf - Inf in the input
 * transform), and so would finite values within a few times the float32 maximum (~1e38), which
 * overflow in the transforms where the direct sum stays finite: so a call whose weights, images
 * or (chain) first-stage outputs leave conv_wt_in_range is not finished here (the AVX2 training
 * kernels per image, or conv then pool), and non-finite values keep the direct sums' pattern.
 * Used for C == 1 (wino1_pool_tiles: no products through memory) and for C >= ME_WINO_MIN_C with
 * F > 8 (with 8 filters half of each 16-filter block is idle); C == 2 stays direct.
 * Workspace (floats): tiles, in the group's scratch: C*Hp*2*(TW+1) + 16 deinterleaved plane,
 * and for C > 1 16*C*8 transformed inputs and 16*ME_WINO_KB*8 products; images: conv_wino8_slot
 * per thread, sized for min(N/8, 16) threads (me_conv2d_workspace_size takes the larger of the
 * two needs; with more threads than that, only that many work). */
#include "engine.h"
#include "simd_internal.h"
#include "conv_internal.h"

#include <string.h>

#define ME_WINO_MIN_C 3
#define ME_WINO_KB 16 /* filters per block: 16 ymm accumulators (AVX-512VL: 32 ymm registers) */

static int64_t wino_scratch(int64_t C, int64_t Hp, int64_t TW) {
    return C * Hp * 2 * (TW + 1) + 16 + (C == 1 ? 0 : 16 * C * 8 + 16 * ME_WINO_KB * 8);
}

/* floats between the image groups of the Winograd tiles layout: the group's usual scratch, or
 * more when the tiles layout needs more (small planes) */
int64_t conv_wino_group_stride(const conv_geom *g, int64_t C) {
    const int64_t t = wino_scratch(C, g->Hp, g->WO / 2);
    return t > g->per_group ? t : g->per_group;
}

/* The shapes that take Winograd (given AVX-512VL): 3x3, stride 1, HO, WO >= 2, and C == 1 or
 * C >= ME_WINO_MIN_C with F > 8. A function of the shapes only (it sizes the workspace). */
int conv_wino_applies(int64_t C, int64_t F, int64_t KH, int64_t KW, int64_t stride, int64_t H,
                      int64_t W, int64_t pad) {
    return KH == 3 && KW == 3 && stride == 1 && H + 2 * pad >= 4 && W + 2 * pad >= 4 &&
           (C == 1 || (C >= ME_WINO_MIN_C && F > 8));
}

/* Images layout (C > 1): the scratch slot of one thread, reused for each of its blocks of 8
 * images: the interleaved plane (C, Hp, Wp, 8), vb and mb as above, and the pooled output
 * (F, TH*TW, 8). */
int64_t conv_wino8_slot(int64_t C, int64_t F, int64_t Hp, int64_t Wp, int64_t TH, int64_t TW) {
    return C * Hp * Wp * 8 + 16 * C * 8 + 16 * ME_WINO_KB * 8 + F * TH * TW * 8;
}

int64_t conv_wino8_slots(int64_t C, int64_t N) {
    if (C == 1) return 0;
    return N / 8 < ME_CONV_GROUPS ? N / 8 : ME_CONV_GROUPS;
}

/* g (3,3) -> u (4,4) = G g G^T, G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1] */
void conv_wino_transform_filter(const float *g, float *u) {
    float t[4][3]; /* G g: rows */
    for (int j = 0; j < 3; j++) {
        t[0][j] = g[j];
        t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
        t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
        t[3][j] = g[6 + j];
    }
    for (int i = 0; i < 4; i++) { /* (G g) G^T: columns */
        u[i * 4 + 0] = t[i][0];
        u[i * 4 + 1] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
        u[i * 4 + 2] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
        u[i * 4 + 3] = t[i][2];
    }
}

/* w (F,C,3,3) -> upk (16, C, Fpad): U = G g G^T per (f, c), position-major, filters innermost
 * (Fpad = F rounded up to ME_WINO_KB, zero beyond F) */
static inline void wino_pack_filter(const float *w, float *upk, int64_t f, int64_t F, int64_t C, int64_t Fpad) {
    for (int64_t c = 0; c < C; c++) {
        float u[16] = {0};
        if (f < F) conv_wino_transform_filter(w + (f * C + c) * 9, u);
        for (int p = 0; p < 16; p++) upk[(p * C + c) * Fpad + f] = u[p];
    }
}

static void wino_pack_weights(const float *w, float *upk, int64_t F, int64_t C, int64_t Fpad) {
    for (int64_t f = 0; f < Fpad; f++) wino_pack_filter(w, upk, f, F, C, Fpad);
}

/* the same, the filters shared out over the engine's threads (called outside parallel regions) */
void conv_wino_pack_weights_par(const float *w, float *upk, int64_t F, int64_t C, int64_t Fpad) {
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (Fpad * C >= 1024)
    for (int64_t f = 0; f < Fpad; f++) wino_pack_filter(w, upk, f, F, C, Fpad);
}

#if ME_CONV_X86
/* dst[i] = src[2i], i < n (n may be 0) */
__attribute__((target("avx512f"))) static void stride2_copy(float *dst, const float *src, int64_t n) {
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const int64_t left = 2 * n - 1 - 2 * i; /* floats of src still needed: src[2i .. 2n-2] */
        const __mmask16 m1 = (__mmask16)(left >= 32 ? 0xFFFFu : (left > 16 ? (1u << (left - 16)) - 1u : 0u));
        const __m512 a = _mm512_loadu_ps(src + 2 * i);
        const __m512 b = _mm512_maskz_loadu_ps(m1, src + 2 * i + 16);
        _mm512_storeu_ps(dst + i, _mm512_permutex2var_ps(a, even, b));
    }
    for (; i < n; i++) dst[i] = src[2 * i];
}

/* x (C,H,W) -> xd (C, Hp, 2, TW+1): row h of the zero-padded plane split into its even columns
 * (xd[c][h][0]) and odd columns (xd[c][h][1]); plus 16 floats of slack. xd must be zeroed once
 * (C*Hp*2*(TW+1) + 16 floats) before the first image: every image writes the same positions, so
 * the padding and the slack stay zero. Rows of up to 32
 * floats (W <= 32, 2*(TW+1) <= 32) are split in registers (one permute per 16 outputs, the padding
 * columns zeroed by the mask); wider rows by strided copies. */
__attribute__((target("avx512f")))
static void wino_deinterleave(const float *x, float *xd, int64_t C, int64_t H, int64_t W, int64_t pad,
                              int64_t Hp, int64_t TW) {
    const int64_t pw = TW + 1, rw = 2 * pw; /* floats per deinterleaved row */
    if (W <= 32 && rw <= 32) {
        int32_t idx[32];
        uint32_t keep = 0; /* output lanes that hold an input column (the others are padding) */
        for (int64_t l = 0; l < 32; l++) {
            const int64_t col = l < pw ? 2 * l : 2 * (l - pw) + 1; /* padded column of lane l */
            const int64_t src = col - pad;
            idx[l] = (int32_t)(src >= 0 && src < W ? src : 0);
            if (l < rw && src >= 0 && src < W) keep |= 1u << l;
        }
        const __m512i i0 = _mm512_loadu_si512(idx), i1 = _mm512_loadu_si512(idx + 16);
        const __mmask16 k0 = (__mmask16)(keep & 0xFFFFu), k1 = (__mmask16)(keep >> 16);
        const __mmask16 la = (__mmask16)(W >= 16 ? 0xFFFFu : (1u << W) - 1u);
        const __mmask16 lb = (__mmask16)(W <= 16 ? 0u : (W >= 32 ? 0xFFFFu : (1u << (W - 16)) - 1u));
        const __mmask16 sa = (__mmask16)(rw >= 16 ? 0xFFFFu : (1u << rw) - 1u);
        const __mmask16 sb = (__mmask16)(rw <= 16 ? 0u : (1u << (rw - 16)) - 1u);
        for (int64_t c = 0; c < C; c++)
            for (int64_t h = 0; h < H; h++) {
                const float *src = x + (c * H + h) * W;
                float *row = xd + (c * Hp + h + pad) * rw;
                const __m512 a = _mm512_maskz_loadu_ps(la, src), b = _mm512_maskz_loadu_ps(lb, src + 16);
                _mm512_mask_storeu_ps(row, sa, _mm512_maskz_permutex2var_ps(k0, a, i0, b));
                if (sb) _mm512_mask_storeu_ps(row + 16, sb, _mm512_maskz_permutex2var_ps(k1, a, i1, b));
            }
        return;
    }
    const int64_t we = pad & 1, wo = 1 - we; /* first input column landing on an even / odd column */
    for (int64_t c = 0; c < C; c++)
        for (int64_t h = 0; h < H; h++) {
            const float *src = x + (c * H + h) * W;
            float *row = xd + (c * Hp + h + pad) * rw;
            /* keep only columns < 2*pw (those beyond are never read) */
            int64_t ne = W > we ? (W - we + 1) / 2 : 0, no = W > wo ? (W - wo + 1) / 2 : 0;
            const int64_t e0 = (we + pad) / 2, o0 = (wo + pad) / 2;
            if (e0 + ne > pw) ne = pw - e0 > 0 ? pw - e0 : 0;
            if (o0 + no > pw) no = pw - o0 > 0 ? pw - o0 : 0;
            stride2_copy(row + e0, src + we, ne);
            stride2_copy(row + pw + o0, src + wo, no);
        }
}

/* Where the lanes of a Winograd tile vector live. Two layouts share the kernels below:
 *  - tiles ("lpt" 1: the 8 lanes are 8 consecutive tiles of one tile row of one image), input
 *    from the even/odd-deinterleaved plane (wino_deinterleave), output straight into y;
 *  - images (lpt 8: the 8 lanes are one tile of 8 images), input from the image-interleaved
 *    plane (C, Hp, Wp, 8) (wino_interleave8), output to (F, TH*TW, 8) (wino_deinterleave8).
 * All offsets in floats. Per lane the arithmetic is the same in both layouts, in the same order,
 * so an image's result does not depend on which layout computed it. */
typedef struct {
    int64_t cs, tys, txs;   /* input: first patch value of channel c, tile row ty, tile column tx */
    int64_t rs, odd, pair;  /* input: patch row r, odd column, column pair (column cc: (cc&1)*odd + (cc>>1)*pair) */
    int64_t fs, oys, oxs;   /* output: filter f, tile row ty, tile column tx */
    int64_t lpt;            /* lanes per tile column step: 1 (tiles) or 8 (images) */
} wino_layout;

static inline wino_layout wino_tiles_layout(int64_t Hp, int64_t TH, int64_t TW) {
    const int64_t pw = TW + 1;
    const wino_layout L = {Hp * 2 * pw, 4 * pw, 1, 2 * pw, pw, 1, TH * TW, TW, 1, 1};
    return L;
}

/* input plane (C, Hp, Wp, 8); output: filter f at f*ofs, tile row ty at ty*oys, tile tx at tx*8
 * ((F, TH*TW, 8): ofs = TH*TW*8, oys = TW*8; or the interior of the next layer's plane) */
static inline wino_layout wino_images_layout(int64_t Hp, int64_t Wp, int64_t ofs, int64_t oys) {
    const wino_layout L = {Hp * Wp * 8, 2 * Wp * 8, 16, Wp * 8, 8, 16, ofs, oys, 8, 8};
    return L;
}

/* The padding of xi (C, Hp, Wp, 8) around the H x W interior at (pad, pad) -> 0 */
static void wino_zero_padding8(float *xi, int64_t C, int64_t H, int64_t W, int64_t pad, int64_t Hp, int64_t Wp) {
    for (int64_t c = 0; c < C; c++)
        for (int64_t h = 0; h < Hp; h++) {
            float *row = xi + (c * Hp + h) * Wp * 8;
            if (h < pad || h >= pad + H) {
                memset(row, 0, (size_t)(Wp * 8) * sizeof(float));
            } else {
                memset(row, 0, (size_t)(pad * 8) * sizeof(float));
                memset(row + (pad + W) * 8, 0, (size_t)((Wp - pad - W) * 8) * sizeof(float));
            }
        }
}

/* x (C,H,W) -> xd (C, Hp, 2, TW+1) as wino_deinterleave, element by element (the AVX2 tiles layout) */
static void wino_deinterleave_portable(const float *x, float *xd, int64_t C, int64_t H, int64_t W, int64_t pad,
                                       int64_t Hp, int64_t TW) {
    const int64_t pw = TW + 1, rw = 2 * pw;
    for (int64_t c = 0; c < C; c++)
        for (int64_t h = 0; h < H; h++) {
            const float *src = x + (c * H + h) * W;
            float *row = xd + (c * Hp + h + pad) * rw;
            for (int64_t w = 0; w < W; w++) {
                const int64_t col = w + pad, half = col >> 1; /* padded column: pair, then parity */
                if (half < pw) row[(col & 1) * pw + half] = src[w];
            }
        }
}

#define WP_SFX(name) name##_avx512
#define WP_TARGET "avx512f,avx512vl,fma"
#define WP_AVX512 1
#include "conv_wino_pool.h"
#define WP_SFX(name) name##_avx2
#define WP_TARGET "avx2,fma"
#define WP_AVX512 0
#include "conv_wino_pool.h"
#endif

#if ME_CONV_X86
/* AVX2, 3x3 pad 1 (conv_wt_shape_applies): conv + bias + ReLU + 2x2 max pooling by the training
 * Winograd kernels with a pooling output (conv_wino_pool_image), image groups as the forward; an
 * image out of Winograd's range is convolved by im2col + SGEMM on the wide grid, then pooled. */
static int wino_pool_forward(const float *x, const float *w, const float *b, float *y, int64_t N, int64_t C,
                             int64_t H, int64_t W, int64_t F, int relu, const conv_geom *g, float *workspace) {
    const int64_t G = g->G, K = g->K, PW = g->PW, HO = g->HO, WO = g->WO, Hp = g->Hp, Wp = g->Wp, ldw = g->ldw;
    const int64_t HQ = HO / 2, WQ = WO / 2, Fpad = (F + 3) / 4 * 4;
    float *pk = workspace + G * g->per_group;
    conv_wino_pack_weights_par(w, pk, F, C, Fpad);
#pragma omp parallel for num_threads(conv_team(G)) schedule(dynamic, 1)
    for (int64_t gi = 0; gi < G; gi++) {
        float *col = workspace + conv_slot() * g->per_group, *yw = col + K * PW, *xp = yw + F * ldw;
        for (int64_t n = gi * N / G; n < (gi + 1) * N / G; n++) {
            const float *xn = x + n * C * H * W;
            float *yn = y + n * F * HQ * WQ;
            if (conv_wino_pool_image(xn, C, H, W, pk, Fpad, F, b, relu, yn, col)) continue;
            conv_pad_image(xn, xp, C, H, W, 1, Hp, Wp, 3);
            conv_im2col_wide(xp, col, C, 3, 3, Hp, Wp, PW);
            me_sgemm_st(0, 0, F, PW, K, 1.0f, w, K, col, PW, 0.0f, yw, ldw);
            for (int64_t f = 0; f < F; f++)
                for (int64_t hq = 0; hq < HQ; hq++)
                    for (int64_t wq = 0; wq < WQ; wq++) {
                        const float *r = yw + f * ldw + 2 * hq * Wp + 2 * wq;
                        const float c4[4] = {r[0], r[1], r[Wp], r[Wp + 1]};
                        float m = c4[0];
                        for (int k = 1; k < 4; k++) m = (m != m || c4[k] <= m) ? m : c4[k]; /* NaN wins */
                        float v = m + (b ? b[f] : 0.0f);
                        if (relu && v < 0.0f) v = 0.0f;
                        yn[(f * HQ + hq) * WQ + wq] = v;
                    }
        }
    }
    return 1;
}
#endif

#if ME_CONV_X86
/* The Winograd pooling kernels of one instruction set (conv_wino_pool.h), and the tiles layout's
 * deinterleave. Both builds hand a call whose weights or images hold a non-finite value or one
 * above 2^40 (conv_wt_in_range) to other paths, as the AVX2 training kernels do. */
typedef struct {
    void (*pool_tiles)(const float *, const float *, const float *, float *, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int, float *, float *);
    void (*pool1_tiles)(const float *, const float *, const float *, float *, int64_t, int64_t, int64_t,
                        int64_t, int64_t, int);
    void (*pool_images)(const float *, const float *, const float *, float *, int64_t, int64_t, int64_t,
                        int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, float *, float *);
    void (*pool1_images)(const float *, const float *, const float *, float *, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int64_t, int64_t, int64_t, int);
    void (*interleave8)(const float *, int64_t, float *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);
    void (*deinterleave8)(const float *, float *, int64_t, int64_t);
    void (*deinterleave)(const float *, float *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);
} wino_isa;

static const wino_isa wino_isa_avx512 = {wino_pool_tiles_avx512, wino1_pool_tiles_avx512, wino_pool_images_avx512,
                                         wino1_pool_images_avx512, wino_interleave8_avx512,
                                         wino_deinterleave8_avx512, wino_deinterleave};
static const wino_isa wino_isa_avx2 = {wino_pool_tiles_avx2, wino1_pool_tiles_avx2, wino_pool_images_avx2,
                                       wino1_pool_images_avx2, wino_interleave8_avx2, wino_deinterleave8_avx2,
                                       wino_deinterleave_portable};

/* The Winograd pooling build for the SGEMM kernel in use (avx512 with AVX-512VL, or avx2), or
 * NULL, also when the weights (F*K floats) are out of conv_wt_in_range. */
static const wino_isa *wino_isa_pick(const float *w, int64_t FK) {
    const int k = me_gemm_kernel_id();
    if (!(k == 2 && (me_cpu_features() & ME_CPU_AVX512VL)) && k != 1) return NULL;
    if (!conv_wt_in_range(w, FK)) return NULL;
    return k == 2 ? &wino_isa_avx512 : &wino_isa_avx2;
}

/* May a block of nimg images (image i at xb + i*CHW; or any nimg arrays of CHW floats) go on? Not
 * when another thread has given up (*bad), nor when one of them is out of conv_wt_in_range; then
 * *bad is set. */
static int wino_block_ok(const float *xb, int64_t nimg, int64_t CHW, int *bad) {
    int ok = 1, seen;
    for (int64_t i = 0; i < nimg; i++) ok &= conv_wt_in_range(xb + i * CHW, CHW);
#pragma omp atomic read
    seen = *bad;
    if (ok && !seen) return 1;
#pragma omp atomic write
    *bad = 1;
    return 0;
}

/* conv3x3 (stride 1) + bias + ReLU + 2x2 max pool by the Winograd pooling kernels of wi. Returns
 * 0 when an image is out of conv_wt_in_range (y then holds partial results), 1 when done. */
static int wino_pool_run(const wino_isa *wi, const float *x, const float *w, const float *b, float *y, int64_t N,
                         int64_t C, int64_t H, int64_t W, int64_t F, int64_t pad, int relu, const conv_geom *gp,
                         float *workspace) {
    const conv_geom g = *gp;
    const int64_t G = g.G, Hp = g.Hp, Wp = g.Wp, PQ = (g.HO / 2) * (g.WO / 2);
    const int64_t TH = g.HO / 2, TW = g.WO / 2, Fpad = (F + ME_WINO_KB - 1) / ME_WINO_KB * ME_WINO_KB;
    const int64_t CHW = C * H * W;
    int bad = 0;
    /* C > 1: whole blocks of 8 images in the images layout (C == 1 stays in the tiles layout:
     * there the transposes cost more than the idle lanes they save) */
    const int64_t NB = C == 1 ? 0 : N / 8, slot = conv_wino8_slot(C, F, Hp, Wp, TH, TW);
    /* one slot per thread (at most the workspace's conv_wino8_slots), reused block after block so
     * that it stays in that core's L2; each image's result is independent of the split */
    const int64_t nth = me_get_num_threads(), S = nth < conv_wino8_slots(C, N) ? nth : conv_wino8_slots(C, N);
#pragma omp parallel for num_threads((int)S) schedule(static) if (S > 1)
    for (int64_t s = 0; s < S; s++) {
        float *xi = workspace + s * slot, *vb = xi + C * Hp * Wp * 8, *mb = vb + 16 * C * 8;
        float *yb = mb + 16 * ME_WINO_KB * 8;
        float upk[ME_DIRECT_MAX_WPK] __attribute__((aligned(64)));
        wino_pack_weights(w, upk, F, C, Fpad);
        wino_zero_padding8(xi, C, H, W, pad, Hp, Wp);
        for (int64_t blk = s * NB / S; blk < (s + 1) * NB / S; blk++) {
            const float *xb = x + blk * 8 * CHW;
            if (!wino_block_ok(xb, 8, CHW, &bad)) break;
            wi->interleave8(xb, 8, xi, C, H, W, pad, Hp, Wp);
            wi->pool_images(xi, upk, b, yb, F, C, Fpad, Hp, Wp, TH, TW, TH * TW * 8, TW * 8, relu, vb, mb);
            wi->deinterleave8(yb, y + blk * 8 * F * PQ, F * PQ, 8);
        }
    }
    if (bad) return 0;
    /* the last N mod 8 images one by one in the tiles layout */
    const int64_t n0 = NB * 8, R = N - n0, GR = R < G ? R : G, gs = conv_wino_group_stride(&g, C);
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (GR > 1)
    for (int64_t gi = 0; gi < GR; gi++) {
        float *xd = workspace + gi * gs; /* the group's scratch */
        float *vb = xd + C * Hp * 2 * (TW + 1) + 16, *mb = vb + 16 * C * 8;
        float upk[ME_DIRECT_MAX_WPK] __attribute__((aligned(64)));
        wino_pack_weights(w, upk, F, C, Fpad);
        memset(xd, 0, (size_t)(C * Hp * 2 * (TW + 1) + 16) * sizeof(float)); /* padding, slack */
        for (int64_t n = n0 + gi * R / GR; n < n0 + (gi + 1) * R / GR; n++) {
            if (!wino_block_ok(x + n * CHW, 1, CHW, &bad)) break;
            wi->deinterleave(x + n * CHW, xd, C, H, W, pad, Hp, TW);
            if (C == 1)
                wi->pool1_tiles(xd, upk, b, y + n * F * PQ, F, Fpad, Hp, TH, TW, relu);
            else
                wi->pool_tiles(xd, upk, b, y + n * F * PQ, F, C, Fpad, Hp, TH, TW, relu, vb, mb);
        }
    }
    return !bad;
}
#endif

/* x (N,C,H,W) -> y (N,F,HO/2,WO/2) = maxpool2x2(act(conv(x, w) + b)) in one pass (inference: no
 * argmax, the full-resolution output is never written). Supported when the direct path is
 * (stride 1, C*KH*KW <= 288, AVX-512 kernel) and HO, WO >= 2; returns 0 (nothing written)
 * otherwise, 1 when done. Max pooling as me_maxpool2d_forward (floor mode, NaN propagates). */
int me_conv2d_pool2_forward(const float *x, const float *w, const float *b, float *y,
                            int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                            int64_t KH, int64_t KW, int64_t stride, int64_t pad, int relu,
                            float *workspace) {
    const conv_geom g = conv_geometry(N, C, H, W, F, KH, KW, stride, pad);
    const int64_t G = g.G, K = g.K, HO = g.HO, WO = g.WO, Hp = g.Hp, Wp = g.Wp;
    if (N <= 0 || G <= 0 || HO < 2 || WO < 2) return 0;
#if ME_CONV_X86
    const int64_t Fpad = (F + ME_WINO_KB - 1) / ME_WINO_KB * ME_WINO_KB;
    if (conv_wino_applies(C, F, KH, KW, stride, H, W, pad) && K <= ME_DIRECT_MAX_K &&
        16 * C * Fpad <= ME_DIRECT_MAX_WPK) {
        const wino_isa *wi = wino_isa_pick(w, F * K);
        if (wi && wino_pool_run(wi, x, w, b, y, N, C, H, W, F, pad, relu, &g, workspace)) return 1;
    }
    /* AVX2: the training Winograd kernels, pooled per tile (per image: out of range -> im2col) */
    if (conv_use_avx2() && conv_wt_shape_applies(C, F, KH, KW, stride, pad) && conv_wt_in_range(w, F * K))
        return wino_pool_forward(x, w, b, y, N, C, H, W, F, relu, &g, workspace);
#endif
    if (!conv_use_direct(F, K, stride)) return 0;
#if ME_CONV_X86
    const int64_t NF = F <= 8 ? 8 : 16, PQ = (HO / 2) * (WO / 2);
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static)
    for (int64_t gi = 0; gi < G; gi++) {
        float *xp = workspace + gi * g.per_group + K * g.PW + F * g.ldw; /* plane */
        float wpk[ME_DIRECT_MAX_WPK] __attribute__((aligned(64)));
        conv_pack_direct_weights(w, wpk, F, K, NF);
        for (int64_t n = gi * N / G; n < (gi + 1) * N / G; n++) {
            conv_pad_image(x + n * C * H * W, xp, C, H, W, pad, Hp, Wp, KW);
            if (NF == 8)
                conv_direct_pool_image_8(xp, wpk, b, y + n * F * PQ, F, C, KH, KW, Hp, Wp, HO, WO, relu);
            else
                conv_direct_pool_image_16(xp, wpk, b, y + n * F * PQ, F, C, KH, KW, Hp, Wp, HO, WO, relu);
        }
    }
    return 1;
#else
    (void)x; (void)w; (void)b; (void)y; (void)relu; (void)workspace; (void)Hp; (void)Wp;
    return 0;
#endif
}

/* ------------------------------------------------- two conv + pool stages in one pass
 * Inference of conv3x3(stride 1) + bias + act + 2x2 max pool, twice (small_cnn_embedder's trunk),
 * over blocks of 8 images in the images layout (N >= 8; fewer images take the two single-stage
 * calls, whose tiles layout has no idle image lanes): the first stage's pooled outputs are stored
 * straight into the interior of the second stage's interleaved plane, so the intermediate
 * activations never leave the thread's scratch (no (N, F1, H2, W2) tensor, no transposes
 * between the stages). A partial last block computes zeros in its missing lanes and stores only
 * its images. Per lane the arithmetic is that of me_conv2d_pool2_forward's Winograd kernels, so
 * each output is bitwise what the two single-stage calls give. Shapes: stage 1 C -> F1 on H x W
 * with pad1, stage 2 F1 -> F2 on H2 x W2 = ((H + 2*pad1 - 2)/2) x ((W + 2*pad1 - 2)/2) with pad2.
 * Scratch per thread (wino_chain_slot): both interleaved planes, both packed weights, the
 * transformed inputs and products of the wider stage, the second stage's pooled block. */
typedef struct {
    int64_t Hp1, Wp1, TH1, TW1, H2, W2, Hp2, Wp2, TH2, TW2, F1pad, F2pad;
} wino_chain_geom;

static wino_chain_geom wino_chain_geometry(int64_t H, int64_t W, int64_t F1, int64_t pad1, int64_t F2,
                                           int64_t pad2) {
    wino_chain_geom g;
    g.Hp1 = H + 2 * pad1, g.Wp1 = W + 2 * pad1;
    g.TH1 = (g.Hp1 - 2) / 2, g.TW1 = (g.Wp1 - 2) / 2;
    g.H2 = g.TH1, g.W2 = g.TW1, g.Hp2 = g.H2 + 2 * pad2, g.Wp2 = g.W2 + 2 * pad2;
    g.TH2 = (g.Hp2 - 2) / 2, g.TW2 = (g.Wp2 - 2) / 2;
    g.F1pad = (F1 + ME_WINO_KB - 1) / ME_WINO_KB * ME_WINO_KB;
    g.F2pad = (F2 + ME_WINO_KB - 1) / ME_WINO_KB * ME_WINO_KB;
    return g;
}

static int64_t wino_chain_slot(int64_t C, int64_t F1, int64_t F2, const wino_chain_geom *g) {
    const int64_t Cmax = C > F1 ? C : F1;
    return C * g->Hp1 * g->Wp1 * 8 + F1 * g->Hp2 * g->Wp2 * 8 + 16 * C * g->F1pad + 16 * F1 * g->F2pad +
           16 * Cmax * 8 + 16 * ME_WINO_KB * 8 + F2 * g->TH2 * g->TW2 * 8;
}

/* The shapes the chain supports (given AVX-512VL and the avx512 GEMM kernel): both stages take
 * Winograd (conv_wino_applies), the second in the images layout (F1 >= ME_WINO_MIN_C, F2 > 8), both
 * pooled outputs at least 1 x 1. */
static int wino_chain_applies(int64_t C, int64_t H, int64_t W, int64_t F1, int64_t pad1, int64_t F2,
                              int64_t pad2) {
    if (C <= 0 || H <= 0 || W <= 0 || F1 <= 0 || F2 <= 0 || pad1 < 0 || pad2 < 0) return 0;
    if (!conv_wino_applies(C, F1, 3, 3, 1, H, W, pad1)) return 0;
    const wino_chain_geom g = wino_chain_geometry(H, W, F1, pad1, F2, pad2);
    return g.H2 >= 1 && g.W2 >= 1 && conv_wino_applies(F1, F2, 3, 3, 1, g.H2, g.W2, pad2) &&
           F1 >= ME_WINO_MIN_C && g.TH2 >= 1 && g.TW2 >= 1;
}

/* floats of scratch for me_conv2d_pool2_chain_forward; 0 when the chain does not apply */
int64_t me_conv2d_pool2_chain_workspace_size(int64_t N, int64_t C, int64_t H, int64_t W, int64_t F1,
                                             int64_t pad1, int64_t F2, int64_t pad2) {
    if (N < 8 || !wino_chain_applies(C, H, W, F1, pad1, F2, pad2)) return 0;
    const wino_chain_geom g = wino_chain_geometry(H, W, F1, pad1, F2, pad2);
    const int64_t NB = (N + 7) / 8;
    return (NB < ME_CONV_GROUPS ? NB : ME_CONV_GROUPS) * wino_chain_slot(C, F1, F2, &g);
}

/* x (N,C,H,W), w1 (F1,C,3,3), b1 (F1), w2 (F2,F1,3,3), b2 (F2) -> y (N,F2,TH2,TW2), the two
 * stages above (TH2 = (H2 + 2*pad2 - 2)/2, TW2 likewise); returns 0 (nothing written) when the chain does not apply, 1 when done */
int me_conv2d_pool2_chain_forward(const float *x, const float *w1, const float *b1, const float *w2,
                                  const float *b2, float *y, int64_t N, int64_t C, int64_t H, int64_t W,
                                  int64_t F1, int64_t pad1, int relu1, int64_t F2, int64_t pad2, int relu2,
                                  float *workspace) {
    if (N < 8 || !wino_chain_applies(C, H, W, F1, pad1, F2, pad2)) return 0;
#if ME_CONV_X86
    const wino_chain_geom g = wino_chain_geometry(H, W, F1, pad1, F2, pad2);
    if (C * 9 > ME_DIRECT_MAX_K || F1 * 9 > ME_DIRECT_MAX_K || 16 * C * g.F1pad > ME_DIRECT_MAX_WPK ||
        16 * F1 * g.F2pad > ME_DIRECT_MAX_WPK)
        return 0;
    /* the build each single-stage call would take; AVX2: weights, images and the first stage's
     * outputs within conv_wt_in_range, else 0 (the caller makes the two calls, which then
     * decide) */
    const wino_isa *wi = wino_isa_pick(w1, F1 * C * 9);
    if (!wi || !conv_wt_in_range(w2, F2 * F1 * 9)) return 0;
    const int64_t NB = (N + 7) / 8, slot = wino_chain_slot(C, F1, F2, &g), PQ2 = g.TH2 * g.TW2, CHW = C * H * W;
    const int64_t nth = me_get_num_threads(), smax = NB < ME_CONV_GROUPS ? NB : ME_CONV_GROUPS;
    const int64_t S = nth < smax ? nth : smax;
    int bad = 0;
#pragma omp parallel for num_threads((int)S) schedule(static) if (S > 1)
    for (int64_t s = 0; s < S; s++) {
        float *xi1 = workspace + s * slot, *xi2 = xi1 + C * g.Hp1 * g.Wp1 * 8;
        float *upk1 = xi2 + F1 * g.Hp2 * g.Wp2 * 8, *upk2 = upk1 + 16 * C * g.F1pad;
        float *vb = upk2 + 16 * F1 * g.F2pad, *mb = vb + 16 * (C > F1 ? C : F1) * 8, *yb = mb + 16 * ME_WINO_KB * 8;
        float *z = xi2 + (pad2 * g.Wp2 + pad2) * 8; /* the interior of the second plane */
        wino_pack_weights(w1, upk1, F1, C, g.F1pad);
        wino_pack_weights(w2, upk2, F2, F1, g.F2pad);
        wino_zero_padding8(xi1, C, H, W, pad1, g.Hp1, g.Wp1);
        wino_zero_padding8(xi2, F1, g.H2, g.W2, pad2, g.Hp2, g.Wp2);
        for (int64_t blk = s * NB / S; blk < (s + 1) * NB / S; blk++) {
            const int64_t nimg = N - blk * 8 < 8 ? N - blk * 8 : 8;
            const float *xb = x + blk * 8 * CHW;
            if (!wino_block_ok(xb, nimg, CHW, &bad)) break;
            wi->interleave8(xb, nimg, xi1, C, H, W, pad1, g.Hp1, g.Wp1);
            if (C == 1)
                wi->pool1_images(xi1, upk1, b1, z, F1, g.F1pad, g.Hp1, g.Wp1, g.TH1, g.TW1,
                                 g.Hp2 * g.Wp2 * 8, g.Wp2 * 8, relu1);
            else
                wi->pool_images(xi1, upk1, b1, z, F1, C, g.F1pad, g.Hp1, g.Wp1, g.TH1, g.TW1,
                                g.Hp2 * g.Wp2 * 8, g.Wp2 * 8, relu1, vb, mb);
            if (!wino_block_ok(xi2, 1, F1 * g.Hp2 * g.Wp2 * 8, &bad)) break; /* the first stage's outputs */
            wi->pool_images(xi2, upk2, b2, yb, F2, F1, g.F2pad, g.Hp2, g.Wp2, g.TH2, g.TW2, PQ2 * 8,
                            g.TW2 * 8, relu2, vb, mb);
            wi->deinterleave8(yb, y + blk * 8 * F2 * PQ2, F2 * PQ2, nimg);
        }
    }
    return !bad;
#else
    (void)x; (void)w1; (void)b1; (void)w2; (void)b2; (void)y; (void)relu1; (void)relu2; (void)workspace;
    return 0;
#endif
}
