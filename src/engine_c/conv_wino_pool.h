/* conv_wino_pool.h: the Winograd F(2x2, 3x3) conv + bias + ReLU + 2x2 max-pool inference
 * kernels (wino_pool_* / wino1_pool_*) and the image (de)interleaves of their images layout, for
 * one instruction set. conv_wino_pool.c includes it twice, with
 *   WP_SFX(name)  the suffixed name (name##_avx512, name##_avx2),
 *   WP_TARGET     the target attribute string,
 *   WP_AVX512     1: AVX-512VL (32 ymm registers, mask registers); 0: AVX2 + FMA,
 * after wino_layout, ME_WINO_KB and conv_internal.h (conv_transpose8x8). Both builds do the same
 * float operations in the same order per lane (the AVX2 one computes a block of 16 filters as two
 * halves of 8, each filter's sum over channels in the same order), so they give the same bits. */
#if WP_AVX512
#define WP_KB ME_WINO_KB /* filters per register block: 16 accumulators of 32 ymm */
#else
#define WP_KB 8 /* 16 ymm registers: 8 accumulators, the input vector, the broadcasts */
#endif

/* the first nl <= 8 lanes of v -> p (nl == 8: a plain store) */
__attribute__((target(WP_TARGET), always_inline))
static inline void WP_SFX(store_lanes)(float *p, int nl, __m256 v) {
    if (nl >= 8) {
        _mm256_storeu_ps(p, v);
        return;
    }
#if WP_AVX512
    _mm256_mask_storeu_ps(p, (__mmask8)((1u << nl) - 1u), v);
#else
    _mm256_maskstore_ps(p, me_lanes8(nl), v);
#endif
}

/* the first nl <= 8 floats at p, zero in the other lanes (nothing read beyond them) */
__attribute__((target(WP_TARGET), always_inline))
static inline __m256 WP_SFX(load_lanes)(const float *p, int nl) {
    if (nl >= 8) return _mm256_loadu_ps(p);
#if WP_AVX512
    return _mm256_maskz_loadu_ps((__mmask8)((1u << nl) - 1u), p);
#else
    return _mm256_maskload_ps(p, me_lanes8(nl));
#endif
}

/* The second stage of the output transform (Y = s A, s = A^T M by rows: s0 = m0 + m1 + m2,
 * s1 = m1 - m2 - m3 per column j), the 2x2 max (NaN propagates), + *b (b NULL: no bias), then
 * the ReLU when relu != 0 (NaN kept). */
__attribute__((target(WP_TARGET), always_inline))
static inline __m256 WP_SFX(wino_pool_out)(const __m256 s0[4], const __m256 s1[4], const float *b, int relu) {
    const __m256 y00 = _mm256_add_ps(_mm256_add_ps(s0[0], s0[1]), s0[2]);
    const __m256 y01 = _mm256_sub_ps(_mm256_sub_ps(s0[1], s0[2]), s0[3]);
    const __m256 y10 = _mm256_add_ps(_mm256_add_ps(s1[0], s1[1]), s1[2]);
    const __m256 y11 = _mm256_sub_ps(_mm256_sub_ps(s1[1], s1[2]), s1[3]);
    __m256 r = me_max_nan8(me_max_nan8(y00, y01), me_max_nan8(y10, y11));
    if (b) r = _mm256_add_ps(r, _mm256_set1_ps(*b));
    if (relu) r = _mm256_max_ps(_mm256_setzero_ps(), r);
    return r;
}

/* V = B^T d B (16 positions, row-major) of the 4x4 patches of the 8 lanes, r0 = the first patch
 * value of the lanes (layout L). */
