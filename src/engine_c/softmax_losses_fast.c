/* softmax_losses_fast.c: the softmax_losses family's float-exp row kernels: the fast row softmax
 * NLL (the contract of softmax_losses.c's me_softmax_nll_forward / _backward, one float exp per
 * entry) and the single-target row softmax cross-entropy (InstanceLoss). A translation unit of its
 * own because softmax_losses.c compiles without FMA contraction and these loops are tuned with it.
 * Declarations: engine.h section "softmax_losses.c"; numpy twins in mantissa_embed/_reference. */
#include <math.h>
#include "engine.h"

/* ------------------------------------------------------------------ fast row softmax NLL */
/* The same contract as me_softmax_nll_forward / me_softmax_nll_backward (softmax_losses.c), with
 * one branch-free float exp per entry (fast_expf.h, ~1 ulp) instead of two double exps, in row
 * loops compiled for AVX-512 / AVX2 / baseline (chosen at load time) that vectorize. Logit
 * differences z - shift are formed in double and rounded once to float; the sums are in double.
 * Rows whose positive mass lies far below the row maximum fall back to a second shifted pass, so
 * no term that matters underflows. */
#include "fast_expf.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define NLL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef NLL_CLONES
#define NLL_CLONES
#endif

/* exp(t) for a double t <= ~0 to about float precision: t = th + tl (th = (float)t), exp(th) (1 + tl);
 * 0 below -87 (and for -inf), clamped above 88. Branch-free. */
static inline __attribute__((always_inline)) float nll_exp(double t) {
    const float th = (float)t;
    const float tl = (float)(t - (double)th);
    const float c = th < ME_EXPF_LO ? ME_EXPF_LO : (th > ME_EXPF_HI ? ME_EXPF_HI : th);
    const float y = me_expf_clamped(c) * (1.0f + tl);
    return th < -87.0f ? 0.0f : y;
}

/* Row max of c*s_j over the kept entries (j != self), and over the kept positives (rl[j] == li). */
NLL_CLONES
static void nll_row_max(const float *restrict si, const int64_t *restrict rl, int64_t li, int64_t self,
                        int64_t M, float cf, float *m_out, float *mp_out) {
    float m = -INFINITY, mp = -INFINITY;
    #pragma omp simd reduction(max:m, mp)
    for (int64_t j = 0; j < M; j++) {
        const float z = cf * si[j];
        const int ok = j != self;
        const float zk = ok ? z : -INFINITY;
        const float zp = (ok && rl[j] == li) ? z : -INFINITY;
        m = zk > m ? zk : m;
        mp = zp > mp ? zp : mp;
    }
    *m_out = m;
    *mp_out = mp;
}

/* out[j] = exp(c s_j - m), j < n (vectorized: see the no-trapping-math note below). */
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
NLL_CLONES
static void nll_exp_block(const float *restrict si, int64_t n, double c, double m, float *restrict out) {
    #pragma omp simd
    for (int64_t j = 0; j < n; j++) out[j] = nll_exp(c * (double)si[j] - m);
}
#pragma GCC pop_options

#define NLL_BLOCK 256

/* S = sum_{j kept} exp(c s_j - m), Sp = sum_{j kept positive} exp(c s_j - m), in blocks of
 * NLL_BLOCK entries (exps into a stack buffer, then the double sums). */
NLL_CLONES
static void nll_row_sums(const float *restrict si, const int64_t *restrict rl, int64_t li, int64_t self,
                         int64_t M, double c, double m, double *S_out, double *Sp_out) {
    float buf[NLL_BLOCK];
    double S = 0.0, Sp = 0.0;
    for (int64_t j0 = 0; j0 < M; j0 += NLL_BLOCK) {
        const int64_t n = M - j0 < NLL_BLOCK ? M - j0 : NLL_BLOCK;
        nll_exp_block(si + j0, n, c, m, buf);
        const int64_t *restrict r = rl + j0;
        const int64_t sf = self - j0;
        #pragma omp simd reduction(+:S, Sp)
        for (int64_t j = 0; j < n; j++) {
            const double e = j != sf ? (double)buf[j] : 0.0;
            S += e;
            Sp += r[j] == li ? e : 0.0;
        }
    }
    *S_out = S;
    *Sp_out = Sp;
}

