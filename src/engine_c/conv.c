/* conv.c: 2-D convolution (cross-correlation, as torch.nn.functional.conv2d).
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
 * Two im2col layouts:
 *  - stride 1 ("wide" rows): the image is copied once into a zero-padded plane (C, Hp, Wp),
 *    Hp = H + 2*pad, Wp = W + 2*pad. On the wide output grid q = ho*Wp + wo (wo < Wp, the
 *    columns wo >= WO are scratch), every im2col row (c,i,j) is ONE contiguous slice of that
 *    plane starting at c*Hp*Wp + i*Wp + j, so im2col is K memcpy's of PW = HO*Wp floats and
 *    col2im is K contiguous vector adds. The GEMMs run on PW >= P columns (Wp/WO more work:
 *    16/14 for 3x3 pad 1 on 14x14) and the output is compacted (+ bias) afterwards; in the
 *    backward the scratch columns of dy are zero, so they contribute nothing.
 *  - stride > 1: the classic (K, P) im2col with zero taps outside the image.
 * A shallow stride-1 layer (K <= ME_DIRECT_MAX_K) skips im2col: direct convolution on the plane.
 *
 * Inference, conv + 2x2 max pooling (me_conv2d_pool2_forward): the direct kernel, or for 3x3
 * stride 1 Winograd F(2x2, 3x3) (wino_pool_tiles / wino_pool_images, wino1_pool_tiles). Two such
 * layers in a row (me_conv2d_pool2_chain_forward) run in one pass over blocks of 8 images, the
 * first layer's output written straight into the second's input plane. The Winograd pooling
 * kernels (conv_wino_pool.h) are built for AVX-512VL and for AVX2 + FMA, with the same bits; both
 * leave a call holding a value out of wt_in_range to the paths below.
 *
 * AVX2 (the AVX2 SGEMM kernel in use): 3x3 pad 1 with at least 8 input and 8 output channels
 * trains by Winograd F(2x2, 3x3) (wino_train_image for the forward and dx, wt_dw_image for dw;
 * an image, or weights, holding a non-finite value or one above 2^40 takes the direct path);
 * other stride-1 forwards and dx are direct kernels on the wide grid (direct_wide_avx2), dw 4x3
 * blocks of dot products over the valid columns (dw_dot_avx2; 7x7-sized planes keep im2col +
 * SGEMM).
 *
 * Backward, stride 1:
 *  - dw reads the rows of the wide im2col in place from the padded plane (col_rows), no copy,
 *    and reduces each 4x4 block of dot products with one transpose-and-add tree (AVX-512);
 *  - dx is the direct correlation of the padded dy with the flipped, channel-swapped weights
 *    (direct_dx_image when C >= 8 on AVX-512, direct_wide_avx2 when C >= 4 on AVX2), instead of
 *    a (K,F)@(F,PW) GEMM and col2im.
 *
 * Workspace per group slot (floats): K*PW (columns) + F*ldw (wide y / dy rows, ldw = PW +
 * ME_SLACK) + C*Hp*Wp + KW + ME_SLACK (padded plane), or the Winograd scratch if larger; the
 * group's Winograd dw sums (16*F*C rounded up); F*K + F (dw/db partials), PW = HO*Wp;
 * me_conv2d_workspace_size returns G times that plus the AVX2 packed weights (avx2_pack_floats).
 * A thread works in the slot of its team number; the partial sums are per group.
 *
 * Why these paths, with their measurements: docs/performance.md, "Engine changes, measured".
 */
#include "engine.h"
#include "row_sum.h"
#include "dot4x4_avx512.h"
#include "simd_internal.h"

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define ME_CONV_X86 1
#include <immintrin.h>
#else
#define ME_CONV_X86 0
#endif

#define ME_CONV_GROUPS 16                /* at most this many image groups */
#define ME_CONV_MIN_GROUPS 4             /* at least this many (when N allows) */
#define ME_CONV_BUDGET (8 * 1024 * 1024) /* floats of scratch above which fewer groups are used */
#define ME_WT_DU_BUDGET (1024 * 1024) /* floats of Winograd dw sums (all groups) above which fewer groups */

/* Weight gradient.
 * dy (F,P), col (K,P) -> dw (F,K) = beta * dw + dy @ col^T: a small output and a long
 * reduction, the shape a packed GEMM handles worst (its 14x32 register tile is mostly empty
 * and B must be packed transposed). With AVX-512 it is computed as 4x4 blocks of dot products
 * along P (16 zmm accumulators, 8 loads per 16 FMAs, masked tail); otherwise by me_sgemm_st. The
 * choice follows the SGEMM micro-kernel in use (me_gemm_kernel_id), so forcing the generic
 * kernel also disables this one. */
static int wt_in_range(const float *x, int64_t n);

#if ME_CONV_X86
static void dw_dot_avx2(int64_t F, int64_t K, int64_t HO, int64_t WO, int64_t Wp, const float *dy, int64_t ldd,
                        const col_rows *cr, float *dw, int beta_one);
#endif

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
            if (wide && !wt_in_range(cr->base, cr->plane))
                me_dot4x4_avx512(F, K, HO, WO, Wp, dy, ldd, cr, 1.0f, beta_one ? 1.0f : 0.0f, dw, K);
            else
                me_dot4x4_avx512(F, K, 1, P, P, dy, ldd, cr, 1.0f, beta_one ? 1.0f : 0.0f, dw, K);
        } else {
            dw_dot_avx2(F, K, HO, WO, Wp, dy, ldd, cr, dw, beta_one);
        }
        return;
    }
#else
    (void)cr; (void)wide; (void)HO; (void)WO; (void)Wp;
#endif
    me_sgemm_st(0, 1, F, K, P, 1.0f, dy, ldd, col_mat, P, beta_one ? 1.0f : 0.0f, dw, K);
}

/* floats of zeroed slack after a padded plane and after each wide output row: the AVX2 kernels
 * read and write whole 8-float vectors past the last valid position */
#define ME_SLACK 8
#define ME_D2_NF 4 /* AVX2 direct kernels: filters per register block */
#define ME_D2_NV 3 /* AVX2 direct kernels: 8-float output vectors per register block */
#define ME_D2_L1 4096 /* AVX2 direct kernels: floats of the plane slice kept in L1 */
#define ME_D2_DOT_ROWS 2048 /* AVX2 dw: rows whose addresses are tabulated (on the stack) */

static int64_t wt_slot_floats(int64_t C, int64_t H, int64_t W, int64_t F, int64_t KH, int64_t KW,
                              int64_t stride, int64_t pad);
static int wt_shape_applies(int64_t C, int64_t F, int64_t KH, int64_t KW, int64_t stride, int64_t pad);
static void wt_dw_geometry(int64_t C, int64_t H, int64_t W, int64_t F, int64_t *scratch, int64_t *du);
static int wt_in_range(const float *x, int64_t n);

typedef struct {
    int64_t HO, WO, Hp, Wp, K, P, PW, ldw, plane, wtu, part, per_group, G;
} conv_geom;

/* The team of a group loop: at most G threads, so that every thread number is a slot. The
 * groups are handed out dynamically (a thread slowed by another process takes fewer); a group's
 * result does not depend on the thread that computes it, so the output stays bitwise the same. */
static inline int conv_team(int64_t G) {
    const int n = me_get_num_threads();
    return (int64_t)n < G ? n : (int)G;
}

/* The scratch slot of the calling thread inside a group loop: its number in the team (< G, see
 * conv_team; 0 in a one-thread team), so a thread reuses one slot, warm in its cache, for all
 * its groups. */
static inline int64_t conv_slot(void) {
#ifdef _OPENMP
    return (int64_t)omp_get_thread_num();
#else
    return 0;
#endif
}

