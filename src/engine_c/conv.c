/* conv.c: 2-D convolution (cross-correlation, as torch.nn.functional.conv2d): the entry points
 * of the forward and the backward, the group geometry of a call, the backward's plan and its
 * per-image steps; the kernels are in the conv_*.c files listed below.
 *
 * x (N,C,H,W), w (F,C,KH,KW), b (F) -> y (N,F,HO,WO); NCHW, float32, C-contiguous.
 * K = C*KH*KW is the GEMM depth, P = HO*WO the number of output pixels of one image.
 *
 * Work split: the batch is cut into G contiguous groups of images, G = min(N, 16) (fewer when
 * the per-group scratch is large, see conv_geometry), a function of the shapes only, never of
 * the thread count. Threads take whole groups (OpenMP, handed out dynamically); inside a group the
 * images are processed in order with the single-threaded SGEMM on per-group buffers small
 * enough to stay in L2. The weight and bias gradients are accumulated per group, then summed
 * over the groups in group order: results are bitwise identical for ANY thread count.
 *
 * Layouts (conv_im2col.c): stride 1 reads "wide" im2col rows from a zero-padded plane
 * (C, Hp, Wp), the output on the wide grid HO x Wp (PW = HO*Wp columns, those with wo >= WO
 * scratch); stride > 1 takes the classic (K, P) im2col. A shallow stride-1 layer
 * (K <= ME_DIRECT_MAX_K) skips im2col: direct convolution on the plane (conv_direct_avx512.c).
 *
 * AVX2 (the AVX2 SGEMM kernel in use): 3x3 pad 1 with at least 8 input and 8 output channels
 * trains by Winograd F(2x2, 3x3) (conv_wino_train_image for the forward and dx, conv_wt_dw_image
 * for dw; an image, or weights, holding a non-finite value or one above 2^40 takes the direct
 * path); other stride-1 forwards and dx are direct kernels on the wide grid
 * (conv_direct_wide_avx2), dw 4x3 blocks of dot products over the valid columns
 * (conv_dw_dot_avx2; 7x7-sized planes keep im2col + SGEMM).
 *
 * Backward, stride 1:
 *  - dw reads the rows of the wide im2col in place from the padded plane (col_rows), no copy,
 *    and reduces each 4x4 block of dot products with one transpose-and-add tree (AVX-512);
 *  - dx is the direct correlation of the padded dy with the flipped, channel-swapped weights
 *    (conv_direct_dx_image when C >= 8 on AVX-512, conv_direct_wide_avx2 when C >= 4 on AVX2),
 *    instead of a (K,F)@(F,PW) GEMM and col2im.
 *
 * Inference, conv + 2x2 max pooling (me_conv2d_pool2_forward) and two such layers in one pass
 * (me_conv2d_pool2_chain_forward): conv_wino_pool.c.
 *
 * Workspace per group slot (floats): K*PW (columns) + F*ldw (wide y / dy rows, ldw = PW +
 * ME_SLACK) + C*Hp*Wp + KW + ME_SLACK (padded plane), or the Winograd scratch if larger; the
 * group's Winograd dw sums (16*F*C rounded up); F*K + F (dw/db partials), PW = HO*Wp;
 * me_conv2d_workspace_size returns G times that plus the AVX2 packed weights
 * (conv_avx2_pack_floats). A thread works in the slot of its team number; the partial sums are
 * per group.
 *
 * The files:
 *   conv.c                the entry points, conv_geometry, the backward's plan (conv_bw_plan),
 *                         the weight gradient's choice of dot products or GEMM (dw_accumulate)
 *   conv_internal.h       what they share (private)
 *   conv_im2col.c         the padded plane, im2col / col2im (wide and classic), im2row / row2im
 *                         and the whole-batch backward of small output planes
 *   conv_direct_avx512.c  AVX-512 direct kernels (forward, dx, conv + pool), the weight packing
 *   conv_direct_avx2.c    AVX2 + FMA direct kernels on the wide grid, the 4x3 dot-product dw
 *   conv_wino_pool.c      inference conv + 2x2 max pool (Winograd F(2x2, 3x3) or direct) and the
 *                         two-stage chain; its kernels in conv_wino_pool.h, built once per ISA
 *   conv_wino_train.c     AVX2 Winograd F(2x2, 3x3) training kernels (forward, dx, dw)
 *
 * Which path runs for which shape, and the measured figures: docs/performance.md, "Kernel choices".
 */
#include "engine.h"
#include "row_sum.h"
#include "dot4x4_avx512.h"
#include "conv_internal.h"

#include <string.h>

