/* pair_weighting.c: the row losses of MultiSimilarity, Circle, GeneralizedLifted and LiftedStructure.
 * Declarations: engine.h section "pair_weighting.c".
 *
 * mat (N,M), labels (N) / ref_labels (M) or masks (N,M) -> losses (N), dmat (N,M) = d losses_i / d mat.
 * The "row" losses of pytorch-metric-learning's mat-based pair losses: for every anchor row i of a
 * similarity or distance matrix, a masked, numerically stable log-sum-exp over its positives and
 * one over its negatives, combined into one loss per row (losses/multi_similarity_loss.py,
 * circle_loss.py, lifted_structure_loss.py in PML 2.9.0; the formulas are in engine.h).
 *
 * Each row is independent: three passes over the row (exponents and their maxima; exponentials
 * and their sums, in double; scaling into d losses_i / d mat_ij), no allocation, no cross-row
 * reduction, so the result is bitwise identical for any thread count. The membership of a block
 * of columns (positive / negative / neither, from the labels or the masks) is first written as
 * 0/1 floats into two stack buffers, so the passes are branch-free float loops that vectorize
 * (`omp simd`, a polynomial expf). They are compiled three times, generic, AVX2+FMA and AVX-512,
 * chosen like the SGEMM micro-kernel (me_gemm_kernel_id: MANTISSA_EMBED_GEMM_KERNEL=generic
 * forces the portable code). The reducer's weights are applied by me_pairw_rows_backward.
 */
#include "engine.h"

#include <math.h>
#include <string.h>

/* FP compares may be if-converted (selects instead of branches) so the passes vectorize; this
 * only drops the guarantee about FP exception flags, never changes a value. */
#pragma GCC optimize("no-trapping-math")
#include "fast_expf.h"

#if defined(__x86_64__) || defined(__i386__)
#define ME_PW_X86 1
#else
#define ME_PW_X86 0
#endif

/* Below this many matrix entries a call runs on the calling thread (same result either way). */
#define PAR_MIN 32768
/* Columns per membership block (two float buffers of this size on the stack: 32 KiB). A row
 * with M <= PW_B computes its membership once; longer rows recompute it in each pass. */
#define PW_B 4096

#define ME_INLINE static inline __attribute__((always_inline))

/* exp(x) clamped to [ME_EXPF_LO, ME_EXPF_HI] (fast_expf.h); below, it returns ~2^-126 instead of
 * a smaller number: negligible here, where every sum holds a term exp(0) = 1. */
ME_INLINE float pw_expf(float x) {
    float a = x > ME_EXPF_HI ? ME_EXPF_HI : x;
    return me_expf_clamped(a < ME_EXPF_LO ? ME_EXPF_LO : a);
}

ME_INLINE float relu_f(float v) { return v > 0.0f ? v : 0.0f; }

/* The exponents on positives / negatives (p0, p1, p2 as in engine.h). */
ME_INLINE float term_pos(int kind, float x, float sg, float p0, float p1, float p2) {
    switch (kind) {
    case ME_PAIRW_MULTI_SIMILARITY: return p0 * (sg * (x - p2));            /* alpha margin(x, base) */
    case ME_PAIRW_CIRCLE: return (-p1 * relu_f((1.0f + p0) - x)) * (x - (1.0f - p0));
    default: return sg * (x - p0);                                         /* margin(x, pos_margin) */
    }
}
ME_INLINE float term_neg(int kind, float x, float sg, float p0, float p1, float p2) {
    switch (kind) {
    case ME_PAIRW_MULTI_SIMILARITY: return p1 * -(sg * (x - p2));           /* beta margin(base, x) */
    case ME_PAIRW_CIRCLE: return (p1 * relu_f(x - (-p0))) * (x - p0);
    default: return sg * (p1 - x);                                          /* margin(neg_margin, x) */
    }
}
/* d t / d x (Circle: the detached weight times the slope) */
ME_INLINE float slope_pos(int kind, float x, float sg, float p0, float p1) {
    return kind == ME_PAIRW_CIRCLE ? -p1 * relu_f((1.0f + p0) - x) : sg;
}
ME_INLINE float slope_neg(int kind, float x, float sg, float p0, float p1) {
    return kind == ME_PAIRW_CIRCLE ? p1 * relu_f(x - (-p0)) : -sg;
}

#define ROW_PARAMS const float *x, float *d, int64_t i, int64_t M, const int64_t *labels, \
    const int64_t *ref_labels, const uint8_t *pos_mask, const uint8_t *neg_mask, int exclude_self, \
    float sg, float p0, float p1, float p2
#define ROW_ARGS x, d, i, M, labels, ref_labels, pos_mask, neg_mask, exclude_self, sg, p0, p1, p2
#define MEMB_ARGS i, M, labels, ref_labels, pos_mask, neg_mask, exclude_self

