/* activations.c: ReLU. Element-wise, so any split is deterministic; OpenMP only for large n. */
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