static conv_geom conv_geometry(int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
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
    const int64_t wt = wt_slot_floats(C, H, W, F, KH, KW, stride, pad);
    if (wt > g.wtu) g.wtu = wt;
    g.part = g.wtu;
    if (wt_shape_applies(C, F, KH, KW, stride, pad)) {
        int64_t scr, du;
        wt_dw_geometry(C, H, W, F, &scr, &du);
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

/* Small output planes (the last stages of a ResNet: 7x7, 4x4): per-image GEMMs have P <= 64
 * columns and run far below the machine's peak, so the backward takes the whole batch as two
 * GEMMs over M = N*P rows instead ("im2row": row n*P + p is the patch of output pixel p of image
 * n). Scratch: rows (M, K) then dy transposed (F, M); used while it fits ME_BATCHED_BUDGET. */
#define ME_BATCHED_MAX_P 64
#define ME_BATCHED_BUDGET (16 * 1024 * 1024)

static int64_t conv_batched_floats(int64_t N, int64_t K, int64_t P, int64_t F) {
    if (P > ME_BATCHED_MAX_P || K < 64) return 0;
    const int64_t need = N * P * K + F * N * P;
    return need <= ME_BATCHED_BUDGET ? need : 0;
}

/* rows (N*P, K) = the patches of x (N,C,H,W), (c, i, j) order, zeros outside the image */
static void im2row(const float *x, float *rows, int64_t N, int64_t C, int64_t H, int64_t W, int64_t KH,
                   int64_t KW, int64_t stride, int64_t pad, int64_t HO, int64_t WO) {
    const int64_t K = C * KH * KW;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N > 1)
    for (int64_t n = 0; n < N; n++)
        for (int64_t ho = 0; ho < HO; ho++)
            for (int64_t wo = 0; wo < WO; wo++) {
                float *r = rows + ((n * HO + ho) * WO + wo) * K;
                for (int64_t c = 0; c < C; c++)
                    for (int64_t i = 0; i < KH; i++) {
                        const int64_t h = ho * stride - pad + i;
                        float *ri = r + (c * KH + i) * KW;
                        if (h < 0 || h >= H) {
                            for (int64_t j = 0; j < KW; j++) ri[j] = 0.0f;
                            continue;
                        }
                        const float *xr = x + ((n * C + c) * H + h) * W;
                        for (int64_t j = 0; j < KW; j++) {
                            const int64_t ww = wo * stride - pad + j;
                            ri[j] = ww >= 0 && ww < W ? xr[ww] : 0.0f;
                        }
                    }
            }
}

/* dx (N,C,H,W) = the patches rows (N*P, K) added back at their pixels (im2row's transpose), each
 * image by one thread in a fixed order */
static void row2im(const float *rows, float *dx, int64_t N, int64_t C, int64_t H, int64_t W, int64_t KH,
                   int64_t KW, int64_t stride, int64_t pad, int64_t HO, int64_t WO) {
    const int64_t K = C * KH * KW;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N > 1)
    for (int64_t n = 0; n < N; n++) {
        float *dxn = dx + n * C * H * W;
        memset(dxn, 0, (size_t)(C * H * W) * sizeof(float));
        for (int64_t ho = 0; ho < HO; ho++)
            for (int64_t wo = 0; wo < WO; wo++) {
                const float *r = rows + ((n * HO + ho) * WO + wo) * K;
                for (int64_t c = 0; c < C; c++)
                    for (int64_t i = 0; i < KH; i++) {
                        const int64_t h = ho * stride - pad + i;
                        if (h < 0 || h >= H) continue;
                        const float *ri = r + (c * KH + i) * KW;
                        float *dr = dxn + (c * H + h) * W;
                        for (int64_t j = 0; j < KW; j++) {
                            const int64_t ww = wo * stride - pad + j;
                            if (ww >= 0 && ww < W) dr[ww] += ri[j];
                        }
                    }
            }
    }
}

/* The backward of a small-plane convolution as whole-batch GEMMs (conv_batched_floats > 0):
 * dyT (F, M) = dy transposed; db = its row sums; dw (F,K) (+)= dyT @ rows; drows (M,K) = dyT^T @ w,
 * then row2im. me_sgemm threads internally with a shape-only split: bitwise the same for any
 * thread count. */
static void conv_backward_batched(const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
                                  int64_t N, int64_t C, int64_t H, int64_t W, int64_t F, int64_t KH, int64_t KW,
                                  int64_t stride, int64_t pad, int64_t HO, int64_t WO, int accumulate,
                                  float *workspace) {
    const int64_t K = C * KH * KW, P = HO * WO, M = N * P;
    float *rows = workspace, *dyT = workspace + M * K;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (F * M >= 65536)
    for (int64_t f = 0; f < F; f++)
        for (int64_t n = 0; n < N; n++) memcpy(dyT + f * M + n * P, dy + (n * F + f) * P, (size_t)P * sizeof(float));
    if (db)
        for (int64_t f = 0; f < F; f++) db[f] = (accumulate ? db[f] : 0.0f) + me_row_sum(dyT + f * M, M);
    if (dw) {
        im2row(x, rows, N, C, H, W, KH, KW, stride, pad, HO, WO);
        me_sgemm(0, 0, F, K, M, 1.0f, dyT, M, rows, K, accumulate ? 1.0f : 0.0f, dw, K);
    }
    if (dx) {
        me_sgemm(1, 0, M, K, F, 1.0f, dyT, M, w, K, 0.0f, rows, K);
        row2im(rows, dx, N, C, H, W, KH, KW, stride, pad, HO, WO);
    }
}

static int wino_applies(int64_t C, int64_t F, int64_t KH, int64_t KW, int64_t stride, int64_t H,
                        int64_t W, int64_t pad);
static int64_t avx2_pack_floats(int64_t C, int64_t F, int64_t KH, int64_t KW);
static int64_t wino_scratch(int64_t C, int64_t Hp, int64_t TW);
static int64_t wino8_slot(int64_t C, int64_t F, int64_t Hp, int64_t Wp, int64_t TH, int64_t TW);
static int64_t wino8_slots(int64_t C, int64_t N);
static void wino_pack_weights(const float *w, float *upk, int64_t F, int64_t C, int64_t Fpad);
static void wino_pack_weights_par(const float *w, float *upk, int64_t F, int64_t C, int64_t Fpad);
#if ME_CONV_X86
static void wino_pack_weights_flipped(const float *w, float *upk, int64_t F, int64_t C, int64_t Cpad);
static int wino_train_image(const float *x, int64_t C, int64_t H, int64_t W, const float *upk, int64_t Fpad,
                            int64_t F, const float *b, int act, float slope, float *y, float *scratch);
static int wt_dw_image(const float *x, const float *dy, int64_t C, int64_t H, int64_t W, int64_t F, float *dU,
                       int first, float *scratch);
static void wt_dw_finish(const float *dU, int64_t F, int64_t C, float *dwg, int beta_one);
static int wino_pool_image(const float *x, int64_t C, int64_t H, int64_t W, const float *upk, int64_t Fpad,
                           int64_t F, const float *b, int relu, float *y, float *scratch);
#endif

/* floats between the image groups of the Winograd tiles layout: the group's usual scratch, or
 * more when the tiles layout needs more (small planes) */
static int64_t wino_group_stride(const conv_geom *g, int64_t C) {
    const int64_t t = wino_scratch(C, g->Hp, g->WO / 2);
    return t > g->per_group ? t : g->per_group;
}