/* Membership of columns [j0, j0 + n) of row i as 0/1 floats: fp (positive), fq (negative). */
ME_INLINE void memberships(const int kind, const int masked, int64_t i, int64_t M,
                           const int64_t *labels, const int64_t *ref_labels,
                           const uint8_t *pos_mask, const uint8_t *neg_mask, int exclude_self,
                           int64_t j0, int64_t n, float *fp, float *fq) {
    if (masked) {
        const uint8_t *pr = pos_mask + i * M + j0, *nr = neg_mask + i * M + j0;
        for (int64_t l = 0; l < n; l++) {
            int isp = pr[l] != 0;
            fp[l] = (float)isp;
            fq[l] = (float)(!isp & (nr[l] != 0));
        }
    } else {
        const int64_t li = labels[i];
        const int64_t *rl = ref_labels + j0;
        for (int64_t l = 0; l < n; l++) {
            int same = rl[l] == li;
            fp[l] = (float)same;
            fq[l] = (float)!same;
        }
        if (exclude_self && i >= j0 && i < j0 + n) fp[i - j0] = 0.0f;
    }
    if (kind == ME_PAIRW_NEG_LSE) memset(fp, 0, (size_t)n * sizeof(float));
}

/* one row x (M) -> d (M) = d loss / d x; returns the loss. kind and masked are constants. */
ME_INLINE float row_impl(const int kind, const int masked, ROW_PARAMS) {
    float fp[PW_B], fq[PW_B];
    const int one_block = M <= PW_B;
    float mp = -INFINITY, mn = -INFINITY, cnt_p = 0.0f, cnt_n = 0.0f;
    /* pass 1: exponents (in d), their maxima, the set sizes (exact in float below 2^24 per block) */
    for (int64_t j0 = 0; j0 < M; j0 += PW_B) {
        const int64_t n = M - j0 < PW_B ? M - j0 : PW_B;
        memberships(kind, masked, MEMB_ARGS, j0, n, fp, fq);
        const float *xb = x + j0;
        float *db = d + j0;
        float bp = 0.0f, bn = 0.0f;
        #pragma omp simd reduction(max : mp, mn) reduction(+ : bp, bn)
        for (int64_t l = 0; l < n; l++) {
            float xj = xb[l];
            float tp = term_pos(kind, xj, sg, p0, p1, p2);
            float tn = term_neg(kind, xj, sg, p0, p1, p2);
            int isp = fp[l] != 0.0f, isn = fq[l] != 0.0f;
            db[l] = isp ? tp : (isn ? tn : 0.0f);
            float tpm = isp ? tp : -INFINITY, tnm = isn ? tn : -INFINITY;
            mp = tpm > mp ? tpm : mp;
            mn = tnm > mn ? tnm : mn;
            bp += fp[l];
            bn += fq[l];
        }
        cnt_p += bp;
        cnt_n += bn;
    }
    const int has_p = cnt_p > 0.0f, has_n = cnt_n > 0.0f;
    if ((kind == ME_PAIRW_CIRCLE && !(has_p && has_n)) || (kind == ME_PAIRW_NEG_LSE && !has_n) ||
        !(has_p || has_n)) {
        memset(d, 0, (size_t)M * sizeof(float));
        return kind == ME_PAIRW_NEG_LSE ? -INFINITY : 0.0f;
    }
    if (kind == ME_PAIRW_MULTI_SIMILARITY) { /* the "+1" of log(1 + sum exp): a term exp(0) */
        if (mp < 0.0f) mp = 0.0f;
        if (mn < 0.0f) mn = 0.0f;
    }
    const float mpf = has_p ? mp : 0.0f, mnf = has_n ? mn : 0.0f;
    /* pass 2: exponentials (in d) and their sums */
    double sp = 0.0, sn = 0.0;
    for (int64_t j0 = 0; j0 < M; j0 += PW_B) {
        const int64_t n = M - j0 < PW_B ? M - j0 : PW_B;
        if (!one_block) memberships(kind, masked, MEMB_ARGS, j0, n, fp, fq);
        float *db = d + j0;
        #pragma omp simd reduction(+ : sp, sn)
        for (int64_t l = 0; l < n; l++) {
            int isp = fp[l] != 0.0f, isn = fq[l] != 0.0f;
            float e = pw_expf(db[l] - (isp ? mpf : mnf));
            e = (isp | isn) ? e : 0.0f;
            db[l] = e;
            sp += isp ? (double)e : 0.0;
            sn += isn ? (double)e : 0.0;
        }
    }
    if (kind == ME_PAIRW_MULTI_SIMILARITY) {
        sp += exp(-(double)mpf);
        sn += exp(-(double)mnf);
    }
    const double lp = has_p ? (double)mpf + log(sp) : 0.0;
    const double ln = has_n ? (double)mnf + log(sn) : 0.0;
    /* the row loss and the factors of pass 3: d_j = e_j * c * slope_j */
    double loss, cp = 0.0, cn = 0.0;
    switch (kind) {
    case ME_PAIRW_MULTI_SIMILARITY:
        loss = lp / p0 + ln / p1;
        if (has_p) cp = 1.0 / sp;
        if (has_n) cn = 1.0 / sn;
        break;
    case ME_PAIRW_CIRCLE: {
        double z = lp + ln, w;
        if (z > 20.0) { /* torch's softplus threshold */
            loss = z;
            w = 1.0;
        } else {
            double ez = exp(z);
            loss = log1p(ez);
            w = ez / (1.0 + ez);
        }
        cp = w / sp;
        cn = w / sn;
        break;
    }
    case ME_PAIRW_GENERALIZED_LIFTED: {
        double z = lp + ln;
        loss = z > 0.0 ? z : 0.0;
        if (z > 0.0) {
            if (has_p) cp = 1.0 / sp;
            if (has_n) cn = 1.0 / sn;
        }
        break;
    }
    default: /* NEG_LSE */
        loss = ln;
        cn = 1.0 / sn;
        break;
    }
    /* pass 3: d loss / d x */
    const float fcp = (float)cp, fcn = (float)cn;
    for (int64_t j0 = 0; j0 < M; j0 += PW_B) {
        const int64_t n = M - j0 < PW_B ? M - j0 : PW_B;
        if (!one_block) memberships(kind, masked, MEMB_ARGS, j0, n, fp, fq);
        const float *xb = x + j0;
        float *db = d + j0;
        #pragma omp simd
        for (int64_t l = 0; l < n; l++) {
            float xj = xb[l];
            int isp = fp[l] != 0.0f, isn = fq[l] != 0.0f;
            float c = isp ? fcp * slope_pos(kind, xj, sg, p0, p1) : fcn * slope_neg(kind, xj, sg, p0, p1);
            db[l] = (isp | isn) ? db[l] * c : 0.0f;
        }
    }
    return (float)loss;
}

