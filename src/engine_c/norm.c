/* norm.c: batch normalization (torch.nn.BatchNorm1d / BatchNorm2d, Ioffe & Szegedy 2015) over x
 * viewed as (N, C, S): S = H*W for images, the length L of (N, C, L) input, 1 for (N, C) features.
 * Statistics per channel in double, two passes as torch's CPU kernel (the mean, then the sum of
 * squared deviations), each from float partial sums over 16 lanes within chunks of 512 values
 * (vectorizable) added into a double. Every channel is reduced in a fixed order, so the results
 * do not depend on the thread count. OpenMP over channels (a thread's channel stays in cache
 * between the statistics and the normalization). The bodies are compiled twice, portable and
 * AVX2 + FMA, chosen at run time with the SGEMM kernel (me_gemm_kernel_id). */
#include "engine.h"

#include <math.h>

#if !defined(ME_NO_X86) && (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define BN_X86 1
#else
#define BN_X86 0
#endif

#define BN_LANES 16
#define BN_CHUNK 512
/* inlined into the channel bodies, so the unit-stride calls vectorize */
#define BN_INLINE static inline __attribute__((always_inline))

/* A channel's values: `rows` rows of `len` values `st` apart, the rows `step` apart: (N, C, S)
 * input with S > 1 has N rows of S contiguous values; (N, C) input one row of N values C apart. */

/* sum(x[i] - m), or sum((x[i] - m)^2) when sq, over n values st apart */
BN_INLINE double dev_sum(const float *x, int64_t n, int64_t st, float m, int sq) {
    double s = 0.0;
    for (int64_t i0 = 0; i0 < n; i0 += BN_CHUNK) {
        const int64_t e = n - i0 < BN_CHUNK ? n : i0 + BN_CHUNK;
        float acc[BN_LANES] = {0};
        int64_t i = i0;
        for (; i + BN_LANES <= e; i += BN_LANES)
            for (int j = 0; j < BN_LANES; j++) {
                const float d = x[(i + j) * st] - m;
                acc[j] += sq ? d * d : d;
            }
        for (; i < e; i++) {
            const double d = (double)(x[i * st] - m);
            s += sq ? d * d : d;
        }
        for (int j = 0; j < BN_LANES; j++) s += acc[j];
    }
    return s;
}

/* sg += sum(g), sgx += sum(g * (x - m)) over n values st apart, g = dy, or (y > 0 ? dy : 0)
 * when y != NULL (a select: an Inf dy under a zero mask gives 0) */
BN_INLINE void grad_sums(const float *dy, const float *x, const float *y, int64_t n, int64_t st, float m,
                         double *sg, double *sgx) {
    for (int64_t i0 = 0; i0 < n; i0 += BN_CHUNK) {
        const int64_t e = n - i0 < BN_CHUNK ? n : i0 + BN_CHUNK;
        float a[BN_LANES] = {0}, b[BN_LANES] = {0};
        int64_t i = i0;
        if (y) {
            for (; i + BN_LANES <= e; i += BN_LANES)
                for (int j = 0; j < BN_LANES; j++) {
                    const int64_t k = (i + j) * st;
                    const float d = dy[k]; /* read unconditionally: a select the compiler vectorizes */
                    const float g = y[k] > 0.0f ? d : 0.0f;
                    a[j] += g;
                    b[j] += g * (x[k] - m);
                }
        } else {
            for (; i + BN_LANES <= e; i += BN_LANES)
                for (int j = 0; j < BN_LANES; j++) {
                    const int64_t k = (i + j) * st;
                    a[j] += dy[k];
                    b[j] += dy[k] * (x[k] - m);
                }
        }
        for (; i < e; i++) {
            const float g = (!y || y[i * st] > 0.0f) ? dy[i * st] : 0.0f;
            *sg += g;
            *sgx += (double)g * (double)(x[i * st] - m);
        }
        for (int j = 0; j < BN_LANES; j++) {
            *sg += a[j];
            *sgx += b[j];
        }
    }
}

#if BN_X86
#include <immintrin.h>
/* dev_sum and grad_sums for contiguous values (st == 1), written with AVX2 intrinsics: the same
 * 16 float lanes (two ymm), the same order of operations (a multiply then an add, no FMA), so
 * the sums are bitwise those of the portable loops. */
