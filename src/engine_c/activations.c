/* activations.c: ReLU, leaky ReLU, dropout's mask product, and the finiteness check of inputs. Element-wise, so any split is
 * deterministic; OpenMP only for large n. */
#include "engine.h"

#define ME_ACT_PAR_MIN 65536

/* x (n) -> y (n) = max(x, 0); y may alias x. NaN stays NaN (as torch.relu). */
void me_relu_forward(const float *x, float *y, int64_t n) {
#pragma omp parallel for simd num_threads(me_get_num_threads()) schedule(static) if (n >= ME_ACT_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        y[i] = v < 0.0f ? 0.0f : v;
    }
}

/* dy (n), y (n) (the forward output) -> dx (n) = dy * (y > 0); dx may alias dy */
void me_relu_backward(const float *dy, const float *y, float *dx, int64_t n) {
#pragma omp parallel for simd num_threads(me_get_num_threads()) schedule(static) if (n >= ME_ACT_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float d = dy[i]; /* read unconditionally: a branch-free select the compiler vectorizes */
        dx[i] = y[i] > 0.0f ? d : 0.0f;
    }
}

#define ME_FINITE_BLOCK 16384

/* Block bi of x (n) (ME_FINITE_BLOCK values, fewer in the last) -> 1 when none is NaN or +-Inf,
 * else 0; copied into y (n) too unless y is NULL. v * 0 is (+-)0 exactly for a finite v and NaN
 * otherwise, so the 16 lane sums stay zero until a non-finite value; branch-free, so the compiler
 * vectorizes it (IEEE semantics: v * 0 is not folded). */
static inline int finite_block(const float *x, float *y, int64_t n, int64_t bi) {
    const float *v = x + bi * ME_FINITE_BLOCK;
    float *w = y ? y + bi * ME_FINITE_BLOCK : NULL;
    const int64_t m = n - bi * ME_FINITE_BLOCK < ME_FINITE_BLOCK ? n - bi * ME_FINITE_BLOCK : ME_FINITE_BLOCK;
    float acc[16] = {0};
    int64_t i = 0;
    if (w) {
        for (; i + 16 <= m; i += 16)
            for (int l = 0; l < 16; l++) {
                const float a = v[i + l];
                w[i + l] = a;
                acc[l] += a * 0.0f;
            }
        for (; i < m; i++) {
            w[i] = v[i];
            acc[0] += v[i] * 0.0f;
        }
    } else {
        for (; i + 16 <= m; i += 16)
            for (int l = 0; l < 16; l++) acc[l] += v[i + l] * 0.0f;
        for (; i < m; i++) acc[0] += v[i] * 0.0f;
    }
    float s = 0.0f;
    for (int l = 0; l < 16; l++) s += acc[l];
    return s == 0.0f;
}

/* x (n) -> 1 when no value is NaN or +-Inf, else 0, copying x into y (n; not overlapping x) in the
 * same read unless y is NULL (y is written whatever the answer). Blocks of ME_FINITE_BLOCK, over
 * OpenMP from ME_ACT_PAR_MIN values; below it no parallel region is entered (a single-thread
 * region still costs a team's setup, which would dominate the check of a few rows). */
static int all_finite_blocks(const float *x, float *y, int64_t n) {
    const int64_t nb = (n + ME_FINITE_BLOCK - 1) / ME_FINITE_BLOCK;
    int ok = 1;
    if (n < ME_ACT_PAR_MIN) {
        for (int64_t bi = 0; bi < nb; bi++) ok = finite_block(x, y, n, bi) && ok;
        return ok;
    }
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) reduction(&& : ok)
    for (int64_t bi = 0; bi < nb; bi++) ok = finite_block(x, y, n, bi) && ok;
    return ok;
}

/* x (n) -> 1 when no value is NaN or +-Inf, else 0 (n may be 0). */
int me_all_finite(const float *x, int64_t n) { return all_finite_blocks(x, NULL, n); }

/* x (n) -> y (n) = x, and 1 when no value of x is NaN or +-Inf, else 0: me_all_finite's test in
 * the same read as the copy; y is written whatever the answer and must not overlap x. */
int me_copy_all_finite(const float *x, float *y, int64_t n) { return all_finite_blocks(x, y, n); }

/* x (n) -> y (n) = x < 0 ? slope * x : x (torch.nn.functional.leaky_relu); y may alias x */
void me_leaky_relu_forward(const float *x, float *y, int64_t n, float slope) {
#pragma omp parallel for simd num_threads(me_get_num_threads()) schedule(static) if (n >= ME_ACT_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        y[i] = v < 0.0f ? slope * v : v;
    }
}

/* dy (n), y (n) (the forward output, slope >= 0) -> dx (n) = y > 0 ? dy : slope * dy, torch's
 * rule (the input x > 0 exactly when y > 0 for slope >= 0); dx may alias dy */
void me_leaky_relu_backward(const float *dy, const float *y, float *dx, int64_t n, float slope) {
#pragma omp parallel for simd num_threads(me_get_num_threads()) schedule(static) if (n >= ME_ACT_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float d = dy[i];
        dx[i] = y[i] > 0.0f ? d : slope * d;
    }
}

/* Dropout's forward and backward are both this product with the scaled mask (0 or 1/(1-p),
 * drawn by the caller): x (n), mask (n) -> y (n) = x * mask; y may alias x */
void me_dropout_apply(const float *x, const float *mask, float *y, int64_t n) {
#pragma omp parallel for simd num_threads(me_get_num_threads()) schedule(static) if (n >= ME_ACT_PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * mask[i];
}
