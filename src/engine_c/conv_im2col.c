/* conv_im2col.c: the convolution's copies between images and GEMM operands (conv.c runs the
 * GEMMs): the zero-padded plane, im2col and its adjoint col2im in two layouts, and im2row /
 * row2im with the whole-batch backward of small output planes.
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
 */
#include "engine.h"
#include "row_sum.h"
#include "conv_internal.h"

#include <string.h>

/* ---------------------------------------------------------------- stride 1: wide rows */
/* x (C,H,W) -> xp (C,Hp,Wp) zero-padded, plus KW + ME_SLACK zero floats of slack at the end */
void conv_pad_image(const float *x, float *xp, int64_t C, int64_t H, int64_t W, int64_t pad,
                    int64_t Hp, int64_t Wp, int64_t KW) {
    memset(xp, 0, (size_t)(C * Hp * Wp + KW + ME_SLACK) * sizeof(float));
    for (int64_t c = 0; c < C; c++)
        for (int64_t h = 0; h < H; h++)
            memcpy(xp + (c * Hp + h + pad) * Wp + pad, x + (c * H + h) * W, (size_t)W * sizeof(float));
}

/* xp (C,Hp,Wp) -> col (K, PW): row (c,i,j) = xp[c*Hp*Wp + i*Wp + j + q], q < PW */
void conv_im2col_wide(const float *xp, float *col, int64_t C, int64_t KH, int64_t KW,
                      int64_t Hp, int64_t Wp, int64_t PW) {
    for (int64_t c = 0; c < C; c++)
        for (int64_t i = 0; i < KH; i++)
            for (int64_t j = 0; j < KW; j++)
                memcpy(col + ((c * KH + i) * KW + j) * PW, xp + c * Hp * Wp + i * Wp + j, (size_t)PW * sizeof(float));
}

/* col (K, PW) -> dxp (C,Hp,Wp)+slack, overwritten: the adjoint of conv_im2col_wide (taps in
 * (c,i,j) order) */
void conv_col2im_wide(const float *col, float *dxp, int64_t C, int64_t KH, int64_t KW,
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
void conv_im2col(const float *x, float *col, int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW,
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
void conv_col2im(const float *col, float *dx, int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW,
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

/* ------------------------------------------------------- small planes: whole-batch GEMMs
 * Small output planes (the last stages of a ResNet: 7x7, 4x4): per-image GEMMs have P <= 64
 * columns and run far below the machine's peak, so the backward takes the whole batch as two
 * GEMMs over M = N*P rows instead ("im2row": row n*P + p is the patch of output pixel p of image
 * n). Scratch: rows (M, K) then dy transposed (F, M); used while it fits ME_BATCHED_BUDGET. */
#define ME_BATCHED_MAX_P 64
#define ME_BATCHED_BUDGET (16 * 1024 * 1024)

int64_t conv_batched_floats(int64_t N, int64_t K, int64_t P, int64_t F) {
    if (P > ME_BATCHED_MAX_P || K < 64) return 0;
    const int64_t need = N * P * K + F * N * P;
    return need <= ME_BATCHED_BUDGET ? need : 0;
}

/* rows (N*P, K) = the patches of x (N,C,H,W), (c, i, j) order, zeros outside the image */
void conv_im2row(const float *x, float *rows, int64_t N, int64_t C, int64_t H, int64_t W, int64_t KH,
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

/* dx (N,C,H,W) = the patches rows (N*P, K) added back at their pixels (conv_im2row's transpose),
 * each image by one thread in a fixed order */
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
void conv_backward_batched(const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
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
        conv_im2row(x, rows, N, C, H, W, KH, KW, stride, pad, HO, WO);
        me_sgemm(0, 0, F, K, M, 1.0f, dyT, M, rows, K, accumulate ? 1.0f : 0.0f, dw, K);
    }
    if (dx) {
        me_sgemm(1, 0, M, K, F, 1.0f, dyT, M, w, K, 0.0f, rows, K);
        row2im(rows, dx, N, C, H, W, KH, KW, stride, pad, HO, WO);
    }
}
