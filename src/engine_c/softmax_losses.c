/* softmax_losses.c: fused softmax-over-pairs reductions (NTXent, SupCon) and the row softmax
 * negative log-likelihood of NCA / NPairs / Instance, over a similarity or distance matrix.
 * Declarations and contracts: engine.h section "softmax_losses.c".
 *
 * Semantics are pytorch-metric-learning 2.9.0's (losses/ntxent_loss.py, supcon_loss.py,
 * nca_loss.py, n_pairs_loss.py, instance_loss.py); the math is re-derived, not copied:
 *  - every log-sum-exp is taken around its own maximum, in double;
 *  - the "all pairs" kernels work one anchor row at a time (OpenMP static over NCHUNK fixed
 *    row chunks, independent of the thread count); the per-chunk partial sums are added in
 *    chunk order, so results are bitwise identical for any thread count;
 *  - nothing of size N*M*M and no pair list is ever built: a row needs O(1) scratch besides the
 *    output row of dsim, which holds the exponentials until the row's gradient is known;
 *  - no allocation at all (the chunk partials live on the stack).
 */
/* The exponential loops only vectorize without trapping-math (float->int conversions and
 * selects); nothing here reads the floating-point exception flags. No FMA contraction, so that
 * z - max is exactly 0 at the maximum (SupCon counts those entries apart). */
#pragma GCC optimize("no-trapping-math", "fp-contract=off")
#include "engine.h"
#include "fast_expf.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define NCHUNK 64
#define PAR_MIN 16384 /* below this many matrix entries the kernels run on the calling thread */
#define SUM_BLOCK 128 /* exponentials summed in float over blocks of this many, the blocks in double */
#define ME_INLINE static inline __attribute__((always_inline))

static inline int64_t chunk_lo(int64_t c, int64_t n) { return (c * n) / NCHUNK; }

/* log(exp(a) + exp(b)), either may be -inf */
static inline double logaddexp(double a, double b) {
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

static void scale_rows(float *a, int64_t N, int64_t M, float s) {
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        float *ai = a + i * M;
        for (int64_t j = 0; j < M; j++) ai[j] *= s;
    }
}

/* exp(x) for x <= 0 (fast_expf.h, ~1 ulp); 0 below -87 (and for -inf). Branch-free, so the row
 * loops over it vectorize. */
ME_INLINE float exp_nonpos(float x) {
    const float y = me_expf_clamped(x < -87.0f ? -87.0f : x);
    return x < -87.0f ? 0.0f : y;
}

/* ------------------------------------------------------------------ NTXent */

/* log(FLT_MIN): PML adds torch.finfo(float32).tiny inside the log of the positive's probability */
#define LOG_TINY (-87.33654475055310898657)

/* The per-row work of both "all pairs" kernels. out[0] += weighted loss sum; cnt[0..2] +=
 * (n_pos, n_neg or rows-with-a-positive, n_nonzero). Instantiated per instruction set below. */
typedef struct {
    const int64_t *ref_labels;
    const float *weights;
    float *losses, *dsim;
    int64_t M;
    float cf;   /* z = cf * sim (float, as PML) */
    int reduction;
} row_args;

