/* optim.c: in-place optimizer updates, transcribing torch.optim's single-tensor code paths
 * (torch/optim/sgd.py::_single_tensor_sgd, torch/optim/adam.py::_single_tensor_adam with
 * amsgrad=False, maximize=False; decoupled_weight_decay selects AdamW). Element-wise: deterministic. */
#include "engine.h"

#include <math.h>

#define ME_OPT_PAR_MIN 65536

/* The element loops run on [lo, hi) in a function of their own, called per chunk of
 * ME_OPT_CHUNK elements from the OpenMP loop: inside an outlined OpenMP body the compiler
 * cannot keep the pointers and scalars in registers (the loop ran ~4x slower). p may be g
 * (in place), so only the state arrays are restrict. */
#define ME_OPT_CHUNK 16384
#define ME_OPT_CHUNKS(n) (((n) + ME_OPT_CHUNK - 1) / ME_OPT_CHUNK)
#define ME_OPT_LO(c) ((c) * ME_OPT_CHUNK)
#define ME_OPT_HI(c, n) ((c) * ME_OPT_CHUNK + ME_OPT_CHUNK < (n) ? (c) * ME_OPT_CHUNK + ME_OPT_CHUNK : (n))

static void adam_range(float *p, const float *g, float *restrict m, float *restrict v, int64_t lo,
                       int64_t hi, float step_size, float bc2_sqrt, float w1, float w2, float beta2, float eps,
                       float decay, float l2, int shrink) {
    for (int64_t i = lo; i < hi; i++) {
        const float pi = shrink ? p[i] * decay : p[i];
        const float gi = l2 != 0.0f ? g[i] + l2 * pi : g[i];
        /* torch's lerp: weight < 0.5 ? self + weight*(end-self) : end - (end-self)*(1-weight) */
        const float mi = w1 < 0.5f ? m[i] + w1 * (gi - m[i]) : gi - (gi - m[i]) * (1.0f - w1);
        const float vi = v[i] * beta2 + w2 * (gi * gi);
        m[i] = mi;
        v[i] = vi;
        const float denom = sqrtf(vi) / bc2_sqrt + eps;
        p[i] = pi + (-step_size) * (mi / denom);
    }
}

static void sgd_range(float *p, const float *g, float *restrict v, int64_t lo, int64_t hi,
                      float lr, float momentum, float omd, float weight_decay, int nesterov, int first) {
    if (!v) {
        for (int64_t i = lo; i < hi; i++) {
            const float gi = weight_decay != 0.0f ? g[i] + weight_decay * p[i] : g[i];
            p[i] = p[i] + (-lr) * gi;
        }
        return;
    }
    for (int64_t i = lo; i < hi; i++) {
        const float gi = weight_decay != 0.0f ? g[i] + weight_decay * p[i] : g[i];
        const float vi = first ? gi : v[i] * momentum + omd * gi;
        v[i] = vi;
        const float d = nesterov ? gi + momentum * vi : vi;
        p[i] = p[i] + (-lr) * d;
    }
}

/* p, g, v (n): g' = g + wd*p; v = g' (first) or momentum*v + (1-dampening)*g';
 * d = g' + momentum*v (nesterov) or v (momentum) or g' (plain); p -= lr*d */
void me_sgd_step(float *p, const float *g, float *v, int64_t n, float lr, float momentum,
                 float dampening, float weight_decay, int nesterov, int first) {
    float *vv = momentum == 0.0f ? NULL : v;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (n >= ME_OPT_PAR_MIN)
    for (int64_t c = 0; c < ME_OPT_CHUNKS(n); c++)
        sgd_range(p, g, vv, ME_OPT_LO(c), ME_OPT_HI(c, n), lr, momentum, 1.0f - dampening, weight_decay, nesterov,
                  first);
}

/* p, g, m, v (n), step t >= 1: g' = g + wd*p (L2, Adam) or g' = g and p *= 1 - lr*wd first
 * (decoupled != 0, AdamW); m = lerp(m, g', 1-beta1); v = beta2*v + (1-beta2)*g'^2;
 * p -= (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps) */
void me_adam_step(float *p, const float *g, float *m, float *v, int64_t n, int64_t t,
                  float lr, float beta1, float beta2, float eps, float weight_decay, int decoupled) {
    const double bc1 = 1.0 - pow((double)beta1, (double)t);
    const double bc2 = 1.0 - pow((double)beta2, (double)t);
    const float step_size = (float)((double)lr / bc1);
    const float bc2_sqrt = (float)sqrt(bc2);
    const float w1 = 1.0f - beta1, w2 = 1.0f - beta2;
    /* torch: param.mul_(1 - lr * weight_decay), the factor computed in double */
    const float decay = (float)(1.0 - (double)lr * (double)weight_decay);
    const float l2 = decoupled ? 0.0f : weight_decay;
    const int shrink = decoupled && weight_decay != 0.0f;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (n >= ME_OPT_PAR_MIN)
    for (int64_t c = 0; c < ME_OPT_CHUNKS(n); c++)
        adam_range(p, g, m, v, ME_OPT_LO(c), ME_OPT_HI(c, n), step_size, bc2_sqrt, w1, w2, beta2, eps, decay, l2,
                   shrink);
}