/* sim (N,M), labels (N), ref_labels (M) -> losses (N), lse (N,2), valid (N); returns the
 * number of valid rows */
int64_t me_softmax_nll_fast_forward(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                                    float *losses, double *lse, uint8_t *valid, int64_t N, int64_t M,
                                    float scale, int exclude_self, int inverted, double max_loss) {
    const float cf = (inverted ? 1.0f : -1.0f) * scale;
    const double c = (double)cf;
    int64_t nv = 0;
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) reduction(+:nv) \
        if (N * M >= 16384)
    for (int64_t i = 0; i < N; i++) {
        const float *si = sim + i * M;
        const int64_t li = labels[i];
        const int64_t self = exclude_self ? i : -1;
        float mf, mpf;
        nll_row_max(si, ref_labels, li, self, M, cf, &mf, &mpf);
        double la = -INFINITY, lp = -INFINITY;
        if (mf > -INFINITY) {
            const double m = (double)mf;
            double S, Sp;
            nll_row_sums(si, ref_labels, li, self, M, c, m, &S, &Sp);
            la = m + log(S);
            if (mpf > -INFINITY) {
                if ((double)mpf - m >= -60.0) {
                    lp = m + log(Sp);
                } else { /* positives far below the maximum: sum them with their own shift */
                    double S2, Sp2;
                    nll_row_sums(si, ref_labels, li, self, M, c, (double)mpf, &S2, &Sp2);
                    lp = (double)mpf + log(Sp2);
                }
            }
        }
        const double l = la - lp;
        const int ok = lp > -INFINITY && la - (double)mpf < max_loss;
        lse[2 * i] = la;
        lse[2 * i + 1] = lp;
        losses[i] = ok ? (float)(l > 0.0 ? l : 0.0) : 0.0f;
        valid[i] = (uint8_t)ok;
        nv += ok;
    }
    return nv;
}

/* The gradient loops convert and select on floats that may be out of range in lanes whose result
 * is discarded: without trapping-math semantics gcc if-converts them and so vectorizes the loops
 * (nothing here reads the floating-point exception flags). */
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")

/* gi_j = e_j (pos_j ? r1 : a), e_j = exp(c s_j - la), r1 = a (1 - exp(la - lp)): the gradient
 * a (exp(c s_j - la) - [positive] exp(c s_j - lp)) when the loss la - lp is small. */
NLL_CLONES
static void nll_row_grad1(const float *restrict si, const int64_t *restrict rl, int64_t li, int64_t M,
                          double c, double la, double r1, double a, float *restrict gi) {
    #pragma omp simd
    for (int64_t j = 0; j < M; j++) {
        const float e = nll_exp(c * (double)si[j] - la);
        gi[j] = (float)((double)e * (rl[j] == li ? r1 : a));
    }
}

/* The same with two exps (a large loss: exp(c s_j - la) may underflow where exp(c s_j - lp) does not). */
NLL_CLONES
static void nll_row_grad2(const float *restrict si, const int64_t *restrict rl, int64_t li, int64_t M,
                          double c, double la, double lp, double a, float *restrict gi) {
    #pragma omp simd
    for (int64_t j = 0; j < M; j++) {
        const double z = c * (double)si[j];
        const float e = nll_exp(z - la);
        const float ep = nll_exp(z - lp);
        gi[j] = (float)(a * ((double)e - (rl[j] == li ? (double)ep : 0.0)));
    }
}

#pragma GCC pop_options

