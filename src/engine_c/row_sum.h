/* row_sum.h: the engine's fixed-order float sum of a contiguous row. Private to the engine
 * (not part of engine.h). */
#ifndef MANTISSA_ROW_SUM_H
#define MANTISSA_ROW_SUM_H

#include <stdint.h>

/* sum of r[0..n) with 16 interleaved partial sums, added in a fixed order (vectorizable) */
static inline float me_row_sum(const float *r, int64_t n) {
    float acc[16] = {0};
    const int64_t n16 = n & ~(int64_t)15;
    for (int64_t p = 0; p < n16; p += 16)
        for (int l = 0; l < 16; l++) acc[l] += r[p + l];
    for (int64_t p = n16; p < n; p++) acc[p - n16] += r[p];
    float s = 0.0f;
    for (int l = 0; l < 16; l++) s += acc[l];
    return s;
}

#endif /* MANTISSA_ROW_SUM_H */