__attribute__((target("avx2,fma"))) static double dev_sum_avx2(const float *x, int64_t n, float m, int sq) {
    double s = 0.0;
    const __m256 vm = _mm256_set1_ps(m);
    for (int64_t i0 = 0; i0 < n; i0 += BN_CHUNK) {
        const int64_t e = n - i0 < BN_CHUNK ? n : i0 + BN_CHUNK;
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
        int64_t i = i0;
        for (; i + BN_LANES <= e; i += BN_LANES) {
            const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
            const __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm);
            a0 = _mm256_add_ps(a0, sq ? _mm256_mul_ps(d0, d0) : d0);
            a1 = _mm256_add_ps(a1, sq ? _mm256_mul_ps(d1, d1) : d1);
        }
        for (; i < e; i++) {
            const double d = (double)(x[i] - m);
            s += sq ? d * d : d;
        }
        float acc[BN_LANES];
        _mm256_storeu_ps(acc, a0);
        _mm256_storeu_ps(acc + 8, a1);
        for (int j = 0; j < BN_LANES; j++) s += acc[j];
    }
    return s;
}

__attribute__((target("avx2,fma"))) static void grad_sums_avx2(const float *dy, const float *x, const float *y,
                                                              int64_t n, float m, double *sg, double *sgx) {
    const __m256 vm = _mm256_set1_ps(m), zero = _mm256_setzero_ps();
    for (int64_t i0 = 0; i0 < n; i0 += BN_CHUNK) {
        const int64_t e = n - i0 < BN_CHUNK ? n : i0 + BN_CHUNK;
        __m256 a0 = zero, a1 = zero, b0 = zero, b1 = zero;
        int64_t i = i0;
        for (; i + BN_LANES <= e; i += BN_LANES) {
            __m256 g0 = _mm256_loadu_ps(dy + i), g1 = _mm256_loadu_ps(dy + i + 8);
            if (y) { /* a select, as the portable loop: an Inf dy under a zero mask gives 0 */
                g0 = _mm256_and_ps(_mm256_cmp_ps(_mm256_loadu_ps(y + i), zero, _CMP_GT_OQ), g0);
                g1 = _mm256_and_ps(_mm256_cmp_ps(_mm256_loadu_ps(y + i + 8), zero, _CMP_GT_OQ), g1);
            }
            a0 = _mm256_add_ps(a0, g0);
            a1 = _mm256_add_ps(a1, g1);
            b0 = _mm256_add_ps(b0, _mm256_mul_ps(g0, _mm256_sub_ps(_mm256_loadu_ps(x + i), vm)));
            b1 = _mm256_add_ps(b1, _mm256_mul_ps(g1, _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm)));
        }
        for (; i < e; i++) {
            const float g = (!y || y[i] > 0.0f) ? dy[i] : 0.0f;
            *sg += g;
            *sgx += (double)g * (double)(x[i] - m);
        }
        float a[BN_LANES], b[BN_LANES];
        _mm256_storeu_ps(a, a0);
        _mm256_storeu_ps(a + 8, a1);
        _mm256_storeu_ps(b, b0);
        _mm256_storeu_ps(b + 8, b1);
        for (int j = 0; j < BN_LANES; j++) {
            *sg += a[j];
            *sgx += b[j];
        }
    }
}
#define BN_DEV_SUM(x, n, st, m, sq, simd) ((simd) && (st) == 1 ? dev_sum_avx2(x, n, m, sq) : dev_sum(x, n, st, m, sq))
#define BN_GRAD_SUMS(dy, x, y, n, st, m, sg, sgx, simd)                                    \
    do {                                                                                   \
        if ((simd) && (st) == 1) grad_sums_avx2(dy, x, y, n, m, sg, sgx);                  \
        else grad_sums(dy, x, y, n, st, m, sg, sgx);                                       \
    } while (0)
#else
#define BN_DEV_SUM(x, n, st, m, sq, simd) dev_sum(x, n, st, m, sq)
#define BN_GRAD_SUMS(dy, x, y, n, st, m, sg, sgx, simd) grad_sums(dy, x, y, n, st, m, sg, sgx)
#endif

/* The forward of channel c: statistics (training), save_mean / save_invstd, the running
 * statistics, then y = x * scale + shift (and the ReLU) over the channel's values. */
