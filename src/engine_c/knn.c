/*
 * Exact k nearest neighbours over query x reference tiles.
 * q (n,D), r (M,D) -> indices (n,k) int64, values (n,k) float32, nearest first.
 *
 * Each thread takes whole query blocks (OpenMP static over blocks of tile_q rows) and walks
 * every reference tile of tile_r rows in index order: one single-threaded SGEMM gives the
 * tile's ranking scores (|r|^2 - 2 q.r for the Euclidean metrics, -q.r for the inner
 * product), then each query row pushes the scores below its current k-th best into a bounded
 * max-heap kept in the caller's output row. Scores are compared as (score, index) pairs, so
 * equal scores are ordered by lower reference index whatever the tiling. Finally the k
 * selected distances are recomputed directly from the vectors in double precision (no
 * |q|^2 + |r|^2 - 2 q.r cancellation) and the row is re-sorted by (exact value, index).
 * Memory: M floats of reference norms plus one tile_q x tile_r score block per thread.
 */
#include "engine.h"
#include "knn_internal.h"

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* floats of scratch for me_knn: M reference norms + one tile_q x tile_r block per thread */
int64_t me_knn_workspace_size(int64_t M, int64_t tile_q, int64_t tile_r, int num_threads) {
    return M + (int64_t)(num_threads < 1 ? 1 : num_threads) * tile_q * tile_r;
}

/* q (N,D), r (M,D) -> indices (N,k) int64, distances (N,k); see engine.h */
void me_knn(const float *q, const float *r, int64_t N, int64_t M, int64_t D, int64_t k,
            int metric, int exclude_self, int64_t tile_q, int64_t tile_r, int num_threads,
            float *workspace, int64_t *indices, float *distances) {
    if (N <= 0 || k <= 0) return;
    const int euclid = metric != ME_KNN_INNER_PRODUCT;
    float *rn = workspace;
    float *blocks = workspace + M;
    const int64_t nblk = (N + tile_q - 1) / tile_q;
    int nt = num_threads < 1 ? 1 : num_threads;
    if (nt > nblk) nt = (int)nblk;

    if (euclid) {
        #pragma omp parallel for num_threads(num_threads < 1 ? 1 : num_threads) schedule(static) if (M * D >= (1 << 16))
        for (int64_t j = 0; j < M; j++) {
            const float *rj = r + j * D;
            float s = 0.0f;
            for (int64_t d = 0; d < D; d++) s += rj[d] * rj[d];
            rn[j] = s;
        }
    }

    #pragma omp parallel num_threads(nt)
    {
#ifdef _OPENMP
        int tid = omp_get_thread_num();
#else
        int tid = 0;
#endif
        float *S = blocks + (int64_t)tid * tile_q * tile_r;
        #pragma omp for schedule(static)
        for (int64_t b = 0; b < nblk; b++) {
            const int64_t q0 = b * tile_q;
            const int64_t bq = (N - q0 < tile_q) ? N - q0 : tile_q;
            for (int64_t i = 0; i < bq * k; i++) {
                distances[q0 * k + i] = INFINITY;
                indices[q0 * k + i] = INT64_MAX;
            }
            for (int64_t r0 = 0; r0 < M; r0 += tile_r) {
                const int64_t br = (M - r0 < tile_r) ? M - r0 : tile_r;
                me_sgemm_st(0, 1, bq, br, D, euclid ? -2.0f : -1.0f, q + q0 * D, D, r + r0 * D, D,
                            0.0f, S, br);
                for (int64_t i = 0; i < bq; i++) {
                    float *s = S + i * br;
                    float *hv = distances + (q0 + i) * k;
                    int64_t *hi = indices + (q0 + i) * k;
                    const float *rr = rn + r0;
                    const int64_t g = exclude_self ? q0 + i - r0 : -1;
                    float thr = hv[0];
                    for (int64_t j0 = 0; j0 < br; j0 += 16) {
                        const int64_t je = (j0 + 16 < br) ? j0 + 16 : br;
                        int cnt = 0;
                        if (euclid) {  /* one pass: add |r|^2, count the candidates */
                            for (int64_t j = j0; j < je; j++) {
                                float v = s[j] + rr[j];
                                s[j] = v;
                                cnt += v < thr;
                            }
                        } else {
                            for (int64_t j = j0; j < je; j++) cnt += s[j] < thr;
                        }
                        if (g >= j0 && g < je) {
                            s[g] = INFINITY;
                            cnt = 1;
                        }
                        if (!cnt) continue;
                        for (int64_t j = j0; j < je; j++) {
                            /* indices only grow, so a score equal to the root ranks after it
                             * (unless the root is an empty slot, whose score is +inf) */
                            if (s[j] < thr) {
                                knn_heap_replace(hv, hi, k, s[j], r0 + j);
                                thr = hv[0];
                            }
                        }
                    }
                }
            }
            /* sort, then exact values and a re-sort by (exact value, index) */
            for (int64_t i = 0; i < bq; i++) {
                float *hv = distances + (q0 + i) * k;
                int64_t *hi = indices + (q0 + i) * k;
                const float *qi = q + (q0 + i) * D;
                knn_heap_sort(hv, hi, k);
                for (int64_t t = 0; t < k; t++) {
                    if (hi[t] < 0 || hi[t] >= M) {  /* empty slot (k > available): keep inf / -1 */
                        hi[t] = -1;
                        continue;
                    }
                    const float *rj = r + hi[t] * D;
                    double acc = 0.0;
                    if (euclid) {
                        for (int64_t d = 0; d < D; d++) {
                            double df = (double)qi[d] - (double)rj[d];
                            acc += df * df;
                        }
                        if (metric == ME_KNN_EUCLIDEAN) acc = sqrt(acc);
                        hv[t] = (float)acc;
                    } else {
                        for (int64_t d = 0; d < D; d++) acc += (double)qi[d] * (double)rj[d];
                        hv[t] = -(float)acc;  /* ranking order: smaller first */
                    }
                }
                knn_resort(hv, hi, k);
                if (!euclid)
                    for (int64_t t = 0; t < k; t++) hv[t] = -hv[t];
            }
        }
    }
}