#define ME_CONV_MIN_GROUPS 4             /* at least this many (when N allows) */
#define ME_CONV_BUDGET (8 * 1024 * 1024) /* floats of scratch above which fewer groups are used */
#define ME_WT_DU_BUDGET (1024 * 1024) /* floats of Winograd dw sums (all groups) above which fewer groups */

/* The groups and the slot layout of a call (see "Work split" and "Workspace" above), from the
 * shapes only. */
conv_geom conv_geometry(int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                        int64_t KH, int64_t KW, int64_t stride, int64_t pad) {
    conv_geom g;
    g.HO = (H + 2 * pad - KH) / stride + 1;
    g.WO = (W + 2 * pad - KW) / stride + 1;
    g.Hp = H + 2 * pad;
    g.Wp = W + 2 * pad;
    g.K = C * KH * KW;
    g.P = g.HO * g.WO;
    g.PW = g.HO * g.Wp;
    g.ldw = g.PW + ME_SLACK; /* row stride of the wide output / dy rows */
    g.plane = C * g.Hp * g.Wp + KW + ME_SLACK;
    /* the slot: col (K*PW), wide y / dy (F*ldw), plane; or the Winograd scratch from its start;
     * then the Winograd dw sums dU at g.wtu; then the dw / db partial sums at g.part */
    g.wtu = g.K * g.PW + F * g.ldw + g.plane;
    const int64_t wt = conv_wt_slot_floats(C, H, W, F, KH, KW, stride, pad);
    if (wt > g.wtu) g.wtu = wt;
    g.part = g.wtu;
    if (conv_wt_shape_applies(C, F, KH, KW, stride, pad)) {
        int64_t scr, du;
        conv_wt_dw_geometry(C, H, W, F, &scr, &du);
        if (scr > g.wtu) g.wtu = scr;
        g.part = g.wtu + du;
    }
    g.per_group = g.part + F * g.K + F;
    int64_t G = ME_CONV_BUDGET / (g.per_group > 0 ? g.per_group : 1);
    if (G > ME_CONV_GROUPS) G = ME_CONV_GROUPS;
    if (g.part > g.wtu && G > ME_WT_DU_BUDGET / (g.part - g.wtu)) /* the dU sums are summed over the groups */
        G = ME_WT_DU_BUDGET / (g.part - g.wtu);
    if (G < ME_CONV_MIN_GROUPS) G = ME_CONV_MIN_GROUPS;
    if (G > N) G = N;
    g.G = G;
    return g;
}

/* floats of scratch me_conv2d_forward/backward/pool2_forward need; 0 for invalid shapes */
int64_t me_conv2d_workspace_size(int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                                 int64_t KH, int64_t KW, int64_t stride, int64_t pad) {
    if (N <= 0 || C <= 0 || F <= 0 || KH <= 0 || KW <= 0 || stride <= 0 || pad < 0) return 0;
    if (H + 2 * pad < KH || W + 2 * pad < KW) return 0;
    const conv_geom g = conv_geometry(N, C, H, W, F, KH, KW, stride, pad);
    int64_t need = g.G * g.per_group + conv_avx2_pack_floats(C, F, KH, KW);
    const int64_t batched = conv_batched_floats(N, g.K, g.P, F);
    if (batched > need) need = batched;
    if (conv_wino_applies(C, F, KH, KW, stride, H, W, pad)) { /* the Winograd inference's scratch */
        const int64_t tiles = g.G * conv_wino_group_stride(&g, C);
        const int64_t images =
            conv_wino8_slots(C, N) * conv_wino8_slot(C, F, g.Hp, g.Wp, g.HO / 2, g.WO / 2);
        if (tiles > need) need = tiles;
        if (images > need) need = images;
    }
    return need;
}

/* Weight gradient.
 * dy (F,P), col (K,P) -> dw (F,K) = beta * dw + dy @ col^T: a small output and a long
 * reduction, the shape a packed GEMM handles worst (its 14x32 register tile is mostly empty
 * and B must be packed transposed). With AVX-512 it is computed as 4x4 blocks of dot products
 * along P (16 zmm accumulators, 8 loads per 16 FMAs, masked tail); otherwise by me_sgemm_st. The
 * choice follows the SGEMM micro-kernel in use (me_gemm_kernel_id), so forcing the generic
 * kernel also disables this one. */
#define ME_D2_DOT_MIN_P 128 /* AVX2: shorter dw dot products (7x7 planes) take im2col + SGEMM */

/* Is a dot-product kernel used for dw over P columns (then no im2col is needed)? AVX2's runs on
 * the wide layout only (its rows readable 8 floats past each output row), and shorter dot
 * products than ME_D2_DOT_MIN_P (7x7 planes) keep im2col + SGEMM. */