/* floats of scratch me_conv2d_forward/backward/pool2_forward need; 0 for invalid shapes */
int64_t me_conv2d_workspace_size(int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                                 int64_t KH, int64_t KW, int64_t stride, int64_t pad) {
    if (N <= 0 || C <= 0 || F <= 0 || KH <= 0 || KW <= 0 || stride <= 0 || pad < 0) return 0;
    if (H + 2 * pad < KH || W + 2 * pad < KW) return 0;
    const conv_geom g = conv_geometry(N, C, H, W, F, KH, KW, stride, pad);
    int64_t need = g.G * g.per_group + avx2_pack_floats(C, F, KH, KW);
    const int64_t batched = conv_batched_floats(N, g.K, g.P, F);
    if (batched > need) need = batched;
    if (wino_applies(C, F, KH, KW, stride, H, W, pad)) { /* the Winograd inference's scratch */
        const int64_t tiles = g.G * wino_group_stride(&g, C);
        const int64_t images = wino8_slots(C, N) * wino8_slot(C, F, g.Hp, g.Wp, g.HO / 2, g.WO / 2);
        if (tiles > need) need = tiles;
        if (images > need) need = images;
    }
    return need;
}

/* ---------------------------------------------------------------- stride 1: wide rows */
/* x (C,H,W) -> xp (C,Hp,Wp) zero-padded, plus KW + ME_SLACK zero floats of slack at the end */
static void pad_image(const float *x, float *xp, int64_t C, int64_t H, int64_t W, int64_t pad,
                      int64_t Hp, int64_t Wp, int64_t KW) {
    memset(xp, 0, (size_t)(C * Hp * Wp + KW + ME_SLACK) * sizeof(float));
    for (int64_t c = 0; c < C; c++)
        for (int64_t h = 0; h < H; h++)
            memcpy(xp + (c * Hp + h + pad) * Wp + pad, x + (c * H + h) * W, (size_t)W * sizeof(float));
}

/* xp (C,Hp,Wp) -> col (K, PW): row (c,i,j) = xp[c*Hp*Wp + i*Wp + j + q], q < PW */
static void im2col_wide(const float *xp, float *col, int64_t C, int64_t KH, int64_t KW,
                        int64_t Hp, int64_t Wp, int64_t PW) {
    for (int64_t c = 0; c < C; c++)
        for (int64_t i = 0; i < KH; i++)
            for (int64_t j = 0; j < KW; j++)
                memcpy(col + ((c * KH + i) * KW + j) * PW, xp + c * Hp * Wp + i * Wp + j, (size_t)PW * sizeof(float));
}

/* col (K, PW) -> dxp (C,Hp,Wp)+slack, overwritten: the adjoint of im2col_wide (taps in (c,i,j) order) */
static void col2im_wide(const float *col, float *dxp, int64_t C, int64_t KH, int64_t KW,
                        int64_t Hp, int64_t Wp, int64_t PW) {
    memset(dxp, 0, (size_t)(C * Hp * Wp + KW) * sizeof(float));
    for (int64_t c = 0; c < C; c++)
        for (int64_t i = 0; i < KH; i++)
            for (int64_t j = 0; j < KW; j++) {
                float *d = dxp + c * Hp * Wp + i * Wp + j;
                const float *r = col + ((c * KH + i) * KW + j) * PW;
                for (int64_t q = 0; q < PW; q++) d[q] += r[q];
            }
}

/* ------------------------------------------------------------- stride > 1: classic rows */
/* x (C,H,W) of one image -> col (K,P); out-of-image taps are zero */
static void im2col(const float *x, float *col, int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW,
                   int64_t stride, int64_t pad, int64_t HO, int64_t WO) {
    const int64_t P = HO * WO;
    for (int64_t c = 0; c < C; c++) {
        const float *xc = x + c * H * W;
        for (int64_t i = 0; i < KH; i++) {
            for (int64_t j = 0; j < KW; j++) {
                float *row = col + ((c * KH + i) * KW + j) * P;
                /* output columns wo with 0 <= wo*stride - pad + j < W */
                int64_t wo_lo = pad - j > 0 ? (pad - j + stride - 1) / stride : 0;
                int64_t wo_hi = (W - 1 + pad - j) >= 0 ? (W - 1 + pad - j) / stride + 1 : 0;
                if (wo_hi > WO) wo_hi = WO;
                if (wo_lo > wo_hi) wo_lo = wo_hi;
                for (int64_t ho = 0; ho < HO; ho++) {
                    float *r = row + ho * WO;
                    const int64_t hi = ho * stride - pad + i;
                    if (hi < 0 || hi >= H) {
                        for (int64_t wo = 0; wo < WO; wo++) r[wo] = 0.0f;
                        continue;
                    }
                    const int64_t off = hi * W - pad + j; /* x index of output column wo is off + wo*stride */
                    for (int64_t wo = 0; wo < wo_lo; wo++) r[wo] = 0.0f;
                    if (stride == 1) {
                        const float *src = xc + off;
                        for (int64_t wo = wo_lo; wo < wo_hi; wo++) r[wo] = src[wo];
                    } else {
                        for (int64_t wo = wo_lo; wo < wo_hi; wo++) r[wo] = xc[off + wo * stride];
                    }
                    for (int64_t wo = wo_hi; wo < WO; wo++) r[wo] = 0.0f;
                }
            }
        }
    }
}

/* col (K,P) -> dx (C,H,W), overwritten (taps are summed in (c,i,j,ho,wo) order) */
static void col2im(const float *col, float *dx, int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW,
                   int64_t stride, int64_t pad, int64_t HO, int64_t WO) {
    const int64_t P = HO * WO;
    memset(dx, 0, (size_t)(C * H * W) * sizeof(float));
    for (int64_t c = 0; c < C; c++) {
        float *dxc = dx + c * H * W;
        for (int64_t i = 0; i < KH; i++) {
            for (int64_t j = 0; j < KW; j++) {
                const float *row = col + ((c * KH + i) * KW + j) * P;
                int64_t wo_lo = pad - j > 0 ? (pad - j + stride - 1) / stride : 0;
                int64_t wo_hi = (W - 1 + pad - j) >= 0 ? (W - 1 + pad - j) / stride + 1 : 0;
                if (wo_hi > WO) wo_hi = WO;
                for (int64_t ho = 0; ho < HO; ho++) {
                    const int64_t hi = ho * stride - pad + i;
                    if (hi < 0 || hi >= H) continue;
                    const float *r = row + ho * WO;
                    const int64_t off = hi * W - pad + j;
                    if (stride == 1) {
                        for (int64_t wo = wo_lo; wo < wo_hi; wo++) dxc[off + wo] += r[wo];
                    } else {
                        for (int64_t wo = wo_lo; wo < wo_hi; wo++) dxc[off + wo * stride] += r[wo];
                    }
                }
            }
        }
    }
}

/* ------------------------------------------------------ stride 1: direct convolution
 * For a shallow GEMM depth (K = C*KH*KW <= ME_DIRECT_MAX_K, e.g. a C=1 first layer) the
 * forward is computed directly on the zero-padded plane: for each output row and 16-wide column chunk, NF accumulators (one per filter) take the K
 * taps in (c,i,j) order, each tap ONE (masked) load of the plane row and NF FMAs with a
 * broadcast weight from the packed weights (blocks of NF filters, (K, NF), zero-padded; packed
 * once per call and image group, reused for every image). Bias and ReLU are applied in
 * registers before the one store of the output: no im2col, no wide buffer, no extra pass.
 * The result differs from the im2col path only by float32 rounding (summation order). */
#define ME_DIRECT_MAX_K 288
#define ME_DIRECT_MAX_WPK 16384 /* floats of packed weights (on the stack) */

static int conv_use_direct(int64_t F, int64_t K, int64_t stride) {
#if ME_CONV_X86
    const int64_t NF = F <= 8 ? 8 : 16;
    return stride == 1 && K <= ME_DIRECT_MAX_K && ((F + NF - 1) / NF) * NF * K <= ME_DIRECT_MAX_WPK &&
           me_gemm_kernel_id() == 2;
#else
    (void)F; (void)K; (void)stride;
    return 0;
#endif
}

