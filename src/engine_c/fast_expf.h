/* fast_expf.h: one branch-free float exp for the loss kernels' row loops (so they vectorize).
 * Private to the engine (not part of engine.h). */
#ifndef MANTISSA_FAST_EXPF_H
#define MANTISSA_FAST_EXPF_H

#include <stdint.h>

/* exp(x) for x already clamped to [-87.3365, 88.3763] (Cephes' expf: x = n ln2 + r, |r| <= ln2/2,
 * degree-6 polynomial in r, 2^n built from the exponent bits; about 1 ulp). n is rounded to the
 * nearest integer by the 1.5 * 2^23 trick, which needs the build's strict float semantics. */
static inline __attribute__((always_inline)) float me_expf_clamped(float x) {
    const float fn = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    union { int32_t i; float f; } s;
    s.i = ((int32_t)fn + 127) << 23;
    return p * s.f;
}

#define ME_EXPF_LO (-87.3365447504f)
#define ME_EXPF_HI 88.3762626647949f

#endif /* MANTISSA_FAST_EXPF_H */