static int dw_use_dot(int wide, int64_t P) {
#if ME_CONV_X86
    const int k = me_gemm_kernel_id();
    return k == 2 || (k == 1 && wide && P >= ME_D2_DOT_MIN_P);
#else
    (void)wide; (void)P;
    return 0;
#endif
}

/* dw (F,K) (+)= dy (F,P; row stride ldd) @ col^T, col's rows given by cr; col_mat: the same rows
 * as one (K,P) matrix (needed only when !dw_use_dot(wide, P), may be NULL otherwise). wide: P is
 * the wide grid HO x Wp of which the first WO columns of each row count. */
static void dw_accumulate(int64_t F, int64_t K, int64_t P, const float *dy, int64_t ldd, const col_rows *cr,
                          const float *col_mat, float *dw, int beta_one, int wide, int64_t HO, int64_t WO,
                          int64_t Wp) {
#if ME_CONV_X86
    if (dw_use_dot(wide, P)) {
        if (me_gemm_kernel_id() == 2) {
            /* the wide grid's scratch columns hold dy = 0 against shifted pixels: summed only
             * when those are finite (0 * Inf is NaN), which keeps whole vectors on short rows */
            if (wide && !conv_wt_in_range(cr->base, cr->plane))
                me_dot4x4_avx512(F, K, HO, WO, Wp, dy, ldd, cr, 1.0f, beta_one ? 1.0f : 0.0f, dw, K);
            else
                me_dot4x4_avx512(F, K, 1, P, P, dy, ldd, cr, 1.0f, beta_one ? 1.0f : 0.0f, dw, K);
        } else {
            conv_dw_dot_avx2(F, K, HO, WO, Wp, dy, ldd, cr, dw, beta_one);
        }
        return;
    }
#else
    (void)cr; (void)wide; (void)HO; (void)WO; (void)Wp;
#endif
    me_sgemm_st(0, 1, F, K, P, 1.0f, dy, ldd, col_mat, P, beta_one ? 1.0f : 0.0f, dw, K);
}

/* x (N,C,H,W), w (F,C,KH,KW), b (F) or NULL (no bias) -> y (N,F,HO,WO); workspace >=
 * me_conv2d_workspace_size. A 1x1 stride-1 unpadded convolution is one SGEMM per image on the
 * NCHW input (no padded copy, no im2col; its backward's dx likewise); stride > 1 takes the
 * classic im2col. */
void me_conv2d_forward(const float *x, const float *w, const float *b, float *y,
                       int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                       int64_t KH, int64_t KW, int64_t stride, int64_t pad, float *workspace) {
    me_conv2d_forward_act(x, w, b, y, N, C, H, W, F, KH, KW, stride, pad, ME_ACT_IDENTITY, 0.0f, workspace);
}

/* the activation of the forward epilogues: act is ME_ACT_IDENTITY, ME_ACT_RELU (max(v, 0)) or
 * ME_ACT_LEAKY_RELU (v < 0 ? slope * v : v); NaN stays NaN */
static inline float conv_act(float v, int act, float slope) {
    if (act == ME_ACT_RELU) return v < 0.0f ? 0.0f : v;
    if (act == ME_ACT_LEAKY_RELU) return v < 0.0f ? slope * v : v;
    return v;
}

/* y (F, n), rows ldy apart = w (F,K) @ cols (K, n), rows ldc apart, + b (F) or NULL, then act:
 * the bias written first and the GEMM adding to it (beta 1), the act over the fresh output */
static void gemm_bias_act(const float *w, const float *b, const float *cols, int64_t ldc, float *y, int64_t ldy,
                          int64_t F, int64_t n, int64_t K, int act, float slope) {
    if (b)
        for (int64_t f = 0; f < F; f++)
            for (int64_t p = 0; p < n; p++) y[f * ldy + p] = b[f];
    me_sgemm_st(0, 0, F, n, K, 1.0f, w, K, cols, ldc, b ? 1.0f : 0.0f, y, ldy);
    if (act != ME_ACT_IDENTITY)
        for (int64_t f = 0; f < F; f++)
            for (int64_t p = 0; p < n; p++) y[f * ldy + p] = conv_act(y[f * ldy + p], act, slope);
}

/* as me_conv2d_forward, then the activation act (ME_ACT_*, slope: the leaky ReLU's negative
 * slope) fused into the store (applied before it) */