__attribute__((target(WP_TARGET), always_inline))
static inline void WP_SFX(wino_input_tiles)(const float *r0, const wino_layout *L, __m256 v[16]) {
    __m256 d[4][4], t[4][4];
    for (int r = 0; r < 4; r++)
        for (int cc = 0; cc < 4; cc++) d[r][cc] = _mm256_loadu_ps(r0 + r * L->rs + (cc & 1) * L->odd + (cc >> 1) * L->pair);
    for (int j = 0; j < 4; j++) {
        t[0][j] = _mm256_sub_ps(d[0][j], d[2][j]);
        t[1][j] = _mm256_add_ps(d[1][j], d[2][j]);
        t[2][j] = _mm256_sub_ps(d[2][j], d[1][j]);
        t[3][j] = _mm256_sub_ps(d[1][j], d[3][j]);
    }
    for (int i = 0; i < 4; i++) {
        v[i * 4 + 0] = _mm256_sub_ps(t[i][0], t[i][2]);
        v[i * 4 + 1] = _mm256_add_ps(t[i][1], t[i][2]);
        v[i * 4 + 2] = _mm256_sub_ps(t[i][2], t[i][1]);
        v[i * 4 + 3] = _mm256_sub_ps(t[i][1], t[i][3]);
    }
}

/* The lanes of one tile-row step: 8, or the tiles left in the row (tiles layout). */
static inline int WP_SFX(wino_lanes)(const wino_layout *L, int64_t TW, int64_t tx) {
    const int64_t nl = (TW - tx) * L->lpt < 8 ? (TW - tx) * L->lpt : 8;
    return (int)nl;
}

/* One image (tiles layout) or 8 images (images layout): src (the plane), upk (16, C, Fpad)
 * -> dst pooled, as laid out by L (inlined into one function per layout, so that the layout's
 * constant strides are known to the compiler). */
__attribute__((target(WP_TARGET), always_inline))
static inline void WP_SFX(wino_pool_body)(const float *src, const wino_layout *L, const float *upk, const float *b,
                                  float *dst, int64_t F, int64_t C, int64_t Fpad, int64_t TH, int64_t TW,
                                  int relu, float *vb, float *mb) {
    for (int64_t ty = 0; ty < TH; ty++)
        for (int64_t tx = 0; tx < TW; tx += 8 / L->lpt) {
            const int lm = WP_SFX(wino_lanes)(L, TW, tx);
            /* V = B^T d B for every channel -> vb (C, 16, 8) */
            for (int64_t c = 0; c < C; c++) {
                __m256 v[16];
                WP_SFX(wino_input_tiles)(src + c * L->cs + ty * L->tys + tx * L->txs, L, v);
                for (int p = 0; p < 16; p++) _mm256_storeu_ps(vb + (c * 16 + p) * 8, v[p]);
            }
            float *out = dst + ty * L->oys + tx * L->oxs;
            for (int64_t f0 = 0; f0 < F; f0 += WP_KB) {
                /* M[f][p] = sum_c V[c][p] U[p][c][f] for the block's filters -> mb (16, KB, 8) */
                for (int p = 0; p < 16; p++) {
                    __m256 acc[WP_KB];
                    _Pragma("GCC unroll 16") for (int k = 0; k < WP_KB; k++) acc[k] = _mm256_setzero_ps();
                    const float *u = upk + (int64_t)p * C * Fpad + f0;
                    for (int64_t c = 0; c < C; c++, u += Fpad) {
                        const __m256 v = _mm256_loadu_ps(vb + (c * 16 + p) * 8);
                        _Pragma("GCC unroll 16") for (int k = 0; k < WP_KB; k++)
                            acc[k] = _mm256_fmadd_ps(v, _mm256_set1_ps(u[k]), acc[k]);
                    }
                    _Pragma("GCC unroll 16") for (int k = 0; k < WP_KB; k++)
                        _mm256_storeu_ps(mb + (p * WP_KB + k) * 8, acc[k]);
                }
                const int64_t nk = F - f0 < WP_KB ? F - f0 : WP_KB;
                for (int64_t k = 0; k < nk; k++) {
                    const float *m = mb + k * 8;
                    const int64_t ps = WP_KB * 8; /* between positions */
                    __m256 s0[4], s1[4];
                    for (int j = 0; j < 4; j++) { /* A^T M: rows */
                        const __m256 m0 = _mm256_loadu_ps(m + (0 * 4 + j) * ps), m1 = _mm256_loadu_ps(m + (1 * 4 + j) * ps);
                        const __m256 m2 = _mm256_loadu_ps(m + (2 * 4 + j) * ps), m3 = _mm256_loadu_ps(m + (3 * 4 + j) * ps);
                        s0[j] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
                        s1[j] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
                    }
                    WP_SFX(store_lanes)(out + (f0 + k) * L->fs, lm,
                                          WP_SFX(wino_pool_out)(s0, s1, b ? b + f0 + k : NULL, relu));
                }
            }
        }
}

