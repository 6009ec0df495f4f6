/* ranking_losses.c: the O(N^3) loops of PNPLoss (smoothed ranks) and DynamicSoftMarginLoss
 * (the all-triplets histogram). Declarations: engine.h section "ranking_losses.c"; numpy twins in
 * mantissa_embed/_reference. The O(N^2) parts of these losses are numpy. Inputs are float32 matrices,
 * accumulations and outputs are double (the losses are sums of many small terms).
 * Work is split over anchors (rows): each anchor writes only its own row / its own slot, and the
 * per-anchor partial sums are combined in anchor order by the caller, so results are bitwise
 * identical for any thread count. */
#include "engine.h"

#include <math.h>
#include <string.h>

#define RK_PAR_MIN 64  /* rows below this run on one thread */

/* PML's temperature sigmoid of z = diff / temp: exponent -z clamped to [-50, 50];
 * *dy = dy/dz (0 where the clamp is active). */
static inline double rk_sigmoid(double z, double *dy) {
    const double e = -z;
    if (e > 50.0) { *dy = 0.0; return 1.9287498479639178e-22; }   /* 1 / (1 + exp(50)) */
    if (e < -50.0) { *dy = 0.0; return 1.0; }                      /* 1 / (1 + exp(-50)) == 1 in double */
    const double y = 1.0 / (1.0 + exp(e));
    *dy = y * (1.0 - y);
    return y;
}

/* PNP smoothed ranks.
 * sim (N,N) f32, labels (N,) -> rk (N,N) f64: rk[i,j] = sum_{k: y_k != y_i} sig((sim[i,k] - sim[i,j]) / anneal)
 * for every j with y_j == y_i (j == i included); rk[i,j] = 0 elsewhere. */
void me_pnp_rank_forward(const float *sim, const int64_t *labels, double *rk, int64_t N, double anneal) {
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N >= RK_PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        const float *si = sim + i * N;
        double *ri = rk + i * N;
        const int64_t yi = labels[i];
        for (int64_t j = 0; j < N; j++) {
            ri[j] = 0.0;
            if (labels[j] != yi) continue;
            const double sij = si[j];
            double acc = 0.0, dy;
            for (int64_t k = 0; k < N; k++) {
                if (labels[k] == yi) continue;
                acc += rk_sigmoid(((double)si[k] - sij) / anneal, &dy);
            }
            ri[j] = acc;
        }
    }
}

/* Gradient of me_pnp_rank_forward.
 * drk (N,N) f64 (dL/drk; read only where y_j == y_i), sim (N,N) f32, labels (N,) -> dsim (N,N) f64 (overwritten) */
void me_pnp_rank_backward(const double *drk, const float *sim, const int64_t *labels, double *dsim,
                          int64_t N, double anneal) {
    const double inv = 1.0 / anneal;
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N >= RK_PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        const float *si = sim + i * N;
        const double *gi = drk + i * N;
        double *di = dsim + i * N;
        const int64_t yi = labels[i];
        memset(di, 0, (size_t)N * sizeof(double));
        for (int64_t j = 0; j < N; j++) {
            if (labels[j] != yi || gi[j] == 0.0) continue;
            const double sij = si[j], g = gi[j] * inv;
            double acc = 0.0, dy;
            for (int64_t k = 0; k < N; k++) {
                if (labels[k] == yi) continue;
                rk_sigmoid(((double)si[k] - sij) * inv, &dy);
                const double w = g * dy;
                di[k] += w;
                acc += w;
            }
            di[j] -= acc;
        }
    }
}

/* The bin of floor(t) as an int64 in [-2, nb + 1]: a NaN (a NaN distance) gives -2 and a value
 * beyond the int64 range its end, so the cast is defined and every index stays in bounds (bins
 * outside [0, nb) are dropped or clipped by the callers). */
static inline int64_t dsm_bin(double fl, int64_t nb) {
    if (!(fl >= -2.0)) return -2;  /* also NaN */
    if (fl > (double)(nb + 1)) return nb + 1;
    return (int64_t)fl;
}

/* ---- DynamicSoftMargin over all triplets (a, p, n) of the labels:
 * labels[a] == ref_labels[p] (p != a when exclude_self), labels[a] != ref_labels[n];
 * x = mat[a,p] - mat[a,n], t = (x - min_val) / delta, r = floor(t), f = t - r. */

/* mat (N,M) f32 -> u_rows (N, nb) f64: per anchor, sum of momentum*(1-f) on bin r and momentum*f on
 * bin r+1 (bins outside [0, nb) dropped); counts (N,) f64: triplets per anchor. */