void me_conv2d_forward_act(const float *x, const float *w, const float *b, float *y,
                           int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                           int64_t KH, int64_t KW, int64_t stride, int64_t pad, int act,
                           float slope, float *workspace) {
    const conv_geom g = conv_geometry(N, C, H, W, F, KH, KW, stride, pad);
    const int64_t G = g.G, K = g.K, P = g.P, PW = g.PW, HO = g.HO, WO = g.WO, Hp = g.Hp, Wp = g.Wp;
    if (G <= 0) return;
    const int wide = stride == 1; /* the wide-row layout whenever it applies */
    const int direct = conv_use_direct(F, K, stride);
    /* a 1x1 stride-1 unpadded convolution is one GEMM on the NCHW image: y_n (F,P) = w (F,C) @ x_n (C,P) */
    const int pointwise = KH == 1 && KW == 1 && stride == 1 && pad == 0;
    const int64_t NF = F <= 8 ? 8 : 16, ldw = g.ldw;
    /* AVX2: the direct kernel on the wide grid, its weights packed once (after the groups) */
    const int d2 = wide && !pointwise && conv_use_avx2();
    /* AVX2, 3x3 pad 1: Winograd (conv_wino_train_image), its transformed weights packed once */
    const int wt = !direct && conv_use_wt(C, F, H, W, KH, KW, stride, pad) && conv_wt_in_range(w, F * K);
    if (pointwise && P >= ME_POINTWISE_MIN_P && !(direct && K < 32)) {
        /* one GEMM per (image, panel of PB output pixels) on the NCHW plane itself, no copy:
         * y_n[:, p0:p1] (F,PB) = w (F,C) @ x_n[:, p0:p1]; the bias before and the act after,
         * while the panel is in L2 */
        int64_t PB = ME_POINTWISE_PANEL / F / 16 * 16;
        if (PB < 64) PB = 64;
        if (PB > P) PB = P;
        const int64_t nb = (P + PB - 1) / PB;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(dynamic, 1) if (N * nb > 1)
        for (int64_t t = 0; t < N * nb; t++) {
            const int64_t n = t / nb, p0 = (t % nb) * PB, pw = P - p0 < PB ? P - p0 : PB;
            gemm_bias_act(w, b, x + n * C * H * W + p0, P, y + n * F * P + p0, P, F, pw, K, act, slope);
        }
        return;
    }
    if (!direct && !wt && conv_batched_floats(N, K, P, F) > 0) {
        /* a small output plane: the whole batch as one GEMM over N*P rows (see im2row), then
         * transposed into y with the bias and act */
        const int64_t M = N * P;
        float *rows = workspace, *yT = workspace + M * K;
        conv_im2row(x, rows, N, C, H, W, KH, KW, stride, pad, HO, WO);
        me_sgemm(0, 1, M, F, K, 1.0f, rows, K, w, K, 0.0f, yT, F);
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N > 1)
        for (int64_t n = 0; n < N; n++)
            for (int64_t f = 0; f < F; f++) {
                const float bf = b ? b[f] : 0.0f;
                const float *src = yT + n * P * F + f;
                float *dst = y + (n * F + f) * P;
                for (int64_t p = 0; p < P; p++) dst[p] = conv_act(src[p * F] + bf, act, slope);
            }
        return;
    }
    const int64_t Fpad = (F + 3) / 4 * 4;
    float *pk = workspace + G * g.per_group;
    if (wt)
        conv_wino_pack_weights_par(w, pk, F, C, Fpad);
    else if (d2)
        conv_pack_direct_weights(w, pk, F, K, ME_D2_NF);
