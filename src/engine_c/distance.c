/* distance.c: L2 normalization and the Euclidean distance matrix, forward and backward.
 *
 * The distance matrix is one SGEMM plus an O(N*M) epilogue:
 *     dist_ij = ||x_i||^2 + ||r_j||^2 - 2 x_i . r_j      (clamped at 0, sqrt unless squared)
 * and its backward is two SGEMM over G (N,M) = dL/d(squared distance):
 *     dx = x * rowsum(G) - G r,   dr = r * colsum(G) - G^T x      (times 2 for the squared distance)
 * so no N x M x D tensor ever exists. See engine.h for the contracts.
 */
#include "engine.h"

#include <math.h>
#include <string.h>

/* Below this many elements a loop runs on the calling thread (a parallel region costs more). */
#define PAR_MIN 65536

/* x (N,D) -> y (N,D), norms (N) */
void me_l2_normalize_forward(const float *x, float *y, float *norms, int64_t N, int64_t D, float eps) {
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * D >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        const float *xi = x + i * D;
        float *yi = y + i * D;
        double ss = 0.0;
        for (int64_t k = 0; k < D; k++) ss += (double)xi[k] * (double)xi[k];
        float nrm = (float)sqrt(ss);
        norms[i] = nrm;
        float den = nrm > eps ? nrm : eps;
        for (int64_t k = 0; k < D; k++) yi[k] = xi[k] / den;
    }
}

/* dy (N,D), y (N,D), norms (N) -> dx (N,D) */
void me_l2_normalize_backward(const float *dy, const float *y, const float *norms, float *dx,
                              int64_t N, int64_t D, float eps) {
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * D >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        const float *dyi = dy + i * D;
        const float *yi = y + i * D;
        float *dxi = dx + i * D;
        float nrm = norms[i];
        if (nrm >= eps) {
            double dot = 0.0;
            for (int64_t k = 0; k < D; k++) dot += (double)yi[k] * (double)dyi[k];
            float fdot = (float)dot;
            for (int64_t k = 0; k < D; k++) dxi[k] = (dyi[k] - yi[k] * fdot) / nrm;
        } else {
            /* y = x / eps: the clamp is active, its gradient is 0 */
            for (int64_t k = 0; k < D; k++) dxi[k] = dyi[k] / eps;
        }
    }
}

/* floats of scratch for me_euclidean_forward: N + M (row norms) */
int64_t me_euclidean_forward_workspace_size(int64_t N, int64_t M) { return N + M; }

/* floats of scratch for me_euclidean_backward: N*M (G) + N + M (its row and column sums) */
int64_t me_euclidean_backward_workspace_size(int64_t N, int64_t M) { return N * M + N + M; }

/* x (N,D) -> sq (N) = squared row norms (double accumulation) */
static void row_sqnorms(const float *x, float *sq, int64_t N, int64_t D) {
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * D >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        const float *xi = x + i * D;
        double ss = 0.0;
        for (int64_t k = 0; k < D; k++) ss += (double)xi[k] * (double)xi[k];
        sq[i] = (float)ss;
    }
}

/* Relative threshold below which a squared distance from the SGEMM formula is recomputed directly:
 * its rounding error is ~1e-7 * (||x||^2 + ||r||^2), so results above it keep ~1e-4 relative accuracy. */
#define REFINE 1e-3f

/* ||a - b||^2 (D) with double accumulation */
static inline float sqdist(const float *a, const float *b, int64_t D) {
    double acc = 0.0;
    for (int64_t k = 0; k < D; k++) {
        const float t = a[k] - b[k];
        acc += (double)t * (double)t;
    }
    return (float)acc;
}

/* x (N,D), r (M,D) -> dist (N,M); ws (N+M) */
void me_euclidean_forward(const float *x, const float *r, float *dist, int64_t N, int64_t M, int64_t D,
                          int squared, float *ws) {
    if (N <= 0 || M <= 0) return;
    float *xn = ws, *rn = ws + N;
    if (D <= 0) {
        memset(dist, 0, (size_t)(N * M) * sizeof(float));
        return;
    }
    row_sqnorms(x, xn, N, D);
    if (r == x && M == N) memcpy(rn, xn, (size_t)N * sizeof(float));
    else row_sqnorms(r, rn, M, D);
    me_sgemm(0, 1, N, M, D, -2.0f, x, D, r, D, 0.0f, dist, M);
    const int self = r == x && M == N;
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        float *di = dist + i * M;
        const float xi = xn[i];
        for (int64_t j = 0; j < M; j++) {
            const float sq = xi + rn[j];
            float v = sq + di[j];
            if (v < REFINE * sq) {
                /* cancellation: ||x||^2 + ||r||^2 - 2 x.r loses the digits of a small distance;
                 * recompute it directly (exactly 0 for duplicates and the diagonal) */
                v = (self && i == j) ? 0.0f : sqdist(x + i * D, r + j * D, D);
            }
            di[j] = squared ? v : sqrtf(v);
        }
    }
}