ME_INLINE void ntxent_row_body(const row_args *A, const float *si, int64_t i, int64_t li, int64_t self,
                               double *out, int64_t *cnt) {
    const int64_t M = A->M;
    const int64_t *rl = A->ref_labels;
    const float cf = A->cf;
    float *gi = A->dsim ? A->dsim + i * M : NULL;
    float *oi = A->losses ? A->losses + i * M : NULL;
    const float *wi = A->weights ? A->weights + i * M : NULL;
    /* pass 1: max over the negatives of the row, counts */
    float m = -INFINITY;
    int64_t rp = 0, rn = 0;
    #pragma omp simd reduction(max:m) reduction(+:rp, rn)
    for (int64_t j = 0; j < M; j++) {
        const int neg = rl[j] != li;
        const float z = cf * si[j];
        m = (neg && z > m) ? z : m;
        rn += neg;
        rp += !neg && j != self;
    }
    /* pass 2: S = sum_neg exp(z - m), L = m + log S; the exponentials wait in the gradient row */
    double S = 0.0;
    if (rn > 0) {
        for (int64_t jb = 0; jb < M; jb += SUM_BLOCK) {
            const int64_t je = jb + SUM_BLOCK < M ? jb + SUM_BLOCK : M;
            float s = 0.0f;
            if (gi) {
                #pragma omp simd reduction(+:s)
                for (int64_t j = jb; j < je; j++) {
                    const float e = exp_nonpos(cf * si[j] - m);
                    const float v = rl[j] != li ? e : 0.0f;
                    gi[j] = v;
                    s += v;
                }
            } else {
                #pragma omp simd reduction(+:s)
                for (int64_t j = jb; j < je; j++) {
                    const float e = exp_nonpos(cf * si[j] - m);
                    s += rl[j] != li ? e : 0.0f;
                }
            }
            S += (double)s;
        }
    } else if (gi) {
        memset(gi, 0, (size_t)M * sizeof(float));
    }
    if (oi) memset(oi, 0, (size_t)M * sizeof(float));
    const double L = rn > 0 ? (double)m + log(S) : -INFINITY;
    /* pass 3: one term per positive pair (few per row: scalar, double) */
    double B = 0.0, lsum = 0.0;
    int64_t nnz = 0;
    const double c = (double)cf;
    for (int64_t j = 0; j < M; j++) {
        if (rl[j] != li || j == self) continue;
        const double z = (double)(cf * si[j]);
        /* x = log r, r = exp(z) / (exp(z) + exp(L)): the positive's probability */
        const double x = (L == -INFINITY) ? 0.0 : -logaddexp(0.0, L - z);
        double l = -logaddexp(x, LOG_TINY); /* -log(r + tiny) */
        if (!(l > 0.0)) l = 0.0;
        const int nz = l > 0.0;
        double g;
        if (A->reduction == ME_SOFTMAX_WEIGHTS) g = wi ? (double)wi[j] : 0.0;
        else if (A->reduction == ME_SOFTMAX_AVG_NON_ZERO) g = nz ? 1.0 : 0.0;
        else g = 1.0;
        lsum += g * l;
        nnz += nz;
        if (oi) oi[j] = (float)l;
        if (gi) {
            /* dl/dz = -w (1 - r) at the positive, +w (1 - r) q_n at negative n, where
             * w = r / (r + tiny) and q_n = exp(z_n - L) (softmax over the negatives) */
            const double one_minus_r = (L == -INFINITY) ? 0.0 : -expm1(x);
            const double w = exp(x - logaddexp(x, LOG_TINY));
            const double d = g * w * one_minus_r;
            B += d;
            gi[j] = (float)(-d * c);
        }
    }
    if (gi && rn > 0) {
        const float sc = (float)(B / S * c);
        #pragma omp simd
        for (int64_t j = 0; j < M; j++)
            gi[j] = rl[j] != li ? gi[j] * sc : gi[j];
    }
    out[0] += lsum;
    cnt[0] += rp; cnt[1] += rn; cnt[2] += nnz;
}

ME_INLINE void supcon_row_body(const row_args *A, const float *si, int64_t i, int64_t li, int64_t self,
                               double *out, int64_t *cnt) {
    const int64_t M = A->M;
    const int64_t *rl = A->ref_labels;
    const float cf = A->cf;
    float *gi = A->dsim ? A->dsim + i * M : NULL;
    float m = -INFINITY;
    int64_t rp = 0;
    #pragma omp simd reduction(max:m) reduction(+:rp)
    for (int64_t j = 0; j < M; j++) {
        const float z = cf * si[j];
        const int keep = j != self;
        m = (keep && z > m) ? z : m;
        rp += keep && rl[j] == li;
    }
    double l = 0.0, S = 0.0, T = 0.0, zpos = 0.0;
    if (rp > 0) {
        for (int64_t jb = 0; jb < M; jb += SUM_BLOCK) {
            const int64_t je = jb + SUM_BLOCK < M ? jb + SUM_BLOCK : M;
            /* s: the exponentials below the max; t: how many entries equal the max (each
             * contributes exactly 1); sp: the positives' z - m */
            float s = 0.0f, t = 0.0f, sp = 0.0f;
            if (gi) {
                #pragma omp simd reduction(+:s, t, sp)
                for (int64_t j = jb; j < je; j++) {
                    const float dz = cf * si[j] - m;
                    const float e = exp_nonpos(dz);
                    const int keep = j != self;
                    gi[j] = keep ? e : 0.0f;
                    s += (keep && dz < 0.0f) ? e : 0.0f;
                    t += (keep && dz == 0.0f) ? 1.0f : 0.0f;
                    sp += (keep && rl[j] == li) ? dz : 0.0f;
                }
            } else {
                #pragma omp simd reduction(+:s, t, sp)
                for (int64_t j = jb; j < je; j++) {
                    const float dz = cf * si[j] - m;
                    const int keep = j != self;
                    s += (keep && dz < 0.0f) ? exp_nonpos(dz) : 0.0f;
                    t += (keep && dz == 0.0f) ? 1.0f : 0.0f;
                    sp += (keep && rl[j] == li) ? dz : 0.0f;
                }
            }
            S += (double)s;
            T += (double)t;
            zpos += (double)sp;
        }
        /* l = lse - mean_pos z, both relative to the row max m; log(T + S) as
         * log T + log1p(S / T) keeps a loss far below float's epsilon (a lone positive at the
         * max with negligible rivals) instead of rounding it to 0 */
        l = log(T) + log1p(S / T) - zpos / (double)rp;
        S += T;
    }
    const int nz = l > 0.0;
    double g;
    if (A->reduction == ME_SOFTMAX_WEIGHTS) g = A->weights ? (double)A->weights[i] : 0.0;
    else if (A->reduction == ME_SOFTMAX_AVG_NON_ZERO) g = nz ? 1.0 : 0.0;
    else g = 1.0;
    if (A->losses) A->losses[i] = (float)l;
    if (gi) {
        if (rp == 0 || g == 0.0) {
            memset(gi, 0, (size_t)M * sizeof(float));
        } else {
            /* dl/dz_ij = softmax_ij - [j positive] / n_pos */
            const double c = (double)cf;
            const float a = (float)(g * c / S), b = (float)(g * c / (double)rp);
            #pragma omp simd
            for (int64_t j = 0; j < M; j++)
                gi[j] = a * gi[j] - ((rl[j] == li && j != self) ? b : 0.0f);
        }
    }
    out[0] += g * l;
    cnt[0] += rp; cnt[1] += rp > 0; cnt[2] += nz;
}

