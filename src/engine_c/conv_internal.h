/* conv_internal.h (private): what the files of the convolution (conv.c, conv_im2col.c,
 * conv_direct_avx512.c, conv_direct_avx2.c, conv_wino_pool.c, conv_wino_train.c) share: the
 * group geometry of a call, the scratch layout constants, the thread team / slot helpers, and
 * the kernels one file runs for another. Not part of engine.h; every name here starts with conv_
 * or ME_. The layouts and the paths are described in conv.c. */
#ifndef ME_CONV_INTERNAL_H
#define ME_CONV_INTERNAL_H

#include "engine.h"

#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define ME_CONV_X86 1
#include <immintrin.h>
#else
#define ME_CONV_X86 0
#endif

/* the conv_ functions are internal to the library: hidden from the shared object's exports */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(hidden)
#endif

#define ME_CONV_GROUPS 16 /* at most this many image groups */

/* floats of zeroed slack after a padded plane and after each wide output row: the AVX2 kernels
 * read and write whole 8-float vectors past the last valid position */
#define ME_SLACK 8
#define ME_D2_NF 4 /* AVX2 direct kernels: filters per register block */

#define ME_DIRECT_MAX_K 288
#define ME_DIRECT_MAX_WPK 16384 /* floats of packed weights (on the stack) */
#define ME_POINTWISE_PANEL (128 * 1024) /* floats of a 1x1 forward's output panel (L2) */
#define ME_POINTWISE_MIN_P 1024          /* output pixels from which a 1x1 forward runs by panels */

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

