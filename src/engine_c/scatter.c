/* scatter.c: scatter-add of rows by index (the backward of a gather) and its backward, a gather.
 * Contracts: engine.h section "scatter.c". Deterministic: each thread owns a fixed range of out's
 * rows and scans every k in order, so each entry gets its additions in k order. */
#include "engine.h"

#include <string.h>

#define PAR_MIN 65536 /* below this many added floats the kernels run on the calling thread */

void me_scatter_add_forward(const float *src, const int64_t *index, float *out, int64_t K, int64_t D,
                            int64_t N) {
    if (K <= 0 || D <= 0 || N <= 0) return;
    const int nt = me_get_num_threads();
    const int64_t parts = (K * D >= PAR_MIN && N > 1) ? (nt < N ? nt : N) : 1;
    #pragma omp parallel for num_threads(nt) schedule(static) if (parts > 1)
    for (int64_t t = 0; t < parts; t++) {
        const int64_t lo = (t * N) / parts, hi = ((t + 1) * N) / parts;
        for (int64_t k = 0; k < K; k++) {
            const int64_t r = index[k];
            if (r < lo || r >= hi) continue;
            float *o = out + r * D;
            const float *s = src + k * D;
            for (int64_t d = 0; d < D; d++) o[d] += s[d];
        }
    }
}

void me_scatter_add_backward(const float *dout, const int64_t *index, float *dsrc, int64_t K,
                             int64_t D, int64_t N) {
    (void)N;
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (K * D >= PAR_MIN)
    for (int64_t k = 0; k < K; k++)
        memcpy(dsrc + k * D, dout + index[k] * D, (size_t)D * sizeof(float));
}