typedef void (*row_fn)(const row_args *, const float *, int64_t, int64_t, int64_t, double *, int64_t *);

static void ntxent_row_generic(const row_args *A, const float *si, int64_t i, int64_t li, int64_t self,
                               double *out, int64_t *cnt) { ntxent_row_body(A, si, i, li, self, out, cnt); }
static void supcon_row_generic(const row_args *A, const float *si, int64_t i, int64_t li, int64_t self,
                               double *out, int64_t *cnt) { supcon_row_body(A, si, i, li, self, out, cnt); }
#if (defined(__x86_64__) || defined(__i386__)) && !defined(ME_NO_AVX2_ROWS)
#define HAVE_AVX2_ROWS 1
__attribute__((target("avx2,fma")))
static void ntxent_row_avx2(const row_args *A, const float *si, int64_t i, int64_t li, int64_t self,
                            double *out, int64_t *cnt) { ntxent_row_body(A, si, i, li, self, out, cnt); }
__attribute__((target("avx2,fma")))
static void supcon_row_avx2(const row_args *A, const float *si, int64_t i, int64_t li, int64_t self,
                            double *out, int64_t *cnt) { supcon_row_body(A, si, i, li, self, out, cnt); }
#endif

static int use_avx2(void) {
#ifdef HAVE_AVX2_ROWS
    const int want = ME_CPU_AVX2 | ME_CPU_FMA;
    return (me_cpu_features() & want) == want;
#else
    return 0;
#endif
}

/* The shared driver: rows in NCHUNK fixed chunks, partial sums added in chunk order. */
static double pair_softmax_all(int which, const float *sim, const int64_t *labels, const int64_t *ref_labels,
                               const float *weights, float *losses, float *dsim, int64_t N, int64_t M,
                               float temperature, int exclude_self, int inverted, int reduction,
                               double *stats) {
    row_fn fn;
#ifdef HAVE_AVX2_ROWS
    if (use_avx2()) fn = which == 0 ? ntxent_row_avx2 : supcon_row_avx2;
    else
#endif
    fn = which == 0 ? ntxent_row_generic : supcon_row_generic;
    row_args A = {ref_labels, weights, losses, dsim, M,
                  (float)((inverted ? 1.0 : -1.0) / (double)temperature), reduction};
    double part[NCHUNK][4];
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t ch = 0; ch < NCHUNK; ch++) {
        double out = 0.0;
        int64_t cnt[3] = {0, 0, 0};
        for (int64_t i = chunk_lo(ch, N); i < chunk_lo(ch + 1, N); i++)
            fn(&A, sim + i * M, i, labels[i], exclude_self ? i : -1, &out, cnt);
        part[ch][0] = out; part[ch][1] = (double)cnt[0]; part[ch][2] = (double)cnt[1]; part[ch][3] = (double)cnt[2];
    }
    double tot[4] = {0, 0, 0, 0};
    for (int ch = 0; ch < NCHUNK; ch++)
        for (int k = 0; k < 4; k++) tot[k] += part[ch][k];
    double den = 1.0;
    if (reduction == ME_SOFTMAX_MEAN) den = which == 0 ? tot[1] : (double)N;
    else if (reduction == ME_SOFTMAX_AVG_NON_ZERO) den = tot[3];
    const double value = den > 0 ? tot[0] / den : 0.0;
    if (dsim && reduction != ME_SOFTMAX_WEIGHTS) scale_rows(dsim, N, M, den > 0 ? (float)(1.0 / den) : 0.0f);
    if (stats) { stats[0] = value; stats[1] = tot[1]; stats[2] = tot[2]; stats[3] = tot[3]; }
    return value;
}