#pragma omp parallel for num_threads(conv_team(G)) schedule(dynamic, 1)
    for (int64_t gi = 0; gi < G; gi++) {
        float *col = workspace + conv_slot() * g.per_group; /* K*PW, the thread's slot */
        float *yw = col + K * PW;                             /* F*ldw */
        float *xp = yw + F * ldw;                             /* plane */
        const int64_t n0 = gi * N / G, n1 = (gi + 1) * N / G;
#if ME_CONV_X86
        if (direct) {
            float wpk[ME_DIRECT_MAX_WPK] __attribute__((aligned(64)));
            conv_pack_direct_weights(w, wpk, F, K, NF);
            for (int64_t n = n0; n < n1; n++) {
                conv_pad_image(x + n * C * H * W, xp, C, H, W, pad, Hp, Wp, KW);
                if (NF == 8)
                    conv_direct_image_8(xp, wpk, b, y + n * F * P, F, C, KH, KW, Hp, Wp, HO, WO, act, slope);
                else
                    conv_direct_image_16(xp, wpk, b, y + n * F * P, F, C, KH, KW, Hp, Wp, HO, WO, act, slope);
            }
            continue;
        }
#else
        (void)direct; (void)NF;
#endif
        for (int64_t n = n0; n < n1; n++) {
            const float *xn = x + n * C * H * W;
            float *yn = y + n * F * P;
#if ME_CONV_X86
            /* an image out of Winograd's range (conv_wt_in_range) takes im2col + SGEMM */
            if (wt && conv_wino_train_image(xn, C, H, W, pk, Fpad, F, b, act, slope, yn, col)) continue;
#endif
            if (wide && !pointwise) {
                conv_pad_image(xn, xp, C, H, W, pad, Hp, Wp, KW);
#if ME_CONV_X86
                if (d2 && !wt)
                    conv_direct_wide_avx2(xp, pk, yw, ldw, F, C, KH, KW, Hp, Wp, HO, WO);
                else
#endif
                {
                    /* yw (F,PW) = w (F,K) @ col (K,PW) */
                    conv_im2col_wide(xp, col, C, KH, KW, Hp, Wp, PW);
                    me_sgemm_st(0, 0, F, PW, K, 1.0f, w, K, col, PW, 0.0f, yw, ldw);
                }
                /* keep the WO valid columns of each wide row, add the bias, apply act */
                for (int64_t f = 0; f < F; f++) {
                    const float bf = b ? b[f] : 0.0f;
                    for (int64_t ho = 0; ho < HO; ho++) {
                        const float *src = yw + f * ldw + ho * Wp;
                        float *dst = yn + f * P + ho * WO;
                        if (act == ME_ACT_IDENTITY)
                            for (int64_t wo = 0; wo < WO; wo++) dst[wo] = src[wo] + bf;
                        else
                            for (int64_t wo = 0; wo < WO; wo++) dst[wo] = conv_act(src[wo] + bf, act, slope);
                    }
                }
            } else {
                if (!pointwise) conv_im2col(xn, col, C, H, W, KH, KW, stride, pad, HO, WO);
                /* y_n (F,P) = w (F,K) @ col (K,P) (a 1x1 image is its own (C, P) column matrix) */
                gemm_bias_act(w, b, pointwise ? xn : col, P, yn, P, F, P, K, act, slope);
            }
        }
    }
}

/* dy_n (F, HO, WO) -> dyw (F, ldw): on the wide grid HO x Wp, zero in the scratch columns and
 * the slack */
static void fill_dy_wide(const float *dyn, float *dyw, int64_t F, int64_t HO, int64_t WO, int64_t Wp, int64_t PW,
                         int64_t ldw) {
    for (int64_t f = 0; f < F; f++) {
        for (int64_t ho = 0; ho < HO; ho++) {
            float *dst = dyw + f * ldw + ho * Wp;
            const float *src = dyn + f * HO * WO + ho * WO;
            for (int64_t wo = 0; wo < WO; wo++) dst[wo] = src[wo];
            for (int64_t wo = WO; wo < Wp; wo++) dst[wo] = 0.0f;
        }
        for (int64_t q = PW; q < ldw; q++) dyw[f * ldw + q] = 0.0f;
    }
}

/* The plan of one backward call, decided on the shapes (and the weights' range) only:
 * which kernel computes each image's dw and dx. Named after the functions that run them. */
typedef struct {
    conv_geom g;
    int64_t N, C, H, W, F, KH, KW, stride, pad;
    int64_t tpad, Hpt, Wpt, ldx, Cpad; /* the direct dx's padded dy plane and dx grid */
    int wide;      /* stride 1: the wide-row layout (conv_pad_image, conv_im2col_wide) */
    int pointwise; /* 1x1 unpadded: dx = w^T @ dy straight into dx */
    int batched;   /* small planes: conv_backward_batched for the whole call */
    int wtw, wtx;  /* AVX2 3x3: dw by conv_wt_dw_image, dx by conv_wino_train_image */
    int dxd, d2x;  /* dx by conv_direct_dx_image (AVX-512) / conv_direct_wide_avx2 (AVX2) */
} conv_bw_plan;

static conv_bw_plan conv_bw_plan_make(const float *w, int has_dx, int has_dw, int64_t N, int64_t C, int64_t H,
                                      int64_t W, int64_t F, int64_t KH, int64_t KW, int64_t stride, int64_t pad) {
    conv_bw_plan p = {conv_geometry(N, C, H, W, F, KH, KW, stride, pad), N, C, H, W, F, KH, KW, stride, pad};
    const conv_geom *g = &p.g;
    p.wide = stride == 1;
    p.pointwise = KH == 1 && KW == 1 && pad == 0;
    p.tpad = KH - 1 - pad;
    p.Hpt = g->HO + 2 * p.tpad;
    p.Wpt = g->WO + 2 * p.tpad;
    p.ldx = H * p.Wpt + ME_SLACK;
    p.Cpad = (C + 3) / 4 * 4;
    /* the direct dx's padded dy plane reuses the col and dyw scratch (dyw is dead once dw is done) */
    const int dyp_fits = F * p.Hpt * p.Wpt + KW + ME_SLACK <= g->K * g->PW + F * g->ldw;
    p.dxd = has_dx && p.wide && C >= 8 && KH == KW && p.tpad >= 0 && conv_use_direct(C, F * KH * KW, 1) && dyp_fits;
    p.wtx = has_dx && conv_use_wt(F, C, g->HO, g->WO, KH, KW, stride, pad) &&
            conv_wt_in_range(w, F * g->K);
    p.wtw = has_dw && conv_use_wt(C, F, H, W, KH, KW, stride, pad);
    p.d2x = !p.wtx && has_dx && p.wide && !p.pointwise && C >= ME_D2_NF && KH == KW && p.tpad >= 0 && dyp_fits &&
            C * p.ldx <= g->plane && conv_use_avx2();
    p.batched = !p.wtx && !p.wtw && conv_batched_floats(N, g->K, g->P, F) > 0;
    return p;
}