/* xd (C, Hp, 2, TW+1) deinterleaved plane of one image -> yn (F, TH, TW) */
__attribute__((target(WP_TARGET)))
static void WP_SFX(wino_pool_tiles)(const float *xd, const float *upk, const float *b, float *yn, int64_t F,
                            int64_t C, int64_t Fpad, int64_t Hp, int64_t TH, int64_t TW, int relu,
                            float *vb, float *mb) {
    const wino_layout L = wino_tiles_layout(Hp, TH, TW);
    WP_SFX(wino_pool_body)(xd, &L, upk, b, yn, F, C, Fpad, TH, TW, relu, vb, mb);
}

/* xi (C, Hp, Wp, 8) interleaved plane of 8 images -> yb, filter f at f*ofs, tile (ty, tx) at
 * ty*oys + tx*8 */
__attribute__((target(WP_TARGET)))
static void WP_SFX(wino_pool_images)(const float *xi, const float *upk, const float *b, float *yb, int64_t F,
                             int64_t C, int64_t Fpad, int64_t Hp, int64_t Wp, int64_t TH, int64_t TW,
                             int64_t ofs, int64_t oys, int relu, float *vb, float *mb) {
    const wino_layout L = wino_images_layout(Hp, Wp, ofs, oys);
    WP_SFX(wino_pool_body)(xi, &L, upk, b, yb, F, C, Fpad, TH, TW, relu, vb, mb);
}

/* wino_pool_body for one input channel: the 16 transformed inputs of the 8 lanes stay in
 * registers and each filter's products are folded into the first stage of the output transform
 * (s0 = m0 + m1 + m2, s1 = m1 - m2 - m3 per column, as FMAs), so nothing goes through memory
 * between the input transform and the pooled store. */
__attribute__((target(WP_TARGET), always_inline))
static inline void WP_SFX(wino1_pool_body)(const float *src, const wino_layout *L, const float *upk, const float *b,
                                   float *dst, int64_t F, int64_t Fpad, int64_t TH, int64_t TW, int relu) {
    for (int64_t ty = 0; ty < TH; ty++)
        for (int64_t tx = 0; tx < TW; tx += 8 / L->lpt) {
            const int lm = WP_SFX(wino_lanes)(L, TW, tx);
            __m256 v[16];
            WP_SFX(wino_input_tiles)(src + ty * L->tys + tx * L->txs, L, v);
            float *out = dst + ty * L->oys + tx * L->oxs;
            for (int64_t f = 0; f < F; f++) {
                const float *u = upk + f; /* U[p] of filter f at u[p * Fpad] */
                __m256 s0[4], s1[4];
                for (int j = 0; j < 4; j++) {
                    const __m256 u0 = _mm256_set1_ps(u[(0 * 4 + j) * Fpad]), u1 = _mm256_set1_ps(u[(1 * 4 + j) * Fpad]);
                    const __m256 u2 = _mm256_set1_ps(u[(2 * 4 + j) * Fpad]), u3 = _mm256_set1_ps(u[(3 * 4 + j) * Fpad]);
                    const __m256 m1 = _mm256_mul_ps(v[4 + j], u1);
                    s0[j] = _mm256_fmadd_ps(v[8 + j], u2, _mm256_fmadd_ps(v[0 + j], u0, m1));
                    s1[j] = _mm256_fnmadd_ps(v[12 + j], u3, _mm256_fnmadd_ps(v[8 + j], u2, m1));
                }
                WP_SFX(store_lanes)(out + f * L->fs, lm, WP_SFX(wino_pool_out)(s0, s1, b ? b + f : NULL, relu));
            }
        }
}