BN_INLINE void forward_channel(const float *x, const float *gamma, const float *beta, float *running_mean,
                               float *running_var, float *y, float *save_mean, float *save_invstd, int64_t c,
                               int64_t rows, int64_t len, int64_t step, int64_t st, int training, float momentum,
                               float eps, int relu, int simd) {
    const double cnt = (double)rows * (double)len;
    double mean, var;
    if (training) {
        const float m0 = x[0]; /* shift: the sums stay small when |mean| >> std */
        double s = 0.0, q = 0.0;
        for (int64_t r = 0; r < rows; r++) s += BN_DEV_SUM(x + r * step, len, st, m0, 0, simd);
        mean = m0 + s / cnt;
        const float m = (float)mean;
        for (int64_t r = 0; r < rows; r++) q += BN_DEV_SUM(x + r * step, len, st, m, 1, simd);
        const double d = mean - (double)m; /* the rounding of the mean, corrected */
        var = q / cnt - d * d;
        var = var < 0.0 ? 0.0 : var; /* rounding below zero clamped; NaN (a NaN or Inf input) kept */
        const double mo = momentum;
        running_mean[c] = (float)((1.0 - mo) * running_mean[c] + mo * mean);
        running_var[c] = (float)((1.0 - mo) * running_var[c] + mo * var * cnt / (cnt - 1.0));
    } else {
        mean = running_mean[c];
        var = running_var[c];
    }
    const double invstd = 1.0 / sqrt(var + (double)eps), sc = (double)gamma[c] * invstd;
    save_mean[c] = (float)mean;
    save_invstd[c] = (float)invstd;
    const float scale = (float)sc, shift = (float)((double)beta[c] - mean * sc);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * step;
        float *yr = y + r * step;
        if (relu) {
            for (int64_t i = 0; i < len; i++) {
                const float v = xr[i * st] * scale + shift;
                yr[i * st] = v < 0.0f ? 0.0f : v; /* NaN stays NaN, as me_relu_forward */
            }
        } else {
            for (int64_t i = 0; i < len; i++) yr[i * st] = xr[i * st] * scale + shift;
        }
    }
}

/* The backward of channel c: dgamma, dbeta, then dx = k g + c1 (x - mean) + c0 (dx may be NULL). */
BN_INLINE void backward_channel(const float *dy, const float *x, const float *y, const float *gamma,
                                const float *save_mean, const float *save_invstd, float *dx, float *dgamma,
                                float *dbeta, int64_t c, int64_t rows, int64_t len, int64_t step, int64_t st,
                                int training, int accumulate, int simd) {
    const double cnt = (double)rows * (double)len;
    const float m = save_mean[c];
    double sg = 0.0, sgx = 0.0;
    for (int64_t r = 0; r < rows; r++)
        BN_GRAD_SUMS(dy + r * step, x + r * step, y ? y + r * step : NULL, len, st, m, &sg, &sgx, simd);
    const double invstd = save_invstd[c], kk = (double)gamma[c] * invstd, dg = sgx * invstd;
    dgamma[c] = (float)(accumulate ? dgamma[c] + dg : dg);
    dbeta[c] = (float)(accumulate ? dbeta[c] + sg : sg);
    if (!dx)
        return;
    const float k = (float)kk;
    const float c1 = training ? (float)(-kk * invstd * invstd * sgx / cnt) : 0.0f;
    const float c0 = training ? (float)(-kk * sg / cnt) : 0.0f;
    for (int64_t r = 0; r < rows; r++) {
        const float *dyr = dy + r * step, *xr = x + r * step, *yr = y ? y + r * step : NULL;
        float *dxr = dx + r * step;
        if (!training) { /* eval: the statistics are constants, dx = k g (x is not read) */
            for (int64_t i = 0; i < len; i++) {
                const float d = dyr[i * st];
                dxr[i * st] = k * (!yr || yr[i * st] > 0.0f ? d : 0.0f);
            }
        } else if (yr) {
            for (int64_t i = 0; i < len; i++) {
                const float d = dyr[i * st];
                const float g = yr[i * st] > 0.0f ? d : 0.0f;
                dxr[i * st] = k * g + c1 * (xr[i * st] - m) + c0;
            }
        } else {
            for (int64_t i = 0; i < len; i++) dxr[i * st] = k * dyr[i * st] + c1 * (xr[i * st] - m) + c0;
        }
    }
}