/* A group's scratch: the thread slot's (col, dyw, xp; dyp over col) and the group's own partial
 * sums (dwg, dbg, dU), summed in group order by conv_bw_reduce. */
typedef struct {
    float *col, *dyw, *xp, *dyp, *dwg, *dbg, *dU;
    int du_used, dwg_used; /* have dU / dwg been written */
} conv_bw_slot;

/* dw of image n on the wide grid: Winograd (wtw), else the dot products / GEMM over the wide
 * im2col rows read in place from the padded plane. Returns whether dyw holds dy on the grid. */
static int conv_bw_dw_wide(const conv_bw_plan *p, conv_bw_slot *s, const float *xn, const float *dyn) {
    const conv_geom *g = &p->g;
#if ME_CONV_X86
    if (p->wtw && conv_wt_dw_image(xn, dyn, p->C, p->H, p->W, p->F, s->dU, !s->du_used, s->col)) {
        s->du_used = 1;
        return 0;
    }
#endif
    fill_dy_wide(dyn, s->dyw, p->F, g->HO, g->WO, g->Wp, g->PW, g->ldw);
    conv_pad_image(xn, s->xp, p->C, p->H, p->W, p->pad, g->Hp, g->Wp, p->KW);
    const col_rows cr = {s->xp, p->KH * p->KW, p->KW, g->Hp * g->Wp, g->Wp, p->C * g->Hp * g->Wp};
    if (!dw_use_dot(1, g->PW)) {
        /* the columns' scratch entries (wo >= WO) zeroed: dy is zero there, but 0 * a NaN or
         * Inf pixel of a neighbouring tap would not be */
        conv_im2col_wide(s->xp, s->col, p->C, p->KH, p->KW, g->Hp, g->Wp, g->PW);
        if (g->Wp > g->WO)
            for (int64_t r = 0; r < g->K * g->HO; r++)
                memset(s->col + r * g->Wp + g->WO, 0, (size_t)(g->Wp - g->WO) * sizeof(float));
    }
    dw_accumulate(p->F, g->K, g->PW, s->dyw, g->ldw, &cr, s->col, s->dwg, s->dwg_used, 1, g->HO, g->WO, g->Wp);
    s->dwg_used = 1;
    return 1;
}

/* dx of image n by a direct kernel, when the plan has one: Winograd (wtx; a dy out of its
 * range declines), the AVX2 direct kernel on dx's wide grid (d2x), or the AVX-512 direct
 * correlation (dxd), each of dy padded by KH-1-pad with the flipped, channel-swapped weights
 * (pk: packed once per call; wtpk: per group). Returns whether it wrote dx_n. */
static int conv_bw_dx_direct(const conv_bw_plan *p, conv_bw_slot *s, const float *pk, const float *wtpk,
                             const float *dyn, float *dxn) {
#if ME_CONV_X86
    const conv_geom *g = &p->g;
    if (p->wtx && conv_wino_train_image(dyn, p->F, g->HO, g->WO, pk, p->Cpad, p->C, NULL, ME_ACT_IDENTITY, 0.0f,
                                        dxn, s->col))
        return 1;
    if (p->d2x) { /* on dx's wide grid, in the plane (free once dw is done), then cropped */
        conv_pad_image(dyn, s->dyp, p->F, g->HO, g->WO, p->tpad, p->Hpt, p->Wpt, p->KW);
        conv_direct_wide_avx2(s->dyp, pk, s->xp, p->ldx, p->C, p->F, p->KH, p->KW, p->Hpt, p->Wpt, p->H, p->W);
        for (int64_t c = 0; c < p->C; c++)
            for (int64_t h = 0; h < p->H; h++)
                memcpy(dxn + (c * p->H + h) * p->W, s->xp + c * p->ldx + h * p->Wpt, (size_t)p->W * sizeof(float));
        return 1;
    }
    if (p->dxd) {
        conv_pad_image(dyn, s->dyp, p->F, g->HO, g->WO, p->tpad, p->Hpt, p->Wpt, p->KW);
        conv_direct_dx_image(s->dyp, wtpk, dxn, p->C, p->F, p->KH, p->KW, p->Hpt, p->Wpt, p->H, p->W);
        return 1;
    }
#else
    (void)p; (void)s; (void)pk; (void)wtpk; (void)dyn; (void)dxn;
#endif
    return 0;
}