/* One row of any kind: the (kind, masked) switch resolves to a specialized copy of row_impl. */
#define PW_ROW_DISPATCH                                                                      \
    switch (kind * 2 + (pos_mask != NULL)) {                                                 \
    case 0: return row_impl(0, 0, ROW_ARGS);                                                 \
    case 1: return row_impl(0, 1, ROW_ARGS);                                                 \
    case 2: return row_impl(1, 0, ROW_ARGS);                                                 \
    case 3: return row_impl(1, 1, ROW_ARGS);                                                 \
    case 4: return row_impl(2, 0, ROW_ARGS);                                                 \
    case 5: return row_impl(2, 1, ROW_ARGS);                                                 \
    case 6: return row_impl(3, 0, ROW_ARGS);                                                 \
    default: return row_impl(3, 1, ROW_ARGS);                                                \
    }

typedef float (*pw_row_fn)(int kind, ROW_PARAMS);

static float row_generic(int kind, ROW_PARAMS) { PW_ROW_DISPATCH }
#if ME_PW_X86
__attribute__((target("avx2,fma"))) static float row_avx2(int kind, ROW_PARAMS) { PW_ROW_DISPATCH }
__attribute__((target("avx512f,fma"))) static float row_avx512(int kind, ROW_PARAMS) { PW_ROW_DISPATCH }
#endif

static pw_row_fn pick_row(void) {
#if ME_PW_X86
    switch (me_gemm_kernel_id()) {
    case 2: return row_avx512;
    case 1: return row_avx2;
    default: break;
    }
#endif
    return row_generic;
}

/* mat (N,M), labels (N) + ref_labels (M) or pos_mask + neg_mask (N,M) -> losses (N), dmat (N,M) */
void me_pairw_rows_forward(int kind, const float *mat, const int64_t *labels,
                           const int64_t *ref_labels, const uint8_t *pos_mask,
                           const uint8_t *neg_mask, float *losses, float *dmat, int64_t N,
                           int64_t M, float p0, float p1, float p2, int exclude_self,
                           int inverted) {
    const float sg = inverted ? -1.0f : 1.0f;
    const pw_row_fn row = pick_row();
    if (kind < 0 || kind > ME_PAIRW_NEG_LSE) kind = ME_PAIRW_NEG_LSE; /* callers validate */
    if (pos_mask == NULL || neg_mask == NULL) pos_mask = neg_mask = NULL;
    exclude_self = exclude_self != 0;
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        losses[i] = row(kind, mat + i * M, dmat + i * M, i, M, labels, ref_labels, pos_mask,
                        neg_mask, exclude_self, sg, p0, p1, p2);
    }
}

/* dlosses (N), dmat (N,M) in place: dmat[i, :] *= dlosses[i] */
void me_pairw_rows_backward(const float *dlosses, float *dmat, int64_t N, int64_t M) {
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        const float s = dlosses[i];
        float *di = dmat + i * M;
        if (s == 0.0f) {
            memset(di, 0, (size_t)M * sizeof(float));
        } else {
            for (int64_t j = 0; j < M; j++) di[j] *= s;
        }
    }
}