/* Channels in parallel; S > 1: N rows of S contiguous values (the unit-stride body), S == 1:
 * one row of N values C apart. Macros, so that each OpenMP region is outlined from (and compiled
 * for the target of) the function that expands it. */
#define BN_FORWARD_LOOPS(SIMD)                                                                               \
    if (S > 1) {                                                                                             \
        _Pragma("omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * C * S >= 16384)") \
        for (int64_t c = 0; c < C; c++)                                                                      \
            forward_channel(x + c * S, gamma, beta, running_mean, running_var, y + c * S, save_mean,          \
                            save_invstd, c, N, S, C * S, 1, training, momentum, eps, relu, SIMD);                  \
    } else {                                                                                                 \
        _Pragma("omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * C >= 16384)")   \
        for (int64_t c = 0; c < C; c++)                                                                      \
            forward_channel(x + c, gamma, beta, running_mean, running_var, y + c, save_mean, save_invstd,    \
                            c, 1, N, 0, C, training, momentum, eps, relu, SIMD);                                   \
    }

#define BN_BACKWARD_LOOPS(SIMD)                                                                              \
    if (S > 1) {                                                                                             \
        _Pragma("omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * C * S >= 16384)") \
        for (int64_t c = 0; c < C; c++)                                                                      \
            backward_channel(dy + c * S, x + c * S, y ? y + c * S : NULL, gamma, save_mean, save_invstd,      \
                             dx ? dx + c * S : NULL, dgamma, dbeta, c, N, S, C * S, 1, training, accumulate, SIMD); \
    } else {                                                                                                 \
        _Pragma("omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * C >= 16384)")   \
        for (int64_t c = 0; c < C; c++)                                                                      \
            backward_channel(dy + c, x + c, y ? y + c : NULL, gamma, save_mean, save_invstd,                 \
                             dx ? dx + c : NULL, dgamma, dbeta, c, 1, N, 0, C, training, accumulate, SIMD); \
    }

#define BN_FWD_ARGS const float *x, const float *gamma, const float *beta, float *running_mean, \
    float *running_var, float *y, float *save_mean, float *save_invstd, int64_t N, int64_t C, int64_t S, \
    int training, float momentum, float eps, int relu
#define BN_FWD_CALL x, gamma, beta, running_mean, running_var, y, save_mean, save_invstd, N, C, S, training, \
    momentum, eps, relu
#define BN_BWD_ARGS const float *dy, const float *x, const float *y, const float *gamma, \
    const float *save_mean, const float *save_invstd, float *dx, float *dgamma, float *dbeta, int64_t N, \
    int64_t C, int64_t S, int training, int accumulate
#define BN_BWD_CALL dy, x, y, gamma, save_mean, save_invstd, dx, dgamma, dbeta, N, C, S, training, accumulate

#if BN_X86
/* the same bodies compiled for AVX2 + FMA, taken when the AVX2 (or AVX-512) SGEMM kernel is in use */
__attribute__((target("avx2,fma"))) static void forward_avx2(BN_FWD_ARGS) { BN_FORWARD_LOOPS(1) }
__attribute__((target("avx2,fma"))) static void backward_avx2(BN_BWD_ARGS) { BN_BACKWARD_LOOPS(1) }
#endif

void me_batchnorm_forward(BN_FWD_ARGS) {
#if BN_X86
    if (me_gemm_kernel_id() >= 1) {
        forward_avx2(BN_FWD_CALL);
        return;
    }
#endif
    BN_FORWARD_LOOPS(0)
}

void me_batchnorm_backward(BN_BWD_ARGS) {
#if BN_X86
    if (me_gemm_kernel_id() >= 1) {
        backward_avx2(BN_BWD_CALL);
        return;
    }
#endif
    BN_BACKWARD_LOOPS(0)
}

void me_batchnorm_fold(const float *w, const float *b, const float *gamma, const float *beta,
                       const float *running_mean, const float *running_var, float *w_out, float *b_out,
                       int64_t F, int64_t K, float eps) {
    for (int64_t f = 0; f < F; f++) {
        const double sc = (double)gamma[f] / sqrt((double)running_var[f] + (double)eps);
        const float s = (float)sc;
        for (int64_t k = 0; k < K; k++) w_out[f * K + k] = w[f * K + k] * s;
        b_out[f] = (float)(((b ? (double)b[f] : 0.0) - (double)running_mean[f]) * sc + (double)beta[f]);
    }
}