#if ME_CONV_X86
/* acc[f] (NF vectors) = the 16 (masked by m) outputs at row ho, columns wo.. of filters f of one
 * NF-block: the sum over (c, i, j) of packed weight wb[(c, i, j), f] times the padded input
 * xp[c, ho + i, wo + j ..]. Shared by the plain and the pooled direct kernels. */
#define ME_DEFINE_DIRECT_STRIP(NF)                                                                    \
    __attribute__((target("avx512f,fma"), always_inline)) static inline void direct_strip_##NF(      \
        __m512 *acc, const float *xp, const float *wb, int64_t C, int64_t KH, int64_t KW,            \
        int64_t Hp, int64_t Wp, int64_t ho, int64_t wo, __mmask16 m) {                               \
        _Pragma("GCC unroll 16") for (int f = 0; f < NF; f++) acc[f] = _mm512_setzero_ps();          \
        const float *wt = wb;                                                                        \
        for (int64_t c = 0; c < C; c++)                                                              \
            for (int64_t i = 0; i < KH; i++) {                                                       \
                const float *row = xp + (c * Hp + ho + i) * Wp + wo;                                 \
                for (int64_t j = 0; j < KW; j++, wt += NF) {                                         \
                    const __m512 v = _mm512_maskz_loadu_ps(m, row + j);                              \
                    _Pragma("GCC unroll 16") for (int f = 0; f < NF; f++)                            \
                        acc[f] = _mm512_fmadd_ps(_mm512_set1_ps(wt[f]), v, acc[f]);                   \
                }                                                                                    \
            }                                                                                        \
    }
ME_DEFINE_DIRECT_STRIP(8)
ME_DEFINE_DIRECT_STRIP(16)
#undef ME_DEFINE_DIRECT_STRIP

#define ME_DEFINE_DIRECT(NF)                                                                          \
    __attribute__((target("avx512f,fma"))) static void direct_image_##NF(                            \
        const float *xp, const float *wpk, const float *b, float *yn, int64_t F, int64_t C,          \
        int64_t KH, int64_t KW, int64_t Hp, int64_t Wp, int64_t HO, int64_t WO, int act,             \
        float slope) {                                                                               \
        const int64_t K = C * KH * KW, P = HO * WO;                                                  \
        for (int64_t f0 = 0; f0 < F; f0 += NF) {                                                     \
            const float *wb = wpk + (f0 / NF) * K * NF;                                              \
            const int64_t nf = F - f0 < NF ? F - f0 : NF;                                            \
            for (int64_t ho = 0; ho < HO; ho++) {                                                    \
                for (int64_t wo = 0; wo < WO; wo += 16) {                                            \
                    const int64_t nw = WO - wo < 16 ? WO - wo : 16;                                  \
                    const __mmask16 m = (__mmask16)(nw >= 16 ? 0xFFFFu : ((1u << nw) - 1u));         \
                    __m512 acc[NF];                                                                  \
                    direct_strip_##NF(acc, xp, wb, C, KH, KW, Hp, Wp, ho, wo, m);                    \
                    _Pragma("GCC unroll 16") for (int f = 0; f < NF; f++) {                          \
                        if (f < nf) {                                                                \
                            __m512 r = acc[f];                                                       \
                            if (b) r = _mm512_add_ps(r, _mm512_set1_ps(b[f0 + f]));                  \
                            if (act == ME_ACT_RELU)                                                  \
                                r = _mm512_max_ps(_mm512_setzero_ps(), r); /* NaN kept */            \
                            else if (act == ME_ACT_LEAKY_RELU)                                       \
                                r = _mm512_mask_mul_ps(r, _mm512_cmp_ps_mask(r, _mm512_setzero_ps(), \
                                                       _CMP_LT_OQ), r, _mm512_set1_ps(slope));       \
                            _mm512_mask_storeu_ps(yn + (f0 + f) * P + ho * WO + wo, m, r);           \
                        }                                                                            \
                    }                                                                                \
                }                                                                                    \
            }                                                                                        \
        }                                                                                            \
    }
ME_DEFINE_DIRECT(8)
ME_DEFINE_DIRECT(16)
#undef ME_DEFINE_DIRECT

/* The input gradient of a stride-1 convolution is a stride-1 correlation of dy, zero-padded by
 * KH-1-pad, with the weights flipped in space and the channel axes swapped (w^T[c, f, i, j] =
 * w[f, c, KH-1-i, KW-1-j]): the direct kernel above computes it with C "filters" over
 * F*KH*KW taps, writing dx_n (C,H,W) in one pass (no dcol matrix, no col2im). Used when that
 * problem is direct-eligible (conv_use_direct), KH == KW, pad <= KH-1 and C >= 8 (with fewer
 * channels most of the NF accumulators would be idle). */
static void direct_dx_image(const float *dyp, const float *wtpk, float *dxn, int64_t C, int64_t F,
                            int64_t KH, int64_t KW, int64_t Hpt, int64_t Wpt, int64_t H, int64_t W) {
    if (C <= 8)
        direct_image_8(dyp, wtpk, NULL, dxn, C, F, KH, KW, Hpt, Wpt, H, W, ME_ACT_IDENTITY, 0.0f);
    else
        direct_image_16(dyp, wtpk, NULL, dxn, C, F, KH, KW, Hpt, Wpt, H, W, ME_ACT_IDENTITY, 0.0f);
}

/* Direct convolution + bias (+ ReLU) + 2x2/2 max pooling of one image (inference: no argmax,
 * the full-resolution output is never stored). Output rows 2r and 2r+1 are computed as in
 * direct_image_NF (row 2r parked in an L1 buffer of NF vectors), maxed vertically, then the
 * column pairs are maxed (in-lane swap) and compressed to WO/2 values. yn (F, HO/2, WO/2). */
#define ME_DEFINE_DIRECT_POOL(NF)                                                                     \
    __attribute__((target("avx512f,fma"))) static void direct_pool_image_##NF(                       \
        const float *xp, const float *wpk, const float *b, float *yn, int64_t F, int64_t C,          \
        int64_t KH, int64_t KW, int64_t Hp, int64_t Wp, int64_t HO, int64_t WO, int relu) {          \
        const int64_t K = C * KH * KW, HQ = HO / 2, WQ = WO / 2;                                     \
        __m512 park[NF]; /* row 2r of the pair; always written (half 0) before it is read */         \
        _Pragma("GCC unroll 16") for (int f = 0; f < NF; f++) park[f] = _mm512_setzero_ps();         \
        for (int64_t f0 = 0; f0 < F; f0 += NF) {                                                     \
            const float *wb = wpk + (f0 / NF) * K * NF;                                              \
            const int64_t nf = F - f0 < NF ? F - f0 : NF;                                            \
            for (int64_t hq = 0; hq < HQ; hq++) {                                                    \
                for (int64_t wo = 0; wo < 2 * WQ; wo += 16) {                                        \
                    const int64_t nw = WO - wo < 16 ? WO - wo : 16;                                  \
                    const __mmask16 m = (__mmask16)(nw >= 16 ? 0xFFFFu : ((1u << nw) - 1u));         \
                    const int64_t nq = WQ - wo / 2 < 8 ? WQ - wo / 2 : 8;                            \
                    const __mmask16 mq = (__mmask16)((1u << nq) - 1u);                               \
                    for (int half = 0; half < 2; half++) {                                           \
                        const int64_t ho = 2 * hq + half;                                            \
                        __m512 acc[NF];                                                              \
                        direct_strip_##NF(acc, xp, wb, C, KH, KW, Hp, Wp, ho, wo, m);                \
                        _Pragma("GCC unroll 16") for (int f = 0; f < NF; f++) {                      \
                            __m512 r = acc[f];                                                       \
                            if (b && f < nf) r = _mm512_add_ps(r, _mm512_set1_ps(b[f0 + f]));        \
                            if (relu) r = _mm512_max_ps(_mm512_setzero_ps(), r); /* NaN kept */      \
                            if (half == 0) park[f] = r;                                              \
                            else {                                                                   \
                                const __m512 v = me_max_nan16(park[f], r);                                \
                                const __m512 h = me_max_nan16(v, _mm512_permute_ps(v, 0xB1));             \
                                if (f < nf)                                                          \
                                    _mm512_mask_storeu_ps(yn + ((f0 + f) * HQ + hq) * WQ + wo / 2, mq, \
                                                          _mm512_maskz_compress_ps(0x5555, h));      \
                            }                                                                        \
                        }                                                                            \
                    }                                                                                \
                }                                                                                    \
            }                                                                                        \
        }                                                                                            \
    }
