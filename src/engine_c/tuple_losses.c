/* tuple_losses.c: AngularLoss. Declarations: engine.h section "tuple_losses.c".
 *
 * A (N,M), B (M,M), c (P), pairs (a, p) (P) -> losses (P) (pytorch-metric-learning
 * losses/angular_loss.py): per (anchor, positive) pair, a log(1 + sum exp) over the anchor's
 * negatives of logits A[a,n] + B[p,n] - c.
 *
 * Work split depends only on the shapes (static schedule over pairs / rows), every output element
 * is summed in a fixed order: results are bitwise identical for any thread count.
 */
#include "engine.h"

#include <math.h>
#include <string.h>

#define TUPLE_PAR_MIN 32768

/* max over the negatives of pair k of its logits, and 0 (the "+1" term) */
static inline float angular_max(const float *Ar, const float *Br, float ck, int64_t la,
                                const int64_t *ref_labels, int64_t M) {
    float mx = 0.0f;
    for (int64_t n = 0; n < M; n++) {
        if (ref_labels[n] == la) continue;
        float x = Ar[n] + Br[n] - ck;
        if (x > mx) mx = x;
    }
    return mx;
}

/* A (N,M), B (M,M), c (P), pairs a (P), p (P), labels (N), ref_labels (M) -> losses (P) */
void me_angular_loss_forward(const float *A, const float *B, const float *c, const int64_t *a,
                             const int64_t *p, const int64_t *labels, const int64_t *ref_labels,
                             float *losses, int64_t N, int64_t M, int64_t P) {
    (void)N;
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (P * M >= TUPLE_PAR_MIN)
    for (int64_t k = 0; k < P; k++) {
        const float *Ar = A + a[k] * M, *Br = B + p[k] * M;
        int64_t la = labels[a[k]];
        float ck = c[k];
        float mx = angular_max(Ar, Br, ck, la, ref_labels, M);
        float sh = ck + mx;
        double s = (double)expf(-mx);
        for (int64_t n = 0; n < M; n++) {
            if (ref_labels[n] == la) continue;
            s += (double)expf(Ar[n] + Br[n] - sh);
        }
        losses[k] = (float)((double)mx + log(s));
    }
}

/* losses, dlosses (P), pairs grouped by anchor and by positive (CSR) -> dA (N,M), dB (M,M),
 * dc (P), overwritten */
void me_angular_loss_backward(const float *A, const float *B, const float *c, const int64_t *a,
                              const int64_t *p, const int64_t *labels, const int64_t *ref_labels,
                              const float *losses, const float *dlosses, const int64_t *by_anchor,
                              const int64_t *anchor_ptr, const int64_t *by_pos, const int64_t *pos_ptr,
                              float *dA, float *dB, float *dc, int64_t N, int64_t M, int64_t P) {
    /* rows of dA (and dc) grouped by anchor */
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (P * M >= TUPLE_PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        float *dAr = dA + i * M;
        memset(dAr, 0, (size_t)M * sizeof(float));
        const float *Ar = A + i * M;
        int64_t la = labels[i];
        for (int64_t q = anchor_ptr[i]; q < anchor_ptr[i + 1]; q++) {
            int64_t k = by_anchor[q];
            const float *Br = B + p[k] * M;
            float lk = losses[k] + c[k], g = dlosses[k];
            double tot = 0.0;
            for (int64_t n = 0; n < M; n++) {
                if (ref_labels[n] == la) continue;
                float w = g * expf(Ar[n] + Br[n] - lk);
                dAr[n] += w;
                tot += (double)w;
            }
            dc[k] = (float)(-tot);
        }
    }
    /* rows of dB grouped by positive */
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (P * M >= TUPLE_PAR_MIN)
    for (int64_t j = 0; j < M; j++) {
        float *dBr = dB + j * M;
        memset(dBr, 0, (size_t)M * sizeof(float));
        const float *Br = B + j * M;
        for (int64_t q = pos_ptr[j]; q < pos_ptr[j + 1]; q++) {
            int64_t k = by_pos[q];
            const float *Ar = A + a[k] * M;
            int64_t la = labels[a[k]];
            float lk = losses[k] + c[k], g = dlosses[k];
            for (int64_t n = 0; n < M; n++) {
                if (ref_labels[n] == la) continue;
                dBr[n] += g * expf(Ar[n] + Br[n] - lk);
            }
        }
    }
}
