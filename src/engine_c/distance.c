/* distance.c: L2 normalization and the Euclidean distance matrix, forward and backward.
 *
 * The distance matrix is one SGEMM plus an O(N*M) epilogue:
 *     dist_ij = ||x_i||^2 + ||r_j||^2 - 2 x_i . r_j      (clamped at 0, sqrt unless squared)
 * and its backward is two SGEMM over G (N,M) = dL/d(squared distance):
 *     dx = x * rowsum(G) - G r,   dr = r * colsum(G) - G^T x      (times 2 for the squared distance)
 * so no N x M x D tensor ever exists. See engine.h for the contracts.
 */
#include "engine.h"

#include <math.h>
#include <string.h>

/* Below this many elements a loop runs on the calling thread (a parallel region costs more). */
#define PAR_MIN 65536

/* x (N,D) -> y (N,D), norms (N) */
void me_l2_normalize_forward(const float *x, float *y, float *norms, int64_t N, int64_t D, float eps) {
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * D >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        const float *xi = x + i * D;
        float *yi = y + i * D;
        double ss = 0.0;
        for (int64_t k = 0; k < D; k++) ss += (double)xi[k] * (double)xi[k];
        float nrm = (float)sqrt(ss);
        norms[i] = nrm;
        float den = nrm > eps ? nrm : eps;
        for (int64_t k = 0; k < D; k++) yi[k] = xi[k] / den;
    }
}

/* dy (N,D), y (N,D), norms (N) -> dx (N,D) */
void me_l2_normalize_backward(const float *dy, const float *y, const float *norms, float *dx,
                              int64_t N, int64_t D, float eps) {
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * D >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        const float *dyi = dy + i * D;
        const float *yi = y + i * D;
        float *dxi = dx + i * D;
        float nrm = norms[i];
        if (nrm >= eps) {
            double dot = 0.0;
            for (int64_t k = 0; k < D; k++) dot += (double)yi[k] * (double)dyi[k];
            float fdot = (float)dot;
            for (int64_t k = 0; k < D; k++) dxi[k] = (dyi[k] - yi[k] * fdot) / nrm;
        } else {
            /* y = x / eps: the clamp is active, its gradient is 0 */
            for (int64_t k = 0; k < D; k++) dxi[k] = dyi[k] / eps;
        }
    }
}

int64_t me_euclidean_forward_workspace_size(int64_t N, int64_t M) { return N + M; }

int64_t me_euclidean_backward_workspace_size(int64_t N, int64_t M) { return N * M + N + M; }

/* x (N,D) -> sq (N) = squared row norms (double accumulation) */
static void row_sqnorms(const float *x, float *sq, int64_t N, int64_t D) {
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * D >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        const float *xi = x + i * D;
        double ss = 0.0;
        for (int64_t k = 0; k < D; k++) ss += (double)xi[k] * (double)xi[k];
        sq[i] = (float)ss;
    }
}

/* Relative threshold below which a squared distance from the SGEMM formula is recomputed directly:
 * its rounding error is ~1e-7 * (||x||^2 + ||r||^2), so results above it keep ~1e-4 relative accuracy. */
#define REFINE 1e-3f

/* ||a - b||^2 (D) with double accumulation */
static inline float sqdist(const float *a, const float *b, int64_t D) {
    double acc = 0.0;
    for (int64_t k = 0; k < D; k++) {
        const float t = a[k] - b[k];
        acc += (double)t * (double)t;
    }
    return (float)acc;
}