/* ddist (N,M), dist (N,M) -> dx (N,D) or NULL, dr (M,D) or NULL; ws (N*M + N + M) */
void me_euclidean_backward(const float *x, const float *r, const float *dist, const float *ddist,
                           float *dx, float *dr, int64_t N, int64_t M, int64_t D, int squared, float *ws) {
    if (D <= 0) return;
    if (N <= 0 || M <= 0) {
        if (dx && N > 0) memset(dx, 0, (size_t)(N * D) * sizeof(float));
        if (dr && M > 0) memset(dr, 0, (size_t)(M * D) * sizeof(float));
        return;
    }
    float *G = ws, *rowsum = ws + N * M, *colsum = ws + N * M + N;
    /* G = d L / d (squared distance) without the factor 2 for squared, 1/(2d) * 2 = 1/d otherwise;
     * both cases then use dx = f * (x rowsum(G) - G r) with f = 2 (squared) or 1. */
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        const float *di = dist + i * M, *gi = ddist + i * M;
        float *Gi = G + i * M;
        double rs = 0.0;
        if (squared) {
            for (int64_t j = 0; j < M; j++) {
                float g = di[j] > 0.0f ? gi[j] : 0.0f;
                Gi[j] = g;
                rs += g;
            }
        } else {
            for (int64_t j = 0; j < M; j++) {
                float g = di[j] > 0.0f ? gi[j] / di[j] : 0.0f;
                Gi[j] = g;
                rs += g;
            }
        }
        rowsum[i] = (float)rs;
    }
    const float f = squared ? 2.0f : 1.0f;
    if (dx) {
        me_sgemm(0, 0, N, D, M, -f, G, M, r, D, 0.0f, dx, D);
        #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * D >= PAR_MIN)
        for (int64_t i = 0; i < N; i++) {
            const float s = f * rowsum[i];
            const float *xi = x + i * D;
            float *dxi = dx + i * D;
            for (int64_t k = 0; k < D; k++) dxi[k] += s * xi[k];
        }
    }
    if (dr) {
        /* column sums in a fixed order (rows ascending), columns split across threads */
        const int64_t CB = 256;
        const int64_t nblk = (M + CB - 1) / CB;
        #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
        for (int64_t b = 0; b < nblk; b++) {
            const int64_t j0 = b * CB, j1 = j0 + CB < M ? j0 + CB : M;
            double acc[256];
            for (int64_t j = j0; j < j1; j++) acc[j - j0] = 0.0;
            for (int64_t i = 0; i < N; i++) {
                const float *Gi = G + i * M;
                for (int64_t j = j0; j < j1; j++) acc[j - j0] += Gi[j];
            }
            for (int64_t j = j0; j < j1; j++) colsum[j] = (float)acc[j - j0];
        }
        me_sgemm(1, 0, M, D, N, -f, G, M, x, D, 0.0f, dr, D);
        #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (M * D >= PAR_MIN)
        for (int64_t j = 0; j < M; j++) {
            const float s = f * colsum[j];
            const float *rj = r + j * D;
            float *drj = dr + j * D;
            for (int64_t k = 0; k < D; k++) drj[k] += s * rj[k];
        }
    }
}

/* ------------------------------------------------------------------ symmetric (same-set) helpers */
#define SYM_T 64 /* tile edge of the transposes */

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_TR16_AVX512 1
/* dst[c * ldd + r] = src[r * lds + c] for a full 16 x 16 block (unpack / shuffle transpose). */
__attribute__((target("avx512f")))
static void tr16_avx512(const float *src, int64_t lds, float *dst, int64_t ldd) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(src + i * lds);
    for (int i = 0; i < 16; i += 2) { /* lane L: (r_i, r_i+1) at columns 4L, 4L+1 / 4L+2, 4L+3 */
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) { /* r[i+k], lane L: rows i..i+3 of column 4L+k */
        const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
        const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    for (int k = 0; k < 4; k++) { /* column 4L+k = lane L of r[k], r[4+k], r[8+k], r[12+k] */
        const __m512 v0 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x44);
        const __m512 v1 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xEE);
        const __m512 w0 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x44);
        const __m512 w1 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xEE);
        _mm512_storeu_ps(dst + (0 + k) * ldd, _mm512_shuffle_f32x4(v0, w0, 0x88));
        _mm512_storeu_ps(dst + (4 + k) * ldd, _mm512_shuffle_f32x4(v0, w0, 0xDD));
        _mm512_storeu_ps(dst + (8 + k) * ldd, _mm512_shuffle_f32x4(v1, w1, 0x88));
        _mm512_storeu_ps(dst + (12 + k) * ldd, _mm512_shuffle_f32x4(v1, w1, 0xDD));
    }
}
#endif