/* dx of image n on the wide grid by GEMM: w^T @ dy straight into dx (pointwise), else dcol =
 * w^T @ dyw scattered into the padded plane (conv_col2im_wide) and cropped. */
static void conv_bw_dx_gemm_wide(const conv_bw_plan *p, conv_bw_slot *s, const float *w, const float *dyn,
                                 float *dxn, int dyw_ready) {
    const conv_geom *g = &p->g;
    if (p->pointwise) {
        me_sgemm_st(1, 0, g->K, g->P, p->F, 1.0f, w, g->K, dyn, g->P, 0.0f, dxn, g->P);
        return;
    }
    if (!dyw_ready) fill_dy_wide(dyn, s->dyw, p->F, g->HO, g->WO, g->Wp, g->PW, g->ldw);
    me_sgemm_st(1, 0, g->K, g->PW, p->F, 1.0f, w, g->K, s->dyw, g->ldw, 0.0f, s->col, g->PW);
    conv_col2im_wide(s->col, s->xp, p->C, p->KH, p->KW, g->Hp, g->Wp, g->PW);
    for (int64_t c = 0; c < p->C; c++)
        for (int64_t h = 0; h < p->H; h++)
            memcpy(dxn + (c * p->H + h) * p->W, s->xp + (c * g->Hp + h + p->pad) * g->Wp + p->pad,
                   (size_t)p->W * sizeof(float));
}

/* stride > 1: dw over the classic im2col, dx by dcol = w^T @ dy_n and col2im. */
static void conv_bw_image_strided(const conv_bw_plan *p, conv_bw_slot *s, const float *w, const float *xn,
                                  const float *dyn, float *dxn, int want_dw) {
    const conv_geom *g = &p->g;
    if (want_dw) {
        conv_im2col(xn, s->col, p->C, p->H, p->W, p->KH, p->KW, p->stride, p->pad, g->HO, g->WO);
        const col_rows cr = {s->col, g->K, 1, 0, g->P, g->K * g->P};
        dw_accumulate(p->F, g->K, g->P, dyn, g->P, &cr, s->col, s->dwg, s->dwg_used, 0, g->HO, g->WO, g->Wp);
        s->dwg_used = 1;
    }
    if (dxn) {
        me_sgemm_st(1, 0, g->K, g->P, p->F, 1.0f, w, g->K, dyn, g->P, 0.0f, s->col, g->P);
        conv_col2im(s->col, dxn, p->C, p->H, p->W, p->KH, p->KW, p->stride, p->pad, g->HO, g->WO);
    }
}

/* The images of group gi; returns what its partial sums hold (1: dwg, 2: dU). */
static int conv_bw_group(const conv_bw_plan *p, int64_t gi, const float *x, const float *w, const float *dy,
                         float *dx, int want_dw, int want_db, const float *pk, float *workspace) {
    const conv_geom *g = &p->g;
    float *col = workspace + conv_slot() * g->per_group; /* the thread slot's, warm in its L2 */
    float *part = workspace + gi * g->per_group;          /* the group's own partial sums */
    conv_bw_slot s = {col, col + g->K * g->PW, col + g->K * g->PW + p->F * g->ldw, col,
                      part + g->part, part + g->part + p->F * g->K, part + g->wtu, 0, 0};
    const int64_t n0 = gi * p->N / g->G, n1 = (gi + 1) * p->N / g->G;
    const float *wtpk = NULL;
#if ME_CONV_X86
    float wtpk_buf[ME_DIRECT_MAX_WPK] __attribute__((aligned(64)));
    if (p->dxd) conv_pack_direct_weights_flipped(w, wtpk_buf, p->F, p->C, p->KH, p->KW, p->C <= 8 ? 8 : 16);
    wtpk = wtpk_buf;
#endif
    for (int64_t n = n0; n < n1; n++) {
        const float *xn = x + n * p->C * p->H * p->W;
        const float *dyn = dy + n * p->F * g->P;
        float *dxn = dx ? dx + n * p->C * p->H * p->W : NULL;
        if (want_db)
            for (int64_t f = 0; f < p->F; f++) {
                const float sum = me_row_sum(dyn + f * g->P, g->P);
                s.dbg[f] = (n == n0) ? sum : s.dbg[f] + sum;
            }
        if (!p->wide) {
            conv_bw_image_strided(p, &s, w, xn, dyn, dxn, want_dw);
            continue;
        }
        const int dyw_ready = want_dw ? conv_bw_dw_wide(p, &s, xn, dyn) : 0;
        if (dxn && !conv_bw_dx_direct(p, &s, pk, wtpk, dyn, dxn)) conv_bw_dx_gemm_wide(p, &s, w, dyn, dxn, dyw_ready);
    }
    return (s.dwg_used ? 1 : 0) | (s.du_used ? 2 : 0);
}