/* xd (Hp, 2, TW+1) deinterleaved plane of one image -> yn (F, TH, TW) */
__attribute__((target(WP_TARGET)))
static void WP_SFX(wino1_pool_tiles)(const float *xd, const float *upk, const float *b, float *yn, int64_t F,
                             int64_t Fpad, int64_t Hp, int64_t TH, int64_t TW, int relu) {
    const wino_layout L = wino_tiles_layout(Hp, TH, TW);
    WP_SFX(wino1_pool_body)(xd, &L, upk, b, yn, F, Fpad, TH, TW, relu);
}

/* xi (1, Hp, Wp, 8) interleaved plane of 8 images -> yb as wino_pool_images */
__attribute__((target(WP_TARGET)))
static void WP_SFX(wino1_pool_images)(const float *xi, const float *upk, const float *b, float *yb, int64_t F,
                              int64_t Fpad, int64_t Hp, int64_t Wp, int64_t TH, int64_t TW, int64_t ofs,
                              int64_t oys, int relu) {
    const wino_layout L = wino_images_layout(Hp, Wp, ofs, oys);
    WP_SFX(wino1_pool_body)(xi, &L, upk, b, yb, F, Fpad, TH, TW, relu);
}

/* nimg <= 8 images x (C,H,W) (image i at x + i*C*H*W) -> the interior of xi (C, Hp, Wp, 8),
 * lane i = image i, lanes >= nimg zero; the padding of xi is left as it is (zeroed once per
 * slot). */
__attribute__((target(WP_TARGET)))
static void WP_SFX(wino_interleave8)(const float *x, int64_t nimg, float *xi, int64_t C, int64_t H, int64_t W,
                             int64_t pad, int64_t Hp, int64_t Wp) {
    const int64_t L = C * H * W;
    int64_t c = 0, h = 0, w = 0; /* coordinates of the flat index being stored */
    for (int64_t k0 = 0; k0 < L; k0 += 8) {
        const int64_t nk = L - k0 < 8 ? L - k0 : 8;
        __m256 r[8];
        for (int i = 0; i < 8; i++) r[i] = i < nimg ? WP_SFX(load_lanes)(x + i * L + k0, (int)nk) : _mm256_setzero_ps();
        conv_transpose8x8(r);
        for (int64_t j = 0; j < nk; j++) {
            _mm256_storeu_ps(xi + ((c * Hp + h + pad) * Wp + w + pad) * 8, r[j]);
            if (++w == W) {
                w = 0;
                if (++h == H) h = 0, c++;
            }
        }
    }
}

/* yb (L, 8) -> the first nimg <= 8 rows of L floats, row i (lane i) at y + i*L */
__attribute__((target(WP_TARGET)))
static void WP_SFX(wino_deinterleave8)(const float *yb, float *y, int64_t L, int64_t nimg) {
    for (int64_t k0 = 0; k0 < L; k0 += 8) {
        const int64_t nk = L - k0 < 8 ? L - k0 : 8;
        __m256 r[8];
        for (int64_t j = 0; j < 8; j++) r[j] = j < nk ? _mm256_loadu_ps(yb + (k0 + j) * 8) : _mm256_setzero_ps();
        conv_transpose8x8(r);
        for (int64_t i = 0; i < nimg; i++) WP_SFX(store_lanes)(y + i * L + k0, (int)nk, r[i]);
    }
}
#undef WP_KB
#undef WP_SFX
#undef WP_TARGET
#undef WP_AVX512