#if ME_CONV_X86
/* r[0..8) (8x8, row i = r[i]) -> its transpose in place */
__attribute__((target("avx2"), always_inline)) static inline void conv_transpose8x8(__m256 r[8]) {
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
#endif

/* ---------------------------------------------------------------------------- conv.c */
conv_geom conv_geometry(int64_t N, int64_t C, int64_t H, int64_t W, int64_t F, int64_t KH, int64_t KW,
                        int64_t stride, int64_t pad);

/* ---------------------------------------------------------------------- conv_im2col.c */
int64_t conv_batched_floats(int64_t N, int64_t K, int64_t P, int64_t F);
void conv_im2row(const float *x, float *rows, int64_t N, int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW,
                 int64_t stride, int64_t pad, int64_t HO, int64_t WO);
void conv_backward_batched(const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
                           int64_t N, int64_t C, int64_t H, int64_t W, int64_t F, int64_t KH, int64_t KW,
                           int64_t stride, int64_t pad, int64_t HO, int64_t WO, int accumulate, float *workspace);
void conv_pad_image(const float *x, float *xp, int64_t C, int64_t H, int64_t W, int64_t pad, int64_t Hp,
                    int64_t Wp, int64_t KW);
void conv_im2col_wide(const float *xp, float *col, int64_t C, int64_t KH, int64_t KW, int64_t Hp, int64_t Wp,
                      int64_t PW);
void conv_col2im_wide(const float *col, float *dxp, int64_t C, int64_t KH, int64_t KW, int64_t Hp, int64_t Wp,
                      int64_t PW);
void conv_im2col(const float *x, float *col, int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW,
                 int64_t stride, int64_t pad, int64_t HO, int64_t WO);
void conv_col2im(const float *col, float *dx, int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW,
                 int64_t stride, int64_t pad, int64_t HO, int64_t WO);

/* --------------------------------------------------------------- conv_direct_avx512.c */
int conv_use_direct(int64_t F, int64_t K, int64_t stride);
void conv_pack_direct_weights(const float *w, float *wpk, int64_t F, int64_t K, int64_t NF);
#if ME_CONV_X86
__attribute__((target("avx512f,fma"))) void conv_direct_image_8(
    const float *xp, const float *wpk, const float *b, float *yn, int64_t F, int64_t C, int64_t KH, int64_t KW,
    int64_t Hp, int64_t Wp, int64_t HO, int64_t WO, int act, float slope);
__attribute__((target("avx512f,fma"))) void conv_direct_image_16(
    const float *xp, const float *wpk, const float *b, float *yn, int64_t F, int64_t C, int64_t KH, int64_t KW,
    int64_t Hp, int64_t Wp, int64_t HO, int64_t WO, int act, float slope);
void conv_direct_dx_image(const float *dyp, const float *wtpk, float *dxn, int64_t C, int64_t F, int64_t KH,
                          int64_t KW, int64_t Hpt, int64_t Wpt, int64_t H, int64_t W);
__attribute__((target("avx512f,fma"))) void conv_direct_pool_image_8(
    const float *xp, const float *wpk, const float *b, float *yn, int64_t F, int64_t C, int64_t KH, int64_t KW,
    int64_t Hp, int64_t Wp, int64_t HO, int64_t WO, int relu);
__attribute__((target("avx512f,fma"))) void conv_direct_pool_image_16(
    const float *xp, const float *wpk, const float *b, float *yn, int64_t F, int64_t C, int64_t KH, int64_t KW,
    int64_t Hp, int64_t Wp, int64_t HO, int64_t WO, int relu);
void conv_pack_direct_weights_flipped(const float *w, float *wpk, int64_t F, int64_t C, int64_t KH, int64_t KW,
                                      int64_t NF);
#endif

/* ----------------------------------------------------------------- conv_direct_avx2.c */
int conv_use_avx2(void);
int64_t conv_avx2_pack_floats(int64_t C, int64_t F, int64_t KH, int64_t KW);
#if ME_CONV_X86
__attribute__((target("avx2,fma"))) void conv_direct_wide_avx2(const float *xp, const float *wpk, float *yw,
                                                               int64_t ldy, int64_t F, int64_t C, int64_t KH,
                                                               int64_t KW, int64_t Hp, int64_t Wp, int64_t HO,
                                                               int64_t WO);
#endif
/* (col_rows: declared where dot4x4_avx512.h is included before this header) */
#if ME_CONV_X86 && defined(ME_DOT4X4_AVX512_H)
__attribute__((target("avx2,fma"))) void conv_dw_dot_avx2(int64_t F, int64_t K, int64_t HO, int64_t WO,
                                                          int64_t Wp, const float *dy, int64_t ldd,
                                                          const col_rows *cr, float *dw, int beta_one);
#endif

/* ------------------------------------------------------------------- conv_wino_pool.c */
int conv_wino_applies(int64_t C, int64_t F, int64_t KH, int64_t KW, int64_t stride, int64_t H, int64_t W,
                      int64_t pad);
int64_t conv_wino8_slot(int64_t C, int64_t F, int64_t Hp, int64_t Wp, int64_t TH, int64_t TW);
int64_t conv_wino8_slots(int64_t C, int64_t N);
int64_t conv_wino_group_stride(const conv_geom *g, int64_t C);
void conv_wino_transform_filter(const float *g, float *u);
void conv_wino_pack_weights_par(const float *w, float *upk, int64_t F, int64_t C, int64_t Fpad);

/* ------------------------------------------------------------------ conv_wino_train.c */
int64_t conv_wt_slot_floats(int64_t C, int64_t H, int64_t W, int64_t F, int64_t KH, int64_t KW, int64_t stride,
                            int64_t pad);
int conv_wt_shape_applies(int64_t C, int64_t F, int64_t KH, int64_t KW, int64_t stride, int64_t pad);
int conv_use_wt(int64_t C, int64_t F, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t stride, int64_t pad);
void conv_wt_dw_geometry(int64_t C, int64_t H, int64_t W, int64_t F, int64_t *scratch, int64_t *du);
int conv_wt_in_range(const float *x, int64_t n);
#if ME_CONV_X86
void conv_wino_pack_weights_flipped(const float *w, float *upk, int64_t F, int64_t C, int64_t Cpad);
int conv_wino_train_image(const float *x, int64_t C, int64_t H, int64_t W, const float *upk, int64_t Fpad,
                          int64_t F, const float *b, int act, float slope, float *y, float *scratch);
int conv_wino_pool_image(const float *x, int64_t C, int64_t H, int64_t W, const float *upk, int64_t Fpad,
                         int64_t F, const float *b, int relu, float *y, float *scratch);
int conv_wt_dw_image(const float *x, const float *dy, int64_t C, int64_t H, int64_t W, int64_t F, float *dU,
                     int first, float *scratch);
void conv_wt_dw_finish(const float *dU, int64_t F, int64_t C, float *dwg, int beta_one);
#endif

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#endif /* ME_CONV_INTERNAL_H */
