/* dense.c: fully connected layer, weights (O,I) like torch.nn.Linear; both passes are SGEMMs
 * (threaded inside me_sgemm). The bias gradient sums the rows of dy in row order. */
#include "engine.h"

#include <string.h>

/* x (N,I), w (O,I), b (O) or NULL -> y (N,O) = x @ w^T + b, then the activation act (ME_ACT_*;
 * slope: the leaky ReLU's negative slope) */
void me_dense_forward(const float *x, const float *w, const float *b, float *y,
                      int64_t N, int64_t I, int64_t O, int act, float slope) {
    if (N <= 0 || O <= 0) return;
    float beta = 0.0f;
    if (b) {
        for (int64_t n = 0; n < N; n++) memcpy(y + n * O, b, (size_t)O * sizeof(float));
        beta = 1.0f;
    }
    if (I <= 0) {
        if (!b) memset(y, 0, (size_t)(N * O) * sizeof(float));
    } else {
        me_sgemm(0, 1, N, O, I, 1.0f, x, I, w, I, beta, y, O);
    }
    if (act == ME_ACT_RELU) me_relu_forward(y, y, N * O);
    else if (act == ME_ACT_LEAKY_RELU) me_leaky_relu_forward(y, y, N * O, slope);
}

/* dy (N,O) -> dx (N,I) = dy @ w or NULL (overwritten), dw (O,I) = dy^T @ x or NULL,
 * db (O) = sum_n dy[n] or NULL (dw, db overwritten when accumulate == 0, added to otherwise) */
void me_dense_backward(const float *x, const float *w, const float *dy,
                       float *dx, float *dw, float *db,
                       int64_t N, int64_t I, int64_t O, int accumulate) {
    if (dx && N > 0 && I > 0) {
        if (O > 0) me_sgemm(0, 0, N, I, O, 1.0f, dy, O, w, I, 0.0f, dx, I);
        else memset(dx, 0, (size_t)(N * I) * sizeof(float));
    }
    if (dw && O > 0 && I > 0) {
        if (N > 0) me_sgemm(1, 0, O, I, N, 1.0f, dy, O, x, I, accumulate ? 1.0f : 0.0f, dw, I);
        else if (!accumulate) memset(dw, 0, (size_t)(O * I) * sizeof(float));
    }
    if (db && O > 0) {
        if (!accumulate) memset(db, 0, (size_t)O * sizeof(float));
        for (int64_t n = 0; n < N; n++) {
            const float *r = dy + n * O;
            for (int64_t o = 0; o < O; o++) db[o] += r[o];
        }
    }
}