void me_dsm_triplet_hist(const float *mat, const int64_t *labels, const int64_t *ref_labels,
                         int64_t N, int64_t M, int exclude_self, double min_val, double delta,
                         int64_t nb, double momentum, double *u_rows, double *counts) {
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N >= RK_PAR_MIN)
    for (int64_t a = 0; a < N; a++) {
        const float *ma = mat + a * M;
        double *u = u_rows + a * nb;
        const int64_t ya = labels[a];
        memset(u, 0, (size_t)nb * sizeof(double));
        double cnt = 0.0;
        for (int64_t p = 0; p < M; p++) {
            if (ref_labels[p] != ya || (exclude_self && p == a)) continue;
            const double dp = ma[p];
            for (int64_t n = 0; n < M; n++) {
                if (ref_labels[n] == ya) continue;
                const double t = (dp - (double)ma[n] - min_val) / delta;
                const double fl = floor(t);
                const double f = t - fl;
                const int64_t r = dsm_bin(fl, nb);
                if (r >= 0 && r < nb) u[r] += momentum * (1.0 - f);
                if (r + 1 >= 0 && r + 1 < nb) u[r + 1] += momentum * f;
                cnt += 1.0;
            }
        }
        counts[a] = cnt;
    }
}

/* cdf (nb) f64 -> loss_rows (N) f64: per anchor sum of cdf[rc] * x; by_bin_rows (N, nb): per anchor
 * sum of x in each look-up bin rc = clip(r, 0, nb - 1). */
void me_dsm_triplet_loss(const float *mat, const int64_t *labels, const int64_t *ref_labels,
                         int64_t N, int64_t M, int exclude_self, double min_val, double delta,
                         int64_t nb, const double *cdf, double *loss_rows, double *by_bin_rows) {
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N >= RK_PAR_MIN)
    for (int64_t a = 0; a < N; a++) {
        const float *ma = mat + a * M;
        double *bb = by_bin_rows + a * nb;
        const int64_t ya = labels[a];
        memset(bb, 0, (size_t)nb * sizeof(double));
        double acc = 0.0;
        for (int64_t p = 0; p < M; p++) {
            if (ref_labels[p] != ya || (exclude_self && p == a)) continue;
            const double dp = ma[p];
            for (int64_t n = 0; n < M; n++) {
                if (ref_labels[n] == ya) continue;
                const double x = dp - (double)ma[n];
                int64_t r = dsm_bin(floor((x - min_val) / delta), nb);
                r = r < 0 ? 0 : (r > nb - 1 ? nb - 1 : r);
                acc += cdf[r] * x;
                bb[r] += x;
            }
        }
        loss_rows[a] = acc;
    }
}

/* dL/dx = scale * cdf[rc] + momentum * (g_u[r+1] - g_u[r]) / delta (terms of bins outside [0, nb)
 * dropped); dmat (N,M) f32 (overwritten): dmat[a,p] += dL/dx, dmat[a,n] -= dL/dx.
 * work (N,M) f64 scratch (the row sums are accumulated in double). */
void me_dsm_triplet_backward(const float *mat, const int64_t *labels, const int64_t *ref_labels,
                             int64_t N, int64_t M, int exclude_self, double min_val, double delta,
                             int64_t nb, const double *cdf, const double *g_u, double scale,
                             double momentum, float *dmat, double *work) {
    const double mom = momentum / delta;
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N >= RK_PAR_MIN)
    for (int64_t a = 0; a < N; a++) {
        const float *ma = mat + a * M;
        float *da = dmat + a * M;
        double *wa = work + a * M;
        const int64_t ya = labels[a];
        memset(wa, 0, (size_t)M * sizeof(double));
        for (int64_t p = 0; p < M; p++) {
            if (ref_labels[p] != ya || (exclude_self && p == a)) continue;
            const double dp = ma[p];
            double gp = 0.0;
            for (int64_t n = 0; n < M; n++) {
                if (ref_labels[n] == ya) continue;
                const double t = (dp - (double)ma[n] - min_val) / delta;
                const int64_t r = dsm_bin(floor(t), nb);
                const int64_t rc = r < 0 ? 0 : (r > nb - 1 ? nb - 1 : r);
                double g = scale * cdf[rc];
                if (r + 1 >= 0 && r + 1 < nb) g += mom * g_u[r + 1];
                if (r >= 0 && r < nb) g -= mom * g_u[r];
                gp += g;
                wa[n] -= g;
            }
            wa[p] += gp;
        }
        for (int64_t q = 0; q < M; q++) da[q] = (float)wa[q];
    }
}
