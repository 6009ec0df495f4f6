/* mining.c: triplet selection over a distance / similarity matrix (TripletMarginMiner) and over
 * embeddings (AngularMiner). Two passes: *_count gives the number of selected triplets per anchor
 * row (rows in parallel), the caller takes the prefix sum, *_fill writes (a, p, n) int64 at each
 * row's offset. The output is sorted by (a, p, n), as PML's torch.where over an (N, M, M) mask.
 * No allocation; memory = the caller's output + counts. */
#include <math.h>
#include <stdint.h>

#include "engine.h"

/* Parallel regions follow mantissa_embed.set_num_threads (me_get_num_threads) and are skipped
 * below this many (anchor, candidate, candidate) visits: under it a fork/join costs more than
 * the mining, and on a busy machine a 2-thread region waits for a descheduled worker. */
#define ME_MINE_PAR_MIN ((int64_t)1 << 20)

/* the kept-triplet rule of TripletMarginMiner on tm = an - ap (distance) or ap - an (similarity),
 * in float32 as PML's tensor arithmetic. */
static inline int me_tm_keep(float ap, float an, int kind, float margin, int inverted) {
    float tm = inverted ? ap - an : an - ap;
    switch (kind) {
        case ME_MINE_ALL: return tm <= margin;
        case ME_MINE_HARD: return tm <= margin && tm <= 0.0f;
        case ME_MINE_SEMIHARD: return tm <= margin && tm > 0.0f;
        case ME_MINE_EASY: return tm > margin;
        default: return 1; /* ME_MINE_EVERY */
    }
}

/* mat (N,M), labels (N), ref_labels (M) -> counts (N): the triplets each anchor selects */
void me_triplet_mine_count(const float *mat, const int64_t *labels, const int64_t *ref_labels,
                           int64_t N, int64_t M, int exclude_self, int kind, float margin,
                           int inverted, int64_t *counts) {
    int64_t i;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M * M >= ME_MINE_PAR_MIN)
    for (i = 0; i < N; i++) {
        const float *row = mat + i * M;
        const int64_t la = labels[i];
        int64_t c = 0;
        for (int64_t p = 0; p < M; p++) {
            if (ref_labels[p] != la || (exclude_self && p == i)) continue;
            const float ap = row[p];
            for (int64_t n = 0; n < M; n++) {
                if (ref_labels[n] == la) continue;
                c += me_tm_keep(ap, row[n], kind, margin, inverted);
            }
        }
        counts[i] = c;
    }
}

/* the same selection, offsets (N+1) -> a, p_out, n_out (offsets[N]) sorted by (a, p, n) */
void me_triplet_mine_fill(const float *mat, const int64_t *labels, const int64_t *ref_labels,
                          int64_t N, int64_t M, int exclude_self, int kind, float margin,
                          int inverted, const int64_t *offsets, int64_t *a, int64_t *p_out,
                          int64_t *n_out) {
    int64_t i;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M * M >= ME_MINE_PAR_MIN)
    for (i = 0; i < N; i++) {
        const float *row = mat + i * M;
        const int64_t la = labels[i];
        int64_t k = offsets[i];
        const int64_t end = offsets[i + 1];
        if (k == end) continue;
        for (int64_t p = 0; p < M; p++) {
            if (ref_labels[p] != la || (exclude_self && p == i)) continue;
            const float ap = row[p];
            for (int64_t n = 0; n < M; n++) {
                if (ref_labels[n] == la) continue;
                if (me_tm_keep(ap, row[n], kind, margin, inverted) && k < end) {
                    a[k] = i;
                    p_out[k] = p;
                    n_out[k] = n;
                    k++;
                }
            }
        }
    }
}