ME_DEFINE_DIRECT_POOL(8)
ME_DEFINE_DIRECT_POOL(16)
#undef ME_DEFINE_DIRECT_POOL

/* ------------------------------------------------ AVX2 + FMA: direct kernels on the wide grid
 * The AVX2 counterparts of the direct forward, the direct dx and the dot-product dw. Their
 * register block is 4 filters x 3 vectors of 8 outputs (12 ymm accumulators): each tap (c,i,j)
 * is 3 loads of the padded plane and 4 broadcast weights for 12 FMAs. They write the wide grid
 * (row f of yw holds output (ho, wo) at ho*Wp + wo; the columns wo >= WO are scratch), which the
 * caller compacts with the bias and the activation; the weights are packed once per call. */

/* One register block of direct_wide_avx2: NV (1..3, a constant after inlining) vectors starting
 * at wide positions s[], 4 filters of the packed weights wb, over the channels c0..c1-1; the sums
 * start from zero (first) or from what yw holds (a previous channel block); nf filters stored. */
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
static void direct_wide_avx2(const float *xp, const float *wpk, float *yw, int64_t ldy, int64_t F, int64_t C,
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
static void dw_dot_avx2(int64_t F, int64_t K, int64_t HO, int64_t WO, int64_t Wp, const float *dy, int64_t ldd,
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

/* Are the AVX2 direct kernels used (the AVX2 SGEMM kernel is in use)? */
static int conv_use_avx2(void) {
#if ME_CONV_X86
    return me_gemm_kernel_id() == 1;
#else
    return 0;
#endif
}

/* floats of the AVX2 kernels' packed weights (forward or flipped), after the group scratch */
static int64_t avx2_pack_floats(int64_t C, int64_t F, int64_t KH, int64_t KW) {
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

/* w (F,K) -> wpk: ceil(F/NF) blocks of (K, NF), filters beyond F zero */
static void pack_direct_weights(const float *w, float *wpk, int64_t F, int64_t K, int64_t NF) {
    for (int64_t f0 = 0; f0 < F; f0 += NF)
        for (int64_t t = 0; t < K; t++)
            for (int64_t f = 0; f < NF; f++)
                wpk[(f0 / NF) * K * NF + t * NF + f] = f0 + f < F ? w[(f0 + f) * K + t] : 0.0f;
}

#if ME_CONV_X86
/* w (F,C,KH,KW) -> wpk of the transposed problem (see direct_dx_image): ceil(C/NF) blocks of
 * (F*KH*KW, NF), tap (f, i, j) of channel c = w[f, c, KH-1-i, KW-1-j], channels beyond C zero */
static void pack_direct_weights_flipped(const float *w, float *wpk, int64_t F, int64_t C, int64_t KH,
                                        int64_t KW, int64_t NF) {
    const int64_t Kt = F * KH * KW;
    for (int64_t c0 = 0; c0 < C; c0 += NF)
        for (int64_t f = 0; f < F; f++)
            for (int64_t i = 0; i < KH; i++)
                for (int64_t j = 0; j < KW; j++) {
                    float *d = wpk + (c0 / NF) * Kt * NF + ((f * KH + i) * KW + j) * NF;
                    for (int64_t c = 0; c < NF; c++)
                        d[c] = c0 + c < C ? w[((f * C + c0 + c) * KH + KH - 1 - i) * KW + KW - 1 - j] : 0.0f;
                }
}
#endif

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
    /* AVX2, 3x3 pad 1: Winograd (wino_train_image), its transformed weights packed once */
    const int wt = d2 && wt_shape_applies(C, F, KH, KW, stride, pad) && wt_in_range(w, F * K);
    if (!direct && !wt && conv_batched_floats(N, K, P, F) > 0) {
        /* a small output plane: the whole batch as one GEMM over N*P rows (see im2row), then
         * transposed into y with the bias and act */
        const int64_t M = N * P;
        float *rows = workspace, *yT = workspace + M * K;
        im2row(x, rows, N, C, H, W, KH, KW, stride, pad, HO, WO);
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
        wino_pack_weights_par(w, pk, F, C, Fpad);
    else if (d2)
        pack_direct_weights(w, pk, F, K, ME_D2_NF);
#pragma omp parallel for num_threads(conv_team(G)) schedule(dynamic, 1)
    for (int64_t gi = 0; gi < G; gi++) {
        float *col = workspace + conv_slot() * g.per_group; /* K*PW, the thread's slot */
        float *yw = col + K * PW;                             /* F*ldw */
        float *xp = yw + F * ldw;                             /* plane */
        const int64_t n0 = gi * N / G, n1 = (gi + 1) * N / G;
#if ME_CONV_X86
        if (direct) {
            float wpk[ME_DIRECT_MAX_WPK] __attribute__((aligned(64)));
            pack_direct_weights(w, wpk, F, K, NF);
            for (int64_t n = n0; n < n1; n++) {
                pad_image(x + n * C * H * W, xp, C, H, W, pad, Hp, Wp, KW);
                if (NF == 8)
                    direct_image_8(xp, wpk, b, y + n * F * P, F, C, KH, KW, Hp, Wp, HO, WO, act, slope);
                else
                    direct_image_16(xp, wpk, b, y + n * F * P, F, C, KH, KW, Hp, Wp, HO, WO, act, slope);
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
            /* an image out of Winograd's range (wt_in_range) takes im2col + SGEMM */
            if (wt && wino_train_image(xn, C, H, W, pk, Fpad, F, b, act, slope, yn, col)) continue;
#endif
            if (wide && !pointwise) {
                pad_image(xn, xp, C, H, W, pad, Hp, Wp, KW);
#if ME_CONV_X86
                if (d2 && !wt)
                    direct_wide_avx2(xp, pk, yw, ldw, F, C, KH, KW, Hp, Wp, HO, WO);
                else
#endif
                {
                    /* yw (F,PW) = w (F,K) @ col (K,PW) */
                    im2col_wide(xp, col, C, KH, KW, Hp, Wp, PW);
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
                if (!pointwise) im2col(xn, col, C, H, W, KH, KW, stride, pad, HO, WO);
                const float *cols = pointwise ? xn : col; /* a 1x1 image is its own (C, P) column matrix */
                float beta = 0.0f;
                if (b) {
                    for (int64_t f = 0; f < F; f++) {
                        const float bf = b[f];
                        float *yr = yn + f * P;
                        for (int64_t p = 0; p < P; p++) yr[p] = bf;
                    }
                    beta = 1.0f;
                }
                /* y_n (F,P) = w (F,K) @ col (K,P) + beta * y_n */
                me_sgemm_st(0, 0, F, P, K, 1.0f, w, K, cols, P, beta, yn, P);
                if (act != ME_ACT_IDENTITY)
                    for (int64_t e = 0; e < F * P; e++) yn[e] = conv_act(yn[e], act, slope);
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
    int wide;      /* stride 1: the wide-row layout (pad_image, im2col_wide) */
    int pointwise; /* 1x1 unpadded: dx = w^T @ dy straight into dx */
    int batched;   /* small planes: conv_backward_batched for the whole call */
    int wtw, wtx;  /* AVX2 3x3: dw by wt_dw_image, dx by wino_train_image */
    int dxd, d2x;  /* dx by direct_dx_image (AVX-512) / direct_wide_avx2 (AVX2) */
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
    p.wtx = has_dx && conv_use_avx2() && wt_shape_applies(F, C, KH, KW, stride, pad) && wt_in_range(w, F * g->K);
    p.wtw = has_dw && conv_use_avx2() && wt_shape_applies(C, F, KH, KW, stride, pad);
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
    if (p->wtw && wt_dw_image(xn, dyn, p->C, p->H, p->W, p->F, s->dU, !s->du_used, s->col)) {
        s->du_used = 1;
        return 0;
    }
#endif
    fill_dy_wide(dyn, s->dyw, p->F, g->HO, g->WO, g->Wp, g->PW, g->ldw);
    pad_image(xn, s->xp, p->C, p->H, p->W, p->pad, g->Hp, g->Wp, p->KW);
    const col_rows cr = {s->xp, p->KH * p->KW, p->KW, g->Hp * g->Wp, g->Wp, p->C * g->Hp * g->Wp};
    if (!dw_use_dot(1, g->PW)) {
        /* the columns' scratch entries (wo >= WO) zeroed: dy is zero there, but 0 * a NaN or
         * Inf pixel of a neighbouring tap would not be */
        im2col_wide(s->xp, s->col, p->C, p->KH, p->KW, g->Hp, g->Wp, g->PW);
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
    if (p->wtx && wino_train_image(dyn, p->F, g->HO, g->WO, pk, p->Cpad, p->C, NULL, ME_ACT_IDENTITY, 0.0f, dxn,
                                   s->col))
        return 1;
    if (p->d2x) { /* on dx's wide grid, in the plane (free once dw is done), then cropped */
        pad_image(dyn, s->dyp, p->F, g->HO, g->WO, p->tpad, p->Hpt, p->Wpt, p->KW);
        direct_wide_avx2(s->dyp, pk, s->xp, p->ldx, p->C, p->F, p->KH, p->KW, p->Hpt, p->Wpt, p->H, p->W);
        for (int64_t c = 0; c < p->C; c++)
            for (int64_t h = 0; h < p->H; h++)
                memcpy(dxn + (c * p->H + h) * p->W, s->xp + c * p->ldx + h * p->Wpt, (size_t)p->W * sizeof(float));
        return 1;
    }
    if (p->dxd) {
        pad_image(dyn, s->dyp, p->F, g->HO, g->WO, p->tpad, p->Hpt, p->Wpt, p->KW);
        direct_dx_image(s->dyp, wtpk, dxn, p->C, p->F, p->KH, p->KW, p->Hpt, p->Wpt, p->H, p->W);
        return 1;
    }
#else
    (void)p; (void)s; (void)pk; (void)wtpk; (void)dyn; (void)dxn;
#endif
    return 0;
}

/* dx of image n on the wide grid by GEMM: w^T @ dy straight into dx (pointwise), else dcol =
 * w^T @ dyw scattered into the padded plane (col2im_wide) and cropped. */
static void conv_bw_dx_gemm_wide(const conv_bw_plan *p, conv_bw_slot *s, const float *w, const float *dyn,
                                 float *dxn, int dyw_ready) {
    const conv_geom *g = &p->g;
    if (p->pointwise) {
        me_sgemm_st(1, 0, g->K, g->P, p->F, 1.0f, w, g->K, dyn, g->P, 0.0f, dxn, g->P);
        return;
    }
    if (!dyw_ready) fill_dy_wide(dyn, s->dyw, p->F, g->HO, g->WO, g->Wp, g->PW, g->ldw);
    me_sgemm_st(1, 0, g->K, g->PW, p->F, 1.0f, w, g->K, s->dyw, g->ldw, 0.0f, s->col, g->PW);
    col2im_wide(s->col, s->xp, p->C, p->KH, p->KW, g->Hp, g->Wp, g->PW);
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
        im2col(xn, s->col, p->C, p->H, p->W, p->KH, p->KW, p->stride, p->pad, g->HO, g->WO);
        const col_rows cr = {s->col, g->K, 1, 0, g->P, g->K * g->P};
        dw_accumulate(p->F, g->K, g->P, dyn, g->P, &cr, s->col, s->dwg, s->dwg_used, 0, g->HO, g->WO, g->Wp);
        s->dwg_used = 1;
    }
    if (dxn) {
        me_sgemm_st(1, 0, g->K, g->P, p->F, 1.0f, w, g->K, dyn, g->P, 0.0f, s->col, g->P);
        col2im(s->col, dxn, p->C, p->H, p->W, p->KH, p->KW, p->stride, p->pad, g->HO, g->WO);
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
    if (p->dxd) pack_direct_weights_flipped(w, wtpk_buf, p->F, p->C, p->KH, p->KW, p->C <= 8 ? 8 : 16);
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
            wt_dw_finish(du0, F, p->C, dw, 1);
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
    if (p.wtx) wino_pack_weights_flipped(w, pk, F, C, p.Cpad);
    if (p.d2x) pack_direct_weights_flipped(w, pk, F, C, KH, KW, ME_D2_NF);
#endif
    int gkind[ME_CONV_GROUPS];
    if (dw || dx || db) {
#pragma omp parallel for num_threads(conv_team(G)) schedule(dynamic, 1)
        for (int64_t gi = 0; gi < G; gi++) gkind[gi] = conv_bw_group(&p, gi, x, w, dy, dx, dw != NULL, db != NULL,
                                                                     pk, workspace);
    }
    conv_bw_reduce(&p, gkind, dw, db, accumulate, workspace);
}

/* ------------------------------------------------------------ Winograd F(2x2, 3x3) + pool
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
 * or (chain) first-stage outputs leave wt_in_range is not finished here (the AVX2 training
 * kernels per image, or conv then pool), and non-finite values keep the direct sums' pattern.
 * Used for C == 1 (wino1_pool_tiles: no products through memory) and for C >= ME_WINO_MIN_C with
 * F > 8 (with 8 filters half of each 16-filter block is idle); C == 2 stays direct.
 * Workspace (floats): tiles, in the group's scratch: C*Hp*2*(TW+1) + 16 deinterleaved plane,
 * and for C > 1 16*C*8 transformed inputs and 16*ME_WINO_KB*8 products; images: wino8_slot per
 * thread, sized for min(N/8, 16) threads (me_conv2d_workspace_size takes the larger of the two
 * needs; with more threads than that, only that many work). */
#define ME_WINO_MIN_C 3
#define ME_WINO_KB 16 /* filters per block: 16 ymm accumulators (AVX-512VL: 32 ymm registers) */

static int64_t wino_scratch(int64_t C, int64_t Hp, int64_t TW) {
    return C * Hp * 2 * (TW + 1) + 16 + (C == 1 ? 0 : 16 * C * 8 + 16 * ME_WINO_KB * 8);
}

/* The shapes that take Winograd (given AVX-512VL): 3x3, stride 1, HO, WO >= 2, and C == 1 or
 * C >= ME_WINO_MIN_C with F > 8. A function of the shapes only (it sizes the workspace). */
static int wino_applies(int64_t C, int64_t F, int64_t KH, int64_t KW, int64_t stride, int64_t H,
                        int64_t W, int64_t pad) {
    return KH == 3 && KW == 3 && stride == 1 && H + 2 * pad >= 4 && W + 2 * pad >= 4 &&
           (C == 1 || (C >= ME_WINO_MIN_C && F > 8));
}

/* Images layout (C > 1): the scratch slot of one thread, reused for each of its blocks of 8
 * images: the interleaved plane (C, Hp, Wp, 8), vb and mb as above, and the pooled output
 * (F, TH*TW, 8). */
static int64_t wino8_slot(int64_t C, int64_t F, int64_t Hp, int64_t Wp, int64_t TH, int64_t TW) {
    return C * Hp * Wp * 8 + 16 * C * 8 + 16 * ME_WINO_KB * 8 + F * TH * TW * 8;
}

static int64_t wino8_slots(int64_t C, int64_t N) {
    if (C == 1) return 0;
    return N / 8 < ME_CONV_GROUPS ? N / 8 : ME_CONV_GROUPS;
}

/* g (3,3) -> u (4,4) = G g G^T, G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1] */
static void wino_transform_filter(const float *g, float *u) {
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
        if (f < F) wino_transform_filter(w + (f * C + c) * 9, u);
        for (int p = 0; p < 16; p++) upk[(p * C + c) * Fpad + f] = u[p];
    }
}

static void wino_pack_weights(const float *w, float *upk, int64_t F, int64_t C, int64_t Fpad) {
    for (int64_t f = 0; f < Fpad; f++) wino_pack_filter(w, upk, f, F, C, Fpad);
}

/* the same, the filters shared out over the engine's threads (called outside parallel regions) */
static void wino_pack_weights_par(const float *w, float *upk, int64_t F, int64_t C, int64_t Fpad) {
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

/* r[0..8) (8x8, row i = r[i]) -> its transpose in place */
__attribute__((target("avx2"), always_inline)) static inline void transpose8x8(__m256 r[8]) {
    __m256 t[8], s[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        s[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int j = 0; j < 4; j++) {
        r[j] = _mm256_permute2f128_ps(s[j], s[4 + j], 0x20);
        r[4 + j] = _mm256_permute2f128_ps(s[j], s[4 + j], 0x31);
    }
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

/* x (N,C,H,W) -> y (N,F,HO/2,WO/2) = maxpool2x2(act(conv(x, w) + b)) in one pass (inference: no
 * argmax, the full-resolution output is never written). Supported when the direct path is
 * (stride 1, C*KH*KW <= 288, AVX-512 kernel) and HO, WO >= 2; returns 0 (nothing written)
 * otherwise, 1 when done. Max pooling as me_maxpool2d_forward (floor mode, NaN propagates). */
#if ME_CONV_X86
/* AVX2, 3x3 pad 1 (wt_shape_applies): conv + bias + ReLU + 2x2 max pooling by the training
 * Winograd kernels with a pooling output (wino_pool_image), image groups as the forward; an
 * image out of Winograd's range is convolved by im2col + SGEMM on the wide grid, then pooled. */
static int wino_pool_forward(const float *x, const float *w, const float *b, float *y, int64_t N, int64_t C,
                             int64_t H, int64_t W, int64_t F, int relu, const conv_geom *g, float *workspace) {
    const int64_t G = g->G, K = g->K, PW = g->PW, HO = g->HO, WO = g->WO, Hp = g->Hp, Wp = g->Wp, ldw = g->ldw;
    const int64_t HQ = HO / 2, WQ = WO / 2, Fpad = (F + 3) / 4 * 4;
    float *pk = workspace + G * g->per_group;
    wino_pack_weights_par(w, pk, F, C, Fpad);
#pragma omp parallel for num_threads(conv_team(G)) schedule(dynamic, 1)
    for (int64_t gi = 0; gi < G; gi++) {
        float *col = workspace + conv_slot() * g->per_group, *yw = col + K * PW, *xp = yw + F * ldw;
        for (int64_t n = gi * N / G; n < (gi + 1) * N / G; n++) {
            const float *xn = x + n * C * H * W;
            float *yn = y + n * F * HQ * WQ;
            if (wino_pool_image(xn, C, H, W, pk, Fpad, F, b, relu, yn, col)) continue;
            pad_image(xn, xp, C, H, W, 1, Hp, Wp, 3);
            im2col_wide(xp, col, C, 3, 3, Hp, Wp, PW);
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
 * above 2^40 (wt_in_range) to other paths, as the AVX2 training kernels do. */
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
 * NULL, also when the weights (F*K floats) are out of wt_in_range. */
static const wino_isa *wino_isa_pick(const float *w, int64_t FK) {
    const int k = me_gemm_kernel_id();
    if (!(k == 2 && (me_cpu_features() & ME_CPU_AVX512VL)) && k != 1) return NULL;
    if (!wt_in_range(w, FK)) return NULL;
    return k == 2 ? &wino_isa_avx512 : &wino_isa_avx2;
}

/* May a block of nimg images (image i at xb + i*CHW; or any nimg arrays of CHW floats) go on? Not
 * when another thread has given up (*bad), nor when one of them is out of wt_in_range; then *bad
 * is set. */
static int wino_block_ok(const float *xb, int64_t nimg, int64_t CHW, int *bad) {
    int ok = 1, seen;
    for (int64_t i = 0; i < nimg; i++) ok &= wt_in_range(xb + i * CHW, CHW);
#pragma omp atomic read
    seen = *bad;
    if (ok && !seen) return 1;
#pragma omp atomic write
    *bad = 1;
    return 0;
}

/* conv3x3 (stride 1) + bias + ReLU + 2x2 max pool by the Winograd pooling kernels of wi. Returns
 * 0 when an image is out of wt_in_range (y then holds partial results), 1 when done. */
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
    const int64_t NB = C == 1 ? 0 : N / 8, slot = wino8_slot(C, F, Hp, Wp, TH, TW);
    /* one slot per thread (at most the workspace's wino8_slots), reused block after block so
     * that it stays in that core's L2; each image's result is independent of the split */
    const int64_t nth = me_get_num_threads(), S = nth < wino8_slots(C, N) ? nth : wino8_slots(C, N);
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
    const int64_t n0 = NB * 8, R = N - n0, GR = R < G ? R : G, gs = wino_group_stride(&g, C);
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

int me_conv2d_pool2_forward(const float *x, const float *w, const float *b, float *y,
                            int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                            int64_t KH, int64_t KW, int64_t stride, int64_t pad, int relu,
                            float *workspace) {
    const conv_geom g = conv_geometry(N, C, H, W, F, KH, KW, stride, pad);
    const int64_t G = g.G, K = g.K, HO = g.HO, WO = g.WO, Hp = g.Hp, Wp = g.Wp;
    if (N <= 0 || G <= 0 || HO < 2 || WO < 2) return 0;
#if ME_CONV_X86
    const int64_t Fpad = (F + ME_WINO_KB - 1) / ME_WINO_KB * ME_WINO_KB;
    if (wino_applies(C, F, KH, KW, stride, H, W, pad) && K <= ME_DIRECT_MAX_K && 16 * C * Fpad <= ME_DIRECT_MAX_WPK) {
        const wino_isa *wi = wino_isa_pick(w, F * K);
        if (wi && wino_pool_run(wi, x, w, b, y, N, C, H, W, F, pad, relu, &g, workspace)) return 1;
    }
    /* AVX2: the training Winograd kernels, pooled per tile (per image: out of range -> im2col) */
    if (conv_use_avx2() && wt_shape_applies(C, F, KH, KW, stride, pad) && wt_in_range(w, F * K))
        return wino_pool_forward(x, w, b, y, N, C, H, W, F, relu, &g, workspace);
#endif
    if (!conv_use_direct(F, K, stride)) return 0;
#if ME_CONV_X86
    const int64_t NF = F <= 8 ? 8 : 16, PQ = (HO / 2) * (WO / 2);
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static)
    for (int64_t gi = 0; gi < G; gi++) {
        float *xp = workspace + gi * g.per_group + K * g.PW + F * g.ldw; /* plane */
        float wpk[ME_DIRECT_MAX_WPK] __attribute__((aligned(64)));
        pack_direct_weights(w, wpk, F, K, NF);
        for (int64_t n = gi * N / G; n < (gi + 1) * N / G; n++) {
            pad_image(x + n * C * H * W, xp, C, H, W, pad, Hp, Wp, KW);
            if (NF == 8)
                direct_pool_image_8(xp, wpk, b, y + n * F * PQ, F, C, KH, KW, Hp, Wp, HO, WO, relu);
            else
                direct_pool_image_16(xp, wpk, b, y + n * F * PQ, F, C, KH, KW, Hp, Wp, HO, WO, relu);
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
 * Winograd (wino_applies), the second in the images layout (F1 >= ME_WINO_MIN_C, F2 > 8), both
 * pooled outputs at least 1 x 1. */
static int wino_chain_applies(int64_t C, int64_t H, int64_t W, int64_t F1, int64_t pad1, int64_t F2,
                              int64_t pad2) {
    if (C <= 0 || H <= 0 || W <= 0 || F1 <= 0 || F2 <= 0 || pad1 < 0 || pad2 < 0) return 0;
    if (!wino_applies(C, F1, 3, 3, 1, H, W, pad1)) return 0;
    const wino_chain_geom g = wino_chain_geometry(H, W, F1, pad1, F2, pad2);
    return g.H2 >= 1 && g.W2 >= 1 && wino_applies(F1, F2, 3, 3, 1, g.H2, g.W2, pad2) && F1 >= ME_WINO_MIN_C &&
           g.TH2 >= 1 && g.TW2 >= 1;
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
     * outputs within wt_in_range, else 0 (the caller makes the two calls, which then decide) */
    const wino_isa *wi = wino_isa_pick(w1, F1 * C * 9);
    if (!wi || !wt_in_range(w2, F2 * F1 * 9)) return 0;
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

/* -------------------------------- AVX2 training: Winograd F(2x2, 3x3), stride 1, pad 1
 * y (F,H,W) = conv(x (C,H,W), w (F,C,3,3), pad 1) (+ b, then act), one image: the forward of a
 * 3x3 "same" convolution and, with the flipped channel-swapped weights, its input gradient
 * (a correlation of dy padded by 1). Lavin & Gray 2016 as in the inference kernels above, laid
 * out for whole images and any H, W: the ymm lanes are 8 tiles, consecutive tiles of one tile
 * row (rows mode, TW > 4 tiles per row, a row padded to a multiple of 8 tiles) or two tile rows
 * of 4 (pairs mode, TW <= 4: 7x7 and 8x8 planes fill all lanes). Steps:
 *  1. wt_split: the zero-padded plane (pad 1, plus the rows and columns the last tiles read)
 *     split into even and odd columns, so that a patch column of 8 tiles is one contiguous run;
 *  then per chunk of tile rows (at most ME_WT_CHUNK vectors of tiles, TC lanes):
 *  2. wt_input: V = B^T d B per (channel, 8 tiles), position-major: V (16, C, TC);
 *  3. wt_multiply: M_p (F, TC) = U_p (F, C) @ V_p (C, TC) for each position p in turn (U_p and
 *     V_p stay in L1), register blocks of 4 filters x 3 vectors as in direct_block_avx2;
 *  4. wt_output: Y = A^T M A per filter into a (4, TC) row, scattered to y with b and act.
 * 16 multiplies per (tile, channel, filter) instead of 36. Sums are reassociated (float32
 * rounding of a few ulps of the patch magnitude differs from the direct kernels); a non-finite
 * input value reaches every output of the tiles whose patches contain it (Inf - Inf in the
 * transforms), not only the outputs whose 3x3 windows do. Scratch: wt_scratch floats. */
#define ME_WT_MIN_C 8 /* fewer input channels: the transforms cost more than the products save */
#define ME_WT_MIN_F 8
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

/* floats of scratch of wino_train_image for C input and F output channels on H x W */
static int64_t wt_scratch(int64_t C, int64_t H, int64_t W, int64_t F) {
    const wt_geom t = wt_geometry(H, W);
    return 2 * C * t.Hq * t.WE + 16 * C * t.TC + 16 * ((F + 3) / 4 * 4) * t.TC + 4 * t.TC + 8;
}

/* Does a convolution of these shapes (C -> F channels) take the Winograd training kernels, given
 * the AVX2 kernels are in use? A function of the shapes only (it sizes the workspace). */
static int wt_shape_applies(int64_t C, int64_t F, int64_t KH, int64_t KW, int64_t stride, int64_t pad) {
    return KH == 3 && KW == 3 && stride == 1 && pad == 1 && C >= ME_WT_MIN_C && F >= ME_WT_MIN_F;
}

/* the scratch floats a group slot needs for the Winograd forward and input gradient (0: none) */
static int64_t wt_slot_floats(int64_t C, int64_t H, int64_t W, int64_t F, int64_t KH, int64_t KW,
                              int64_t stride, int64_t pad) {
    int64_t need = 0;
    if (wt_shape_applies(C, F, KH, KW, stride, pad)) need = wt_scratch(C, H, W, F);
    if (wt_shape_applies(F, C, KH, KW, stride, pad)) {
        const int64_t t = wt_scratch(F, H, W, C); /* pad 1: dy is H x W too */
        if (t > need) need = t;
    }
    return need;
}

/* the Winograd weight gradient: floats of its per-image scratch and of its dU sums */
static void wt_dw_geometry(int64_t C, int64_t H, int64_t W, int64_t F, int64_t *scratch, int64_t *du) {
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

static int wt_in_range(const float *x, int64_t n) {
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
static void wino_pack_weights_flipped(const float *w, float *upk, int64_t F, int64_t C, int64_t Cpad) {
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (Cpad * F >= 1024)
    for (int64_t c = 0; c < Cpad; c++)
        for (int64_t f = 0; f < F; f++) {
            float u[16] = {0};
            if (c < C) {
                float g[9];
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 3; j++) g[i * 3 + j] = w[((f * C + c) * 3 + 2 - i) * 3 + 2 - j];
                wino_transform_filter(g, u);
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

/* pooled (F, H/2, W/2) = maxpool2(relu?(conv3x3 pad 1 of x + b)), as wino_train_image (0 when x
 * is out of range) */
static int wino_pool_image(const float *x, int64_t C, int64_t H, int64_t W, const float *upk, int64_t Fpad,
                           int64_t F, const float *b, int relu, float *y, float *scratch) {
    if (!wt_in_range(x, C * H * W)) return 0;
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
 * Returns 0, y untouched, when x is not wt_in_range (the caller then takes the direct path). */
static int wino_train_image(const float *x, int64_t C, int64_t H, int64_t W, const float *upk, int64_t Fpad,
                            int64_t F, const float *b, int act, float slope, float *y, float *scratch) {
    if (!wt_in_range(x, C * H * W)) return 0;
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
 * 1 -1; 0 -1]) of each 2x2 tile dY of dy. dU is summed over the images of a group (wt_dw_image),
 * then transformed into the group's dw partial sums (wt_dw_finish). The tiles are in the lanes
 * of dM; V is transposed to (T, Cp) (8x8 transposes) so that the products are again register
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
                transpose8x8(buf[p]);
                float *dst = Vt + (p * tc + v * 8) * Cp + c0;
                for (int l = 0; l < 8; l++) _mm256_storeu_ps(dst + l * Cp, buf[p][l]);
            }
        }
}

/* dU (16, Fr, Cp) (+)= the products of image x (C,H,W), dy (F,H,W) (overwritten when first);
 * Fr = F rounded up to 4 (the rows beyond F are zero).
 * Returns 0, dU untouched, when x or dy is not wt_in_range (the caller takes the direct path). */
static int wt_dw_image(const float *x, const float *dy, int64_t C, int64_t H, int64_t W, int64_t F, float *dU,
                       int first, float *scratch) {
    if (!wt_in_range(x, C * H * W) || !wt_in_range(dy, F * H * W)) return 0;
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
static void wt_dw_finish(const float *dU, int64_t F, int64_t C, float *dwg, int beta_one) {
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