/* sim (N,M), labels (N), ref_labels (M), weights (N,M) or NULL -> losses (N,M) or NULL,
 * dsim (N,M) or NULL; stats (4) */
double me_ntxent_all(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                     const float *weights, float *losses, float *dsim, int64_t N, int64_t M,
                     float temperature, int exclude_self, int inverted, int reduction,
                     double *stats) {
    return pair_softmax_all(0, sim, labels, ref_labels, weights, losses, dsim, N, M, temperature,
                            exclude_self, inverted, reduction, stats);
}

/* ------------------------------------------------------------------ SupCon */

/* sim (N,M), labels (N), ref_labels (M), weights (N) or NULL -> losses (N) or NULL,
 * dsim (N,M) or NULL; stats (4) */
double me_supcon_all(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                     const float *weights, float *losses, float *dsim, int64_t N, int64_t M,
                     float temperature, int exclude_self, int inverted, int reduction,
                     double *stats) {
    return pair_softmax_all(1, sim, labels, ref_labels, weights, losses, dsim, N, M, temperature,
                            exclude_self, inverted, reduction, stats);
}

/* ------------------------------------------------------- row softmax NLL (NCA, NPairs, Instance) */

/* sim (N,M), labels (N), ref_labels (M) -> losses (N), lse (N,2), valid (N); returns #valid rows */
int64_t me_softmax_nll_forward(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                               float *losses, double *lse, uint8_t *valid, int64_t N, int64_t M,
                               float scale, int exclude_self, int inverted, double max_loss) {
    int64_t part[NCHUNK];
    const double c = (inverted ? 1.0 : -1.0) * (double)scale;
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t ch = 0; ch < NCHUNK; ch++) {
        int64_t nv = 0;
        for (int64_t i = chunk_lo(ch, N); i < chunk_lo(ch + 1, N); i++) {
            const float *si = sim + i * M;
            const int64_t li = labels[i];
            const int64_t self = exclude_self ? i : -1;
            double m = -INFINITY, mp = -INFINITY;
            for (int64_t j = 0; j < M; j++) {
                if (j == self) continue;
                const double z = c * (double)si[j];
                if (z > m) m = z;
                if (ref_labels[j] == li && z > mp) mp = z;
            }
            double la = -INFINITY, lp = -INFINITY;
            if (m > -INFINITY) {
                double S = 0.0, Sp = 0.0;
                for (int64_t j = 0; j < M; j++) {
                    if (j == self) continue;
                    const double z = c * (double)si[j];
                    S += exp(z - m);
                    if (ref_labels[j] == li) Sp += exp(z - mp);
                }
                la = m + log(S);
                if (mp > -INFINITY) lp = mp + log(Sp);
            }
            const double l = la - lp;
            const int ok = lp > -INFINITY && la - mp < max_loss;
            lse[2 * i] = la;
            lse[2 * i + 1] = lp;
            losses[i] = ok ? (float)(l > 0.0 ? l : 0.0) : 0.0f;
            valid[i] = (uint8_t)ok;
            nv += ok;
        }
        part[ch] = nv;
    }
    int64_t tot = 0;
    for (int ch = 0; ch < NCHUNK; ch++) tot += part[ch];
    return tot;
}

/* sim (N,M), lse (N,2), weights (N) -> dsim (N,M) (overwritten) */
void me_softmax_nll_backward(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                             const double *lse, const float *weights, float *dsim, int64_t N,
                             int64_t M, float scale, int exclude_self, int inverted) {
    const double c = (inverted ? 1.0 : -1.0) * (double)scale;
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        const float *si = sim + i * M;
        float *gi = dsim + i * M;
        const double w = (double)weights[i];
        const double la = lse[2 * i], lp = lse[2 * i + 1];
        if (w == 0.0 || lp == -INFINITY) {
            memset(gi, 0, (size_t)M * sizeof(float));
            continue;
        }
        const int64_t li = labels[i];
        const int64_t self = exclude_self ? i : -1;
        for (int64_t j = 0; j < M; j++) {
            if (j == self) { gi[j] = 0.0f; continue; }
            const double z = c * (double)si[j];
            double d = exp(z - la);
            if (ref_labels[j] == li) d -= exp(z - lp);
            gi[j] = (float)(w * c * d);
        }
    }
}
