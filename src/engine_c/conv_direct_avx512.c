/* conv_direct_avx512.c: direct convolution on the zero-padded plane, AVX-512F + FMA (picked
 * with the AVX-512 SGEMM kernel, conv_use_direct): the forward (conv_direct_image_NF), the input
 * gradient as the correlation of the padded dy with the flipped weights (conv_direct_dx_image),
 * the inference conv + 2x2 max pool (conv_direct_pool_image_NF); and the weight packing these
 * and the AVX2 direct kernels (conv_direct_avx2.c, with NF = ME_D2_NF) read, in plain C.
 *
 * For a shallow GEMM depth (K = C*KH*KW <= ME_DIRECT_MAX_K, e.g. a C=1 first layer) the
 * forward is computed directly on the zero-padded plane: for each output row and 16-wide column
 * chunk, NF accumulators (one per filter) take the K taps in (c,i,j) order, each tap ONE (masked)
 * load of the plane row and NF FMAs with a broadcast weight from the packed weights (blocks of NF
 * filters, (K, NF), zero-padded; packed once per call and image group, reused for every image).
 * Bias and ReLU are applied in registers before the one store of the output: no im2col, no wide
 * buffer, no extra pass. The result differs from the im2col path only by float32 rounding
 * (summation order). */
#include "engine.h"
#include "simd_internal.h"
#include "conv_internal.h"

/* Does the forward of these shapes take the direct kernel (stride 1, K <= ME_DIRECT_MAX_K, the
 * packed weights within ME_DIRECT_MAX_WPK floats, the AVX-512 SGEMM kernel in use)? */
int conv_use_direct(int64_t F, int64_t K, int64_t stride) {
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
    __attribute__((target("avx512f,fma"))) void conv_direct_image_##NF(                              \
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
void conv_direct_dx_image(const float *dyp, const float *wtpk, float *dxn, int64_t C, int64_t F,
                          int64_t KH, int64_t KW, int64_t Hpt, int64_t Wpt, int64_t H, int64_t W) {
    if (C <= 8)
        conv_direct_image_8(dyp, wtpk, NULL, dxn, C, F, KH, KW, Hpt, Wpt, H, W, ME_ACT_IDENTITY, 0.0f);
    else
        conv_direct_image_16(dyp, wtpk, NULL, dxn, C, F, KH, KW, Hpt, Wpt, H, W, ME_ACT_IDENTITY, 0.0f);
}

/* Direct convolution + bias (+ ReLU) + 2x2/2 max pooling of one image (inference: no argmax,
 * the full-resolution output is never stored). Output rows 2r and 2r+1 are computed as in
 * conv_direct_image_NF (row 2r parked in an L1 buffer of NF vectors), maxed vertically, then the
 * column pairs are maxed (in-lane swap) and compressed to WO/2 values. yn (F, HO/2, WO/2). */
#define ME_DEFINE_DIRECT_POOL(NF)                                                                     \
    __attribute__((target("avx512f,fma"))) void conv_direct_pool_image_##NF(                         \
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
#endif

/* w (F,K) -> wpk: ceil(F/NF) blocks of (K, NF), filters beyond F zero */
void conv_pack_direct_weights(const float *w, float *wpk, int64_t F, int64_t K, int64_t NF) {
    for (int64_t f0 = 0; f0 < F; f0 += NF)
        for (int64_t t = 0; t < K; t++)
            for (int64_t f = 0; f < NF; f++)
                wpk[(f0 / NF) * K * NF + t * NF + f] = f0 + f < F ? w[(f0 + f) * K + t] : 0.0f;
}

#if ME_CONV_X86
/* w (F,C,KH,KW) -> wpk of the transposed problem (see conv_direct_dx_image): ceil(C/NF) blocks of
 * (F*KH*KW, NF), tap (f, i, j) of channel c = w[f, c, KH-1-i, KW-1-j], channels beyond C zero */
void conv_pack_direct_weights_flipped(const float *w, float *wpk, int64_t F, int64_t C, int64_t KH,
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