/* The groups' partial sums into dw and db, in group order (deterministic for any thread
 * count); the Winograd dw sums added up into the first group's, then transformed once. */
static void conv_bw_reduce(const conv_bw_plan *p, const int *gkind, float *dw, float *db, int accumulate,
                           float *workspace) {
    const conv_geom *g = &p->g;
    const int nthreads = me_get_num_threads();
    const int64_t G = g->G, F = p->F, FK = p->F * g->K;
    if (dw) {
#pragma omp parallel for num_threads(nthreads) schedule(static) if (FK >= 4096)
        for (int64_t e = 0; e < FK; e++) {
            float sum = accumulate ? dw[e] : 0.0f;
            for (int64_t gi = 0; gi < G; gi++)
                if (gkind[gi] & 1) sum += workspace[gi * g->per_group + g->part + e];
            dw[e] = sum;
        }
#if ME_CONV_X86
        int64_t first = -1;
        for (int64_t gi = 0; gi < G && first < 0; gi++)
            if (gkind[gi] & 2) first = gi;
        if (first >= 0) {
            float *du0 = workspace + first * g->per_group + g->wtu;
            const int64_t nu = 16 * ((F + 3) / 4 * 4) * ((p->C + 7) / 8 * 8);
#pragma omp parallel for num_threads(nthreads) schedule(static) if (nu >= 4096)
            for (int64_t e = 0; e < nu; e++) {
                float sum = du0[e];
                for (int64_t gi = first + 1; gi < G; gi++)
                    if (gkind[gi] & 2) sum += workspace[gi * g->per_group + g->wtu + e];
                du0[e] = sum;
            }
            conv_wt_dw_finish(du0, F, p->C, dw, 1);
        }
#endif
    }
    if (db)
        for (int64_t f = 0; f < F; f++) {
            float sum = accumulate ? db[f] : 0.0f;
            for (int64_t gi = 0; gi < G; gi++) sum += workspace[gi * g->per_group + g->part + F * g->K + f];
            db[f] = sum;
        }
}

/* dy (N,F,HO,WO) -> dx (N,C,H,W) | NULL (overwritten), dw (F,C,KH,KW) | NULL, db (F) | NULL:
 * the plan's kernels per image over G groups of images, then the groups' sums in order. */
void me_conv2d_backward(const float *x, const float *w, const float *dy,
                        float *dx, float *dw, float *db,
                        int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                        int64_t KH, int64_t KW, int64_t stride, int64_t pad,
                        int accumulate, float *workspace) {
    const conv_bw_plan p = conv_bw_plan_make(w, dx != NULL, dw != NULL, N, C, H, W, F, KH, KW, stride, pad);
    const int64_t G = p.g.G;
    if (G <= 0) {
        if (!accumulate) {
            if (dw) memset(dw, 0, (size_t)(F * C * KH * KW) * sizeof(float));
            if (db) memset(db, 0, (size_t)F * sizeof(float));
        }
        return;
    }
    if (p.batched) {
        conv_backward_batched(x, w, dy, dx, dw, db, N, C, H, W, F, KH, KW, stride, pad, p.g.HO, p.g.WO, accumulate,
                              workspace);
        return;
    }
    float *pk = workspace + G * p.g.per_group; /* the flipped weights of the direct / Winograd dx */
#if ME_CONV_X86
    if (p.wtx) conv_wino_pack_weights_flipped(w, pk, F, C, p.Cpad);
    if (p.d2x) conv_pack_direct_weights_flipped(w, pk, F, C, KH, KW, ME_D2_NF);
#endif
    int gkind[ME_CONV_GROUPS];
    if (dw || dx || db) {
#pragma omp parallel for num_threads(conv_team(G)) schedule(dynamic, 1)
        for (int64_t gi = 0; gi < G; gi++) gkind[gi] = conv_bw_group(&p, gi, x, w, dy, dx, dw != NULL, db != NULL,
                                                                     pk, workspace);
    }
    conv_bw_reduce(&p, gkind, dw, db, accumulate, workspace);
}