/* dst[c * ldd + r] = src[r * lds + c], r < nr, c < nc (16 x 16 blocks by AVX-512 when usable). */
static void transpose_block(const float *src, int64_t lds, float *dst, int64_t ldd, int64_t nr, int64_t nc,
                            int avx512) {
    for (int64_t r0 = 0; r0 < nr; r0 += 16) {
        const int64_t br = nr - r0 < 16 ? nr - r0 : 16;
        for (int64_t c0 = 0; c0 < nc; c0 += 16) {
            const int64_t bc = nc - c0 < 16 ? nc - c0 : 16;
            const float *s = src + r0 * lds + c0;
            float *d = dst + c0 * ldd + r0;
#ifdef HAVE_TR16_AVX512
            if (avx512 && br == 16 && bc == 16) {
                tr16_avx512(s, lds, d, ldd);
                continue;
            }
#endif
            for (int64_t r = 0; r < br; r++)
                for (int64_t c = 0; c < bc; c++) d[c * ldd + r] = s[r * lds + c];
        }
    }
    (void)avx512;
}

static int sym_avx512(void) { return (me_cpu_features() & ME_CPU_AVX512F) != 0; }

/* a (N,N) -> out (N,N) = a + a^T (exactly symmetric: out[i][j] and out[j][i] are the same float sum).
 * Cache-blocked: each SYM_T x SYM_T tile of out reads its tile of a and the mirror tile transposed
 * through a stack buffer. Tile rows in parallel (static). out must not overlap a. */
void me_add_transpose_forward(const float *a, float *out, int64_t N) {
    const int64_t nt = (N + SYM_T - 1) / SYM_T;
    const int avx = sym_avx512();
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * N >= PAR_MIN)
    for (int64_t bi = 0; bi < nt; bi++) {
        float buf[SYM_T * SYM_T];
        const int64_t i0 = bi * SYM_T, ni = N - i0 < SYM_T ? N - i0 : SYM_T;
        for (int64_t bj = 0; bj < nt; bj++) {
            const int64_t j0 = bj * SYM_T, nj = N - j0 < SYM_T ? N - j0 : SYM_T;
            transpose_block(a + j0 * N + i0, N, buf, SYM_T, nj, ni, avx); /* buf[i][j] = a[j0+j][i0+i] */
            for (int64_t i = 0; i < ni; i++) {
                const float *ar = a + (i0 + i) * N + j0;
                const float *br = buf + i * SYM_T;
                float *o = out + (i0 + i) * N + j0;
                for (int64_t j = 0; j < nj; j++) o[j] = ar[j] + br[j];
            }
        }
    }
}

/* Tile row bj of the lower triangle of c (N,N) from the upper one: c[j][i] = c[i][j], i < j. */
static void mirror_tile_row(float *c, int64_t N, int64_t bj, int avx) {
    float buf[SYM_T * SYM_T];
    const int64_t j0 = bj * SYM_T, nj = N - j0 < SYM_T ? N - j0 : SYM_T;
    for (int64_t bi = 0; bi < bj; bi++) { /* off the diagonal: tile (bi, bj) -> tile (bj, bi) */
        const int64_t i0 = bi * SYM_T, ni = N - i0 < SYM_T ? N - i0 : SYM_T;
        transpose_block(c + i0 * N + j0, N, c + j0 * N + i0, N, ni, nj, avx);
    }
    transpose_block(c + j0 * N + j0, N, buf, SYM_T, nj, nj, avx); /* buf[j][i] = c[j0+i][j0+j] */
    for (int64_t j = 1; j < nj; j++) {
        float *o = c + (j0 + j) * N + j0;
        const float *br = buf + j * SYM_T;
        for (int64_t i = 0; i < j; i++) o[i] = br[i];
    }
}

#define GRAM_B 96 /* row block of the Gram matrix */

/* x (N,D) -> out (N,N) = x x^T, exactly symmetric: the blocks on and above the diagonal by
 * me_sgemm_st (one call per GRAM_B-row block, against the rows from the block on; blocks k and
 * nb-1-k paired so the static split is balanced), then the rest mirrored, all in ONE parallel
 * region (few fork/joins: see docs/architecture.md on busy machines). me_sgemm_st gives the same
 * bits as me_sgemm, so the result does not depend on the thread count. */
void me_gram_forward(const float *x, float *out, int64_t N, int64_t D) {
    const int64_t nb = (N + GRAM_B - 1) / GRAM_B, npair = (nb + 1) / 2;
    const int64_t nt = (N + SYM_T - 1) / SYM_T;
    const int avx = sym_avx512();
    #pragma omp parallel num_threads(me_get_num_threads()) if (N * N * D >= (1 << 18) && npair > 1)
    {
        #pragma omp for schedule(static)
        for (int64_t p = 0; p < npair; p++) {
            for (int h = 0; h < 2; h++) {
                const int64_t b = h == 0 ? p : nb - 1 - p;
                if (h == 1 && b == p) break;
                const int64_t i0 = b * GRAM_B, ni = N - i0 < GRAM_B ? N - i0 : GRAM_B;
                me_sgemm_st(0, 1, ni, N - i0, D, 1.0f, x + i0 * D, D, x + i0 * D, D, 0.0f,
                            out + i0 * N + i0, N);
            }
        }
        /* (implicit barrier: the whole upper triangle is written) */
        #pragma omp for schedule(static)
        for (int64_t bj = 0; bj < nt; bj++) mirror_tile_row(out, N, bj, avx);
    }
}