/* x (N,D), r (M,D) -> dist (N,M); ws (N+M) */
void me_euclidean_forward(const float *x, const float *r, float *dist, int64_t N, int64_t M, int64_t D,
                          int squared, float *ws) {
    if (N <= 0 || M <= 0) return;
    float *xn = ws, *rn = ws + N;
    if (D <= 0) {
        memset(dist, 0, (size_t)(N * M) * sizeof(float));
        return;
    }
    row_sqnorms(x, xn, N, D);
    if (r == x && M == N) memcpy(rn, xn, (size_t)N * sizeof(float));
    else row_sqnorms(r, rn, M, D);
    me_sgemm(0, 1, N, M, D, -2.0f, x, D, r, D, 0.0f, dist, M);
    const int self = r == x && M == N;
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        float *di = dist + i * M;
        const float xi = xn[i];
        for (int64_t j = 0; j < M; j++) {
            const float sq = xi + rn[j];
            float v = sq + di[j];
            if (v < REFINE * sq) {
                /* cancellation: ||x||^2 + ||r||^2 - 2 x.r loses the digits of a small distance;
                 * recompute it directly (exactly 0 for duplicates and the diagonal) */
                v = (self && i == j) ? 0.0f : sqdist(x + i * D, r + j * D, D);
            }
            di[j] = squared ? v : sqrtf(v);
        }
    }
}

/* ddist (N,M), dist (N,M) -> dx (N,D) or NULL, dr (M,D) or NULL; ws (N*M + N + M) */
void me_euclidean_backward(const float *x, const float *r, const float *dist, const float *ddist,
                           float *dx, float *dr, int64_t N, int64_t M, int64_t D, int squared, float *ws) {
    if (D <= 0) return;
    if (N <= 0 || M <= 0) {
        if (dx && N > 0) memset(dx, 0, (size_t)(N * D) * sizeof(float));
        if (dr && M > 0) memset(dr, 0, (size_t)(M * D) * sizeof(float));
        return;
    }
    float *G = ws, *rowsum = ws + N * M, *colsum = ws + N * M + N;
    /* G = d L / d (squared distance) without the factor 2 for squared, 1/(2d) * 2 = 1/d otherwise;
     * both cases then use dx = f * (x rowsum(G) - G r) with f = 2 (squared) or 1. */
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        const float *di = dist + i * M, *gi = ddist + i * M;
        float *Gi = G + i * M;
        double rs = 0.0;
        if (squared) {
            for (int64_t j = 0; j < M; j++) {
                float g = di[j] > 0.0f ? gi[j] : 0.0f;
                Gi[j] = g;
                rs += g;
            }
        } else {
            for (int64_t j = 0; j < M; j++) {
                float g = di[j] > 0.0f ? gi[j] / di[j] : 0.0f;
                Gi[j] = g;
                rs += g;
            }
        }
        rowsum[i] = (float)rs;
    }
    const float f = squared ? 2.0f : 1.0f;
    if (dx) {
        me_sgemm(0, 0, N, D, M, -f, G, M, r, D, 0.0f, dx, D);
        #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * D >= PAR_MIN)
        for (int64_t i = 0; i < N; i++) {
            const float s = f * rowsum[i];
            const float *xi = x + i * D;
            float *dxi = dx + i * D;
            for (int64_t k = 0; k < D; k++) dxi[k] += s * xi[k];
        }
    }
    if (dr) {
        /* column sums in a fixed order (rows ascending), columns split across threads */
        const int64_t CB = 256;
        const int64_t nblk = (M + CB - 1) / CB;
        #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
        for (int64_t b = 0; b < nblk; b++) {
            const int64_t j0 = b * CB, j1 = j0 + CB < M ? j0 + CB : M;
            double acc[256];
            for (int64_t j = j0; j < j1; j++) acc[j - j0] = 0.0;
            for (int64_t i = 0; i < N; i++) {
                const float *Gi = G + i * M;
                for (int64_t j = j0; j < j1; j++) acc[j - j0] += Gi[j];
            }
            for (int64_t j = j0; j < j1; j++) colsum[j] = (float)acc[j - j0];
        }
        me_sgemm(1, 0, M, D, N, -f, G, M, x, D, 0.0f, dr, D);
        #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (M * D >= PAR_MIN)
        for (int64_t j = 0; j < M; j++) {
            const float s = f * colsum[j];
            const float *rj = r + j * D;
            float *drj = dr + j * D;
            for (int64_t k = 0; k < D; k++) drj[k] += s * rj[k];
        }
    }
}