/* sim (N,M), lse (N,2), weights (N) -> dsim (N,M), overwritten */
void me_softmax_nll_fast_backward(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                                  const double *lse, const float *weights, float *dsim, int64_t N,
                                  int64_t M, float scale, int exclude_self, int inverted) {
    const double c = (double)((inverted ? 1.0f : -1.0f) * scale);
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= 16384)
    for (int64_t i = 0; i < N; i++) {
        float *gi = dsim + i * M;
        const double w = (double)weights[i];
        const double la = lse[2 * i], lp = lse[2 * i + 1];
        if (w == 0.0 || lp == -INFINITY) {
            for (int64_t j = 0; j < M; j++) gi[j] = 0.0f;
            continue;
        }
        const double a = w * c;
        if (la - lp <= 20.0)
            nll_row_grad1(sim + i * M, ref_labels, labels[i], M, c, la, a * (1.0 - exp(la - lp)), a, gi);
        else
            nll_row_grad2(sim + i * M, ref_labels, labels[i], M, c, la, lp, a, gi);
        if (exclude_self && i < M) gi[i] = 0.0f;
    }
}

/* ------------------------------------------------------------------ single-target row softmax CE */
/* InstanceLoss: one target column per row, so there is no positive set to sum and no far-positive
 * fallback: float logits z = scale * s, the row maximum subtracted, one branch-free float exp per
 * entry summed in float over blocks of XR_BLOCK entries (vector lanes), the blocks in double. */
#define XR_BLOCK 512

/* exp(x) for x <= ~0 (fast_expf.h); 0 below -87. Branch-free. */
static inline __attribute__((always_inline)) float xr_exp(float x) {
    const float y = me_expf_clamped(x < -87.0f ? -87.0f : (x > ME_EXPF_HI ? ME_EXPF_HI : x));
    return x < -87.0f ? 0.0f : y;
}

#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
NLL_CLONES
static float xr_row_max(const float *restrict si, int64_t M, float c) {
    float m = -INFINITY;
    #pragma omp simd reduction(max:m)
    for (int64_t j = 0; j < M; j++) {
        const float z = c * si[j];
        m = z > m ? z : m;
    }
    return m;
}

NLL_CLONES
static double xr_row_sum(const float *restrict si, int64_t M, float c, float m) {
    double S = 0.0;
    for (int64_t j0 = 0; j0 < M; j0 += XR_BLOCK) {
        const int64_t n = M - j0 < XR_BLOCK ? M - j0 : XR_BLOCK;
        const float *restrict s = si + j0;
        float b = 0.0f;
        #pragma omp simd reduction(+:b)
        for (int64_t j = 0; j < n; j++) b += xr_exp(c * s[j] - m);
        S += (double)b;
    }
    return S;
}

NLL_CLONES
static void xr_row_grad(const float *restrict si, int64_t M, float c, float lse, float a, float *restrict gi) {
    #pragma omp simd
    for (int64_t j = 0; j < M; j++) gi[j] = a * xr_exp(c * si[j] - lse);
}
#pragma GCC pop_options

/* sim (N,M), target (N) in [0,M) -> losses (N), lse (N) */
void me_softmax_xent_rows_forward(const float *sim, const int64_t *target, float *losses, float *lse,
                                  int64_t N, int64_t M, float scale) {
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= 65536)
    for (int64_t i = 0; i < N; i++) {
        const float *si = sim + i * M;
        const float m = xr_row_max(si, M, scale);
        const double S = xr_row_sum(si, M, scale, m);
        const double l = (double)m + log(S);
        const double li = l - (double)(scale * si[target[i]]);
        lse[i] = (float)l;
        losses[i] = (float)(li > 0.0 ? li : 0.0);
    }
}

/* sim (N,M), target (N), lse (N), weights (N) -> dsim (N,M), overwritten */
void me_softmax_xent_rows_backward(const float *sim, const int64_t *target, const float *lse,
                                   const float *weights, float *dsim, int64_t N, int64_t M, float scale) {
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= 65536)
    for (int64_t i = 0; i < N; i++) {
        const float a = weights[i] * scale;
        float *gi = dsim + i * M;
        xr_row_grad(sim + i * M, M, scale, lse[i], a, gi);
        gi[target[i]] -= a;
    }
}