/* numpy's pairwise summation of v[0..n) (the order of np.sum over a contiguous axis). */
static double me_pairwise_sum(const double *v, int64_t n) {
    if (n < 8) {
        double res = 0.0;
        for (int64_t i = 0; i < n; i++) res += v[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        int64_t i;
        for (int j = 0; j < 8; j++) r[j] = v[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += v[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += v[i];
        return res;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    return me_pairwise_sum(v, n2) + me_pairwise_sum(v + n2, n - n2);
}

/* sum of squares in the order of np.sum(t ** 2, axis=1) */
static inline double me_sumsq(double *t, int64_t D) {
    for (int64_t d = 0; d < D; d++) t[d] = t[d] * t[d];
    return me_pairwise_sum(t, D);
}

#define ME_ANG_EPS 1e-6 /* torch.nn.functional.pairwise_distance's eps */
#define ME_RAD2DEG (180.0 / 3.14159265358979323846)

/* angle (radians) of triplet (xa, xp, xn) in double: atan(|xa - xp + eps| / (2 |xn - (xa+xp)/2 + eps|)) */
static inline double me_ang_nc(const float *xa, const float *xp, const float *xn, int64_t D, double *t) {
    for (int64_t d = 0; d < D; d++)
        t[d] = ((double)xn[d] - ((double)xa[d] + (double)xp[d]) / 2.0) + ME_ANG_EPS;
    return sqrt(me_sumsq(t, D));
}

/* the same value for 8 <= D <= 128 (numpy's single block), with h[d] = (xa[d] + xp[d]) / 2
 * precomputed: squares accumulated in place, no scratch pass. */
static inline double me_ang_nc_h(const double *h, const float *xn, int64_t D) {
#define ME_SQ(d) ((((double)xn[d] - h[d]) + ME_ANG_EPS) * (((double)xn[d] - h[d]) + ME_ANG_EPS))
    double r[8];
    int64_t i;
    for (int j = 0; j < 8; j++) r[j] = ME_SQ(j);
    for (i = 8; i < D - (D % 8); i += 8)
        for (int j = 0; j < 8; j++) r[j] += ME_SQ(i + j);
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < D; i++) res += ME_SQ(i);
#undef ME_SQ
    return sqrt(res);
}

static inline double me_ang_ap(const float *xa, const float *xp, int64_t D, double *t) {
    for (int64_t d = 0; d < D; d++) t[d] = ((double)xa[d] - (double)xp[d]) + ME_ANG_EPS;
    return sqrt(me_sumsq(t, D));
}

/* x (N,D), r (M,D), labels (N), ref_labels (M), tri_offsets (N+1) -> keep (tri_offsets[N]),
 * counts (N), row_stats (N,5); work 2*N*D doubles */
void me_angular_mine_count(const float *x, const float *r, const int64_t *labels,
                           const int64_t *ref_labels, int64_t N, int64_t M, int64_t D,
                           int exclude_self, double angle, const int64_t *tri_offsets,
                           uint8_t *keep, int64_t *counts, double *row_stats, double *work) {
    int64_t i;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M * M >= ME_MINE_PAR_MIN)
    for (i = 0; i < N; i++) {
        double *t = work + 2 * i * D;
        double *h = t + D;
        const int fast = D >= 8 && D <= 128;
        const float *xa = x + i * D;
        const int64_t la = labels[i];
        uint8_t *kr = keep + tri_offsets[i];
        const int64_t tmax = tri_offsets[i + 1] - tri_offsets[i];
        int64_t c = 0, tot = 0, fin = 0;
        double s = 0.0, mn = INFINITY, mx = -INFINITY;
        for (int64_t p = 0; p < M; p++) {
            if (ref_labels[p] != la || (exclude_self && p == i)) continue;
            const float *xp = r + p * D;
            const double ap = me_ang_ap(xa, xp, D, t);
            for (int64_t d = 0; d < D; d++) h[d] = ((double)xa[d] + (double)xp[d]) / 2.0;
            for (int64_t n = 0; n < M; n++) {
                if (ref_labels[n] == la) continue;
                const double nc = fast ? me_ang_nc_h(h, r + n * D, D) : me_ang_nc(xa, xp, r + n * D, D, t);
                const double ang = atan(ap / (2.0 * nc));
                const int k = ang > angle;
                if (tot < tmax) kr[tot] = (uint8_t)k;
                tot++;
                c += k;
                if (!isnan(ang)) {
                    const double deg = ang * ME_RAD2DEG;
                    fin++;
                    s += deg;
                    if (deg < mn) mn = deg;
                    if (deg > mx) mx = deg;
                }
            }
        }
        counts[i] = c;
        row_stats[i * 5 + 0] = (double)tot;
        row_stats[i * 5 + 1] = (double)fin;
        row_stats[i * 5 + 2] = s;
        row_stats[i * 5 + 3] = mn;
        row_stats[i * 5 + 4] = mx;
    }
}

/* keep (tri_offsets[N]), offsets (N+1) -> a, p_out, n_out (offsets[N]) sorted by (a, p, n) */
void me_angular_mine_fill(const int64_t *labels, const int64_t *ref_labels, int64_t N, int64_t M,
                          int exclude_self, const int64_t *tri_offsets, const uint8_t *keep,
                          const int64_t *offsets, int64_t *a, int64_t *p_out, int64_t *n_out) {
    int64_t i;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M * M >= ME_MINE_PAR_MIN)
    for (i = 0; i < N; i++) {
        const int64_t la = labels[i];
        const uint8_t *kr = keep + tri_offsets[i];
        const int64_t tmax = tri_offsets[i + 1] - tri_offsets[i];
        int64_t k = offsets[i], tot = 0;
        const int64_t end = offsets[i + 1];
        if (k == end) continue;
        for (int64_t p = 0; p < M; p++) {
            if (ref_labels[p] != la || (exclude_self && p == i)) continue;
            for (int64_t n = 0; n < M; n++) {
                if (ref_labels[n] == la) continue;
                if (tot < tmax && kr[tot] && k < end) {
                    a[k] = i;
                    p_out[k] = p;
                    n_out[k] = n;
                    k++;
                }
                tot++;
            }
        }
    }
}
