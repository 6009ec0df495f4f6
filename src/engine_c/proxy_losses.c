/* proxy_losses.c: proxy and classifier losses (P2SGrad, softmax cross-entropy over logits).
 * Declarations: engine.h section "proxy_losses.c"; numpy twins in mantissa_embed/_reference. */
#include <math.h>
#include "engine.h"

/* floats of ws for me_p2sgrad_forward_backward */
int64_t me_p2sgrad_workspace_size(int64_t N, int64_t C, int64_t D) {
    return N * D + N * C + N;
}

/* x (N,D), w (C,D), labels (N) in [0,C) -> dx (N,D), dw (C,D) (overwritten); returns the loss.
 * cos = clamp(xhat w^T, -1, 1), xhat = x / max(|x|, 1e-12); loss = sum (cos - onehot)^2 / (N C). */
double me_p2sgrad_forward_backward(const float *x, const float *w, const int64_t *labels,
                                   float *dx, float *dw, int64_t N, int64_t C, int64_t D, float *ws) {
    if (N <= 0 || C <= 0 || D <= 0) {
        for (int64_t i = 0; i < N * D; i++) dx[i] = 0.0f;
        for (int64_t i = 0; i < C * D; i++) dw[i] = 0.0f;
        return 0.0;
    }
    float *xhat = ws;             /* N*D */
    float *cosm = ws + N * D;     /* N*C: cosines, then d loss / d cos */
    float *norms = cosm + N * C;  /* N */
    me_l2_normalize_forward(x, xhat, norms, N, D, 1e-12f);
    me_sgemm(0, 1, N, C, D, 1.0f, xhat, D, w, D, 0.0f, cosm, C);
    const double g = 2.0 / ((double)N * (double)C);
    double total = 0.0;
    for (int64_t i = 0; i < N; i++) {
        float *row = cosm + i * C;
        const int64_t y = labels[i];
        double acc = 0.0;
        for (int64_t j = 0; j < C; j++) {
            float raw = row[j];
            float c = raw < -1.0f ? -1.0f : (raw > 1.0f ? 1.0f : raw);
            double d = (double)c - (j == y ? 1.0 : 0.0);
            acc += d * d;
            row[j] = (raw < -1.0f || raw > 1.0f) ? 0.0f : (float)(g * d);
        }
        total += acc;
    }
    me_sgemm(0, 0, N, D, C, 1.0f, cosm, C, w, D, 0.0f, dx, D);          /* d loss / d xhat */
    me_l2_normalize_backward(dx, xhat, norms, dx, N, D, 1e-12f);
    me_sgemm(1, 0, C, D, N, 1.0f, cosm, C, xhat, D, 0.0f, dw, D);
    return total / ((double)N * (double)C);
}

/* logits (N,C), labels (N) in [0,C) -> row_loss (N) = logsumexp(s z_i) - s z_{i,y_i} (s = scale),
 * dlogits (N,C) = grad_scale * s * (softmax(s z_i) - onehot(y_i)). Returns sum_i row_loss[i]
 * (summed in row order). */
double me_softmax_xent_forward_backward(const float *logits, const int64_t *labels, double *row_loss,
                                        float *dlogits, int64_t N, int64_t C, float scale,
                                        float grad_scale) {
    const double s = scale, gs = (double)grad_scale * (double)scale;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * C > 65536)
    for (int64_t i = 0; i < N; i++) {
        const float *z = logits + i * C;
        float *dz = dlogits + i * C;
        double m = -INFINITY;
        for (int64_t j = 0; j < C; j++) {
            double v = s * (double)z[j];
            if (v > m) m = v;
        }
        double sum = 0.0;
        for (int64_t j = 0; j < C; j++) sum += exp(s * (double)z[j] - m);
        const double lse = m + log(sum);
        const int64_t y = labels[i];
        row_loss[i] = lse - s * (double)z[y];
        for (int64_t j = 0; j < C; j++) {
            double p = exp(s * (double)z[j] - lse);
            dz[j] = (float)(gs * (p - (j == y ? 1.0 : 0.0)));
        }
    }
    double total = 0.0;
    for (int64_t i = 0; i < N; i++) total += row_loss[i];
    return total;
}
