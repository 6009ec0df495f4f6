/* simd_internal.h (private): the lane masks and the NaN-propagating max that gemm.c, pool.c
 * and the convolution's files (conv_*.c, the Winograd pooling kernels) share. x86 only (GCC / Clang target attributes);
 * each helper carries the smallest ISA it needs, so any wider kernel may inline it. */
#ifndef ME_SIMD_INTERNAL_H
#define ME_SIMD_INTERNAL_H

#include <stdint.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* lanes 0 .. n-1 of 16 set (n <= 0: none, n >= 16: all): the mask of a row's tail */
static inline __mmask16 me_lanes16(int64_t n) {
    return (__mmask16)(n <= 0 ? 0u : n >= 16 ? 0xFFFFu : (1u << n) - 1u);
}

/* lanes 0 .. n-1 of 8 set (n <= 0: none, n >= 8: all), as the epi32 mask of maskload/maskstore */
__attribute__((target("avx2"), always_inline)) static inline __m256i me_lanes8(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n < 0 ? 0 : n > 8 ? 8 : n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* max(a, b) with a NaN in a kept (torch's max pooling: a NaN in the window wins); _mm*_max_ps
 * alone returns b when either is NaN */
__attribute__((target("avx512f"), always_inline)) static inline __m512 me_max_nan16(__m512 a, __m512 b) {
    return _mm512_mask_mov_ps(_mm512_max_ps(a, b), _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), a);
}

__attribute__((target("avx2"), always_inline)) static inline __m256 me_max_nan8(__m256 a, __m256 b) {
    return _mm256_blendv_ps(_mm256_max_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
}
#endif

#endif /* ME_SIMD_INTERNAL_H */
