/* pair_losses.c: fused ContrastiveLoss / TripletMarginLoss reductions over a distance matrix.
 *
 * Semantics are pytorch-metric-learning's (losses/contrastive_loss.py, triplet_margin_loss.py,
 * reducers/avg_non_zero_reducer.py, mean_reducer.py); see engine.h for the contracts.
 *
 * Each entry point has two bodies: the fused one (ME_PAIR_MEAN / ME_PAIR_AVG_NON_ZERO, gradient
 * wanted, no per-term losses), and a per-term one ("*_terms") that writes the per-term losses and,
 * under ME_PAIR_WEIGHTS, d value / d dist for value = sum_t weights_t * l_t.
 *
 * Per-term losses are computed in float32 with the same operation order as PML (so the "loss > 0"
 * test of AvgNonZeroReducer decides the same way on the same distances); sums are accumulated in
 * double. The "all" kernels split rows into NCHUNK fixed chunks (independent of the thread count),
 * each chunk's partial sums land in its own slot, and the slots are added in chunk order: the
 * result is bitwise identical for any thread count. The gradient is accumulated as a per-entry
 * weight during the same pass and scaled by 1/denominator at the end.
 */
#include "engine.h"

#include <math.h>
#include <string.h>

#define NCHUNK 64
/* Below this many distance-matrix entries (times the per-entry work) a kernel runs on the calling
 * thread; the chunking, hence the result, is the same either way. */
#define PAR_MIN 65536

static inline int64_t chunk_lo(int64_t c, int64_t n) { return (c * n) / NCHUNK; }

static void scale_rows(float *a, int64_t N, int64_t M, float s) {
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        float *ai = a + i * M;
        for (int64_t j = 0; j < M; j++) ai[j] *= s;
    }
}

static void zero_rows(float *a, int64_t N, int64_t M) {
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) memset(a + i * M, 0, (size_t)M * sizeof(float));
}

/* torch.nn.functional.softplus(v) (beta 1, threshold 20) and its derivative */
static inline float softplus_f(float v) { return v > 20.0f ? v : log1pf(expf(v)); }
static inline float softplus_grad(float v) {
    if (v > 20.0f) return 1.0f;
    float z = expf(v);
    return z / (z + 1.0f);
}

/* ------------------------------------------------------------------ contrastive */

/* dist (N,M), labels (N), ref_labels (M) -> ddist (N,M); stats (6) */
static double contrastive_all_fused(const float *dist, const int64_t *labels, const int64_t *ref_labels,
                                    float *ddist, int64_t N, int64_t M, float pos_margin,
                                    float neg_margin, int exclude_self, int inverted, int nonzero_only,
                                    double *stats) {
    /* part[c]: pos_sum, neg_sum, n_pos, n_neg, n_pos_nz, n_neg_nz */
    double part[NCHUNK][6];
    const float pm = pos_margin, nm = neg_margin;
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t c = 0; c < NCHUNK; c++) {
        double sp = 0.0, sn = 0.0;
        int64_t np_ = 0, nn = 0, ap = 0, an = 0;
        for (int64_t i = chunk_lo(c, N); i < chunk_lo(c + 1, N); i++) {
            const float *di = dist + i * M;
            float *gi = ddist + i * M;
            const int64_t li = labels[i];
            float rsp = 0.0f, rsn = 0.0f;
            int64_t rnp = 0, rnn = 0, rap = 0, ran = 0;
            #pragma omp simd reduction(+:rsp, rsn, rnp, rnn, rap, ran)
            for (int64_t j = 0; j < M; j++) {
                const int same = ref_labels[j] == li;
                const int pos = same && !(exclude_self && j == i);
                const int neg = !same;
                const float d = di[j];
                const float vp = inverted ? pm - d : d - pm;
                const float vn = inverted ? d - nm : nm - d;
                const int actp = pos && vp > 0.0f;
                const int actn = neg && vn > 0.0f;
                rsp += actp ? vp : 0.0f;
                rsn += actn ? vn : 0.0f;
                rnp += pos;
                rnn += neg;
                rap += actp;
                ran += actn;
                /* unscaled dL/dd: +-1 for an active term; scaled below */
                gi[j] = actp ? (inverted ? -1.0f : 1.0f) : (actn ? (inverted ? 1.0f : -1.0f) : 0.0f);
            }
            sp += rsp;
            sn += rsn;
            np_ += rnp;
            nn += rnn;
            ap += rap;
            an += ran;
        }
        part[c][0] = sp; part[c][1] = sn; part[c][2] = (double)np_;
        part[c][3] = (double)nn; part[c][4] = (double)ap; part[c][5] = (double)an;
    }
    double tot[6] = {0, 0, 0, 0, 0, 0};
    for (int c = 0; c < NCHUNK; c++)
        for (int k = 0; k < 6; k++) tot[k] += part[c][k];
    const double den_p = nonzero_only ? tot[4] : tot[2];
    const double den_n = nonzero_only ? tot[5] : tot[3];
    const double pos_loss = den_p > 0 ? tot[0] / den_p : 0.0;
    const double neg_loss = den_n > 0 ? tot[1] / den_n : 0.0;
    const float wp = den_p > 0 ? (float)(1.0 / den_p) : 0.0f;
    const float wn = den_n > 0 ? (float)(1.0 / den_n) : 0.0f;
    /* entries hold the sign of the active branch; positives and negatives differ by label */
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t i = 0; i < N; i++) {
        float *gi = ddist + i * M;
        const int64_t li = labels[i];
        #pragma omp simd
        for (int64_t j = 0; j < M; j++) {
            const float w = ref_labels[j] == li ? wp : wn;
            gi[j] *= w;
        }
    }
    if (stats) {
        stats[0] = pos_loss; stats[1] = neg_loss; stats[2] = tot[2];
        stats[3] = tot[3]; stats[4] = tot[4]; stats[5] = tot[5];
    }
    return pos_loss + neg_loss;
}

/* dist (N,M), pairs (a1,p) (K1), (a2,n) (K2) -> ddist (N,M); stats (6). Serial: scatter-add with
 * repeated pairs, in index order (deterministic). */
static double contrastive_pairs_fused(const float *dist, const int64_t *a1, const int64_t *p, int64_t K1,
                                      const int64_t *a2, const int64_t *n, int64_t K2, float *ddist,
                                      int64_t N, int64_t M, float pos_margin, float neg_margin,
                                      int inverted, int nonzero_only, double *stats) {
    zero_rows(ddist, N, M);
    const float pm = pos_margin, nm = neg_margin;
    double sp = 0.0, sn = 0.0;
    int64_t ap = 0, an = 0;
    for (int64_t k = 0; k < K1; k++) {
        const float d = dist[a1[k] * M + p[k]];
        const float v = inverted ? pm - d : d - pm;
        if (v > 0.0f) { sp += v; ap++; }
    }
    for (int64_t k = 0; k < K2; k++) {
        const float d = dist[a2[k] * M + n[k]];
        const float v = inverted ? d - nm : nm - d;
        if (v > 0.0f) { sn += v; an++; }
    }
    const double den_p = nonzero_only ? (double)ap : (double)K1;
    const double den_n = nonzero_only ? (double)an : (double)K2;
    const double pos_loss = den_p > 0 ? sp / den_p : 0.0;
    const double neg_loss = den_n > 0 ? sn / den_n : 0.0;
    if (den_p > 0) {
        const float w = (float)(1.0 / den_p) * (inverted ? -1.0f : 1.0f);
        for (int64_t k = 0; k < K1; k++) {
            const int64_t idx = a1[k] * M + p[k];
            const float d = dist[idx];
            const float v = inverted ? pm - d : d - pm;
            if (v > 0.0f) ddist[idx] += w;
        }
    }
    if (den_n > 0) {
        const float w = (float)(1.0 / den_n) * (inverted ? 1.0f : -1.0f);
        for (int64_t k = 0; k < K2; k++) {
            const int64_t idx = a2[k] * M + n[k];
            const float d = dist[idx];
            const float v = inverted ? d - nm : nm - d;
            if (v > 0.0f) ddist[idx] += w;
        }
    }
    if (stats) {
        stats[0] = pos_loss; stats[1] = neg_loss; stats[2] = (double)K1;
        stats[3] = (double)K2; stats[4] = (double)ap; stats[5] = (double)an;
    }
    return pos_loss + neg_loss;
}

/* A pair's violation, PML's float32 operation order: positive d - pm, negative nm - d
 * (inverted: pm - s, s - nm); the term's loss is its relu. */
static inline float contrastive_violation(float d, int pos, float pm, float nm, int inverted) {
    return pos ? (inverted ? pm - d : d - pm) : (inverted ? d - nm : nm - d);
}

/* The per-term pass of me_contrastive_all: losses (N,M) or NULL gets l_ij at the positive and
 * negative pairs (0 elsewhere); with weights (N,M) (read at those pairs) or NULL (all 0), ddist
 * (N,M) or NULL gets weights_ij * dl_ij/d dist_ij. tot (8): as stats of the fused body's sums
 * (pos_sum, neg_sum, n_pos, n_neg, n_pos_nz, n_neg_nz), then sum_pos w l, sum_neg w l. */
static void contrastive_all_terms(const float *dist, const int64_t *labels, const int64_t *ref_labels,
                                  const float *weights, float *losses, float *ddist, int64_t N,
                                  int64_t M, float pm, float nm, int exclude_self, int inverted,
                                  double *tot) {
    double part[NCHUNK][8];
    const float sgp = inverted ? -1.0f : 1.0f; /* dl/dd of an active positive term */
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t c = 0; c < NCHUNK; c++) {
        double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int64_t i = chunk_lo(c, N); i < chunk_lo(c + 1, N); i++) {
            const float *di = dist + i * M;
            const float *wi = weights ? weights + i * M : NULL;
            float *li = losses ? losses + i * M : NULL;
            float *gi = ddist ? ddist + i * M : NULL;
            const int64_t lab = labels[i];
            float rsp = 0.0f, rsn = 0.0f;
            double wsp = 0.0, wsn = 0.0;
            int64_t rnp = 0, rnn = 0, rap = 0, ran = 0;
            for (int64_t j = 0; j < M; j++) {
                const int same = ref_labels[j] == lab;
                const int pos = same && !(exclude_self && j == i);
                const int term = pos || !same;
                const float v = term ? contrastive_violation(di[j], pos, pm, nm, inverted) : 0.0f;
                const int act = v > 0.0f;
                const float l = act ? v : 0.0f;
                rsp += pos ? l : 0.0f;
                rsn += !same ? l : 0.0f;
                rnp += pos;
                rnn += !same;
                rap += pos && act;
                ran += !same && act;
                if (li) li[j] = l;
                const float w = (wi && term) ? wi[j] : 0.0f;
                if (pos) wsp += (double)w * (double)l;
                if (!same) wsn += (double)w * (double)l;
                if (gi) gi[j] = act ? (pos ? w * sgp : -(w * sgp)) : 0.0f;
            }
            acc[0] += rsp; acc[1] += rsn; acc[2] += (double)rnp; acc[3] += (double)rnn;
            acc[4] += (double)rap; acc[5] += (double)ran; acc[6] += wsp; acc[7] += wsn;
        }
        for (int k = 0; k < 8; k++) part[c][k] = acc[k];
    }
    for (int k = 0; k < 8; k++) tot[k] = 0.0;
    for (int c = 0; c < NCHUNK; c++)
        for (int k = 0; k < 8; k++) tot[k] += part[c][k];
}

/* value and stats (6) of a contrastive reduction from the sums tot (8) of a per-term pass */
static double contrastive_value(const double *tot, int reduction, double *stats) {
    double pos_loss, neg_loss;
    if (reduction == ME_PAIR_WEIGHTS) {
        pos_loss = tot[6];
        neg_loss = tot[7];
    } else {
        const double den_p = reduction == ME_PAIR_AVG_NON_ZERO ? tot[4] : tot[2];
        const double den_n = reduction == ME_PAIR_AVG_NON_ZERO ? tot[5] : tot[3];
        pos_loss = den_p > 0 ? tot[0] / den_p : 0.0;
        neg_loss = den_n > 0 ? tot[1] / den_n : 0.0;
    }
    if (stats) {
        stats[0] = pos_loss; stats[1] = neg_loss; stats[2] = tot[2];
        stats[3] = tot[3]; stats[4] = tot[4]; stats[5] = tot[5];
    }
    return pos_loss + neg_loss;
}

double me_contrastive_all(const float *dist, const int64_t *labels, const int64_t *ref_labels,
                          const float *weights, float *losses, float *ddist, int64_t N, int64_t M,
                          float pos_margin, float neg_margin, int exclude_self, int inverted,
                          int reduction, double *stats) {
    const int weighted = reduction == ME_PAIR_WEIGHTS;
    if (!weighted && !losses && ddist)
        return contrastive_all_fused(dist, labels, ref_labels, ddist, N, M, pos_margin, neg_margin,
                                     exclude_self, inverted, reduction == ME_PAIR_AVG_NON_ZERO, stats);
    double tot[8];
    contrastive_all_terms(dist, labels, ref_labels, weighted ? weights : NULL, losses,
                          weighted ? ddist : NULL, N, M, pos_margin, neg_margin, exclude_self,
                          inverted, tot);
    if (!weighted && ddist) /* losses and the fused gradient: the fused body gives the same value */
        return contrastive_all_fused(dist, labels, ref_labels, ddist, N, M, pos_margin, neg_margin,
                                     exclude_self, inverted, reduction == ME_PAIR_AVG_NON_ZERO, stats);
    return contrastive_value(tot, reduction, stats);
}

/* The per-term pass of me_contrastive_pairs (serial, pair order): losses (K1+K2) or NULL, the
 * positives first; weights (K1+K2) or NULL; ddist (N,M) or NULL, overwritten with
 * sum_k weights_k dl_k/d dist. tot (8) as for contrastive_all_terms. */
static void contrastive_pairs_terms(const float *dist, const int64_t *a1, const int64_t *p, int64_t K1,
                                    const int64_t *a2, const int64_t *n, int64_t K2,
                                    const float *weights, float *losses, float *ddist, int64_t N,
                                    int64_t M, float pm, float nm, int inverted, double *tot) {
    const float sgp = inverted ? -1.0f : 1.0f;
    for (int k = 0; k < 8; k++) tot[k] = 0.0;
    tot[2] = (double)K1;
    tot[3] = (double)K2;
    if (ddist) zero_rows(ddist, N, M);
    for (int64_t k = 0; k < K1 + K2; k++) {
        const int pos = k < K1;
        const int64_t idx = pos ? a1[k] * M + p[k] : a2[k - K1] * M + n[k - K1];
        const float v = contrastive_violation(dist[idx], pos, pm, nm, inverted);
        const int act = v > 0.0f;
        const float l = act ? v : 0.0f;
        if (losses) losses[k] = l;
        tot[pos ? 0 : 1] += l;
        tot[pos ? 4 : 5] += act;
        const float w = weights ? weights[k] : 0.0f;
        tot[pos ? 6 : 7] += (double)w * (double)l;
        if (ddist && act) ddist[idx] += pos ? w * sgp : -(w * sgp);
    }
}

double me_contrastive_pairs(const float *dist, const int64_t *a1, const int64_t *p, int64_t K1,
                            const int64_t *a2, const int64_t *n, int64_t K2, const float *weights,
                            float *losses, float *ddist, int64_t N, int64_t M, float pos_margin,
                            float neg_margin, int inverted, int reduction, double *stats) {
    const int weighted = reduction == ME_PAIR_WEIGHTS;
    if (!weighted && !losses && ddist)
        return contrastive_pairs_fused(dist, a1, p, K1, a2, n, K2, ddist, N, M, pos_margin, neg_margin,
                                       inverted, reduction == ME_PAIR_AVG_NON_ZERO, stats);
    double tot[8];
    contrastive_pairs_terms(dist, a1, p, K1, a2, n, K2, weighted ? weights : NULL, losses,
                            weighted ? ddist : NULL, N, M, pos_margin, neg_margin, inverted, tot);
    if (!weighted && ddist)
        return contrastive_pairs_fused(dist, a1, p, K1, a2, n, K2, ddist, N, M, pos_margin, neg_margin,
                                       inverted, reduction == ME_PAIR_AVG_NON_ZERO, stats);
    return contrastive_value(tot, reduction, stats);
}

/* -------------------------------------------------------------------- triplet */

/* One triplet's violation with PML's float32 operation order. */
static inline float triplet_violation(float dap, float dan, float margin, int inverted) {
    return inverted ? (dan - dap) + margin : (dap - dan) + margin;
}

/* Swap: the negative distance used is min(d_an, d_pn) (inverted: max). Returns it and the share of
 * the gradient going to d_an (1, 0.5 on a tie, 0); d_pn gets 1 - share. */
static inline float swap_pick(float dan, float dpn, int inverted, float *share_an) {
    if (dan == dpn) { *share_an = 0.5f; return dan; }
    int an_wins = inverted ? (dan > dpn) : (dan < dpn);
    *share_an = an_wins ? 1.0f : 0.0f;
    return an_wins ? dan : dpn;
}

/* The hot loop of me_triplet_all (relu, no swap): one positive distance dap against a block of
 * kb negative distances dn (non-negatives hold +-INFINITY, which never violates). Adds the sum of
 * the active violations to *rs and their count to *rc, and -sg per active term to g[k].
 * Branch-free over TB_L lane accumulators (term k goes to lane k % TB_L; lanes added in order),
 * so the generic, AVX2 and AVX-512 builds of it give the same bits; picked like the SGEMM
 * micro-kernel (me_gemm_kernel_id). */
#define KB 512
#define TB_L 16
#define TB_PARAMS const float *restrict dn, float *restrict g, int64_t kb, float dap, float margin, \
                  int inverted, float sg, float *rs_out, float *rc_out
#define TB_ARGS dn, g, kb, dap, margin, inverted, sg, rs_out, rc_out

#pragma GCC push_options
#pragma GCC optimize("no-trapping-math") /* lets the compares become selects; values unchanged */
static inline __attribute__((always_inline)) void triplet_block_body(TB_PARAMS) {
    float rs[TB_L] = {0}, rc[TB_L] = {0};
    const float s = inverted ? -1.0f : 1.0f; /* v = (dap - dn) + margin, or (dn - dap) + margin */
    int64_t k = 0;
    for (; k + TB_L <= kb; k += TB_L) {
        for (int l = 0; l < TB_L; l++) {
            const float v = s * (dap - dn[k + l]) + margin;
            const int act = v > 0.0f;
            rs[l] += act ? v : 0.0f;
            rc[l] += act ? 1.0f : 0.0f;
            g[k + l] -= act ? sg : 0.0f;
        }
    }
    for (int l = 0; k < kb; k++, l++) {
        const float v = s * (dap - dn[k]) + margin;
        const int act = v > 0.0f;
        rs[l] += act ? v : 0.0f;
        rc[l] += act ? 1.0f : 0.0f;
        g[k] -= act ? sg : 0.0f;
    }
    float trs = 0.0f, trc = 0.0f;
    for (int l = 0; l < TB_L; l++) { trs += rs[l]; trc += rc[l]; }
    *rs_out += trs;
    *rc_out += trc;
}

typedef void (*triplet_block_fn)(TB_PARAMS);
static void triplet_block_generic(TB_PARAMS) { triplet_block_body(TB_ARGS); }
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) static void triplet_block_avx2(TB_PARAMS) { triplet_block_body(TB_ARGS); }
__attribute__((target("avx512f,fma"))) static void triplet_block_avx512(TB_PARAMS) { triplet_block_body(TB_ARGS); }
#endif
#pragma GCC pop_options

static triplet_block_fn pick_triplet_block(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    switch (me_gemm_kernel_id()) {
    case 2: return triplet_block_avx512;
    case 1: return triplet_block_avx2;
    default: break;
    }
#endif
    return triplet_block_generic;
}

/* dist (N,M), labels (N), ref_labels (M) -> ddist (N,M); stats (3) */
static double triplet_all_fused(const float *dist, const int64_t *labels, const int64_t *ref_labels,
                                float *ddist, int64_t N, int64_t M, float margin, int exclude_self,
                                int swap, int smooth, int inverted, int nonzero_only, double *stats) {
    double part[NCHUNK][3]; /* loss sum, n_triplets, n_nonzero */
    const float sg = inverted ? -1.0f : 1.0f; /* dv/dd_ap; dv/dd_an = -sg */
    if (swap && N != M) swap = 0; /* guarded by the wrappers; never read rows past N */
    const triplet_block_fn triplet_block = pick_triplet_block();
    zero_rows(ddist, N, M);
    /* work ~ N * M * (positives per anchor): parallel from much smaller matrices than the others */
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN / 4)
    for (int64_t c = 0; c < NCHUNK; c++) {
        double s = 0.0;
        int64_t nt = 0, nz = 0;
        for (int64_t a = chunk_lo(c, N); a < chunk_lo(c + 1, N); a++) {
            const float *da = dist + a * M;
            float *ga = ddist + a * M;
            const int64_t la = labels[a];
            int64_t nneg = 0;
            for (int64_t k = 0; k < M; k++) nneg += ref_labels[k] != la;
            /* row a as the anchor: terms (a, j, k) write ga[j] and ga[k] */
            if (nneg == 0) {
                /* no negative: no triplet, but under swap row a may still be a positive below */
            } else if (!swap && !smooth) {
                /* the default: relu, no swap. Blocks of KB negatives (non-negatives masked to a
                 * distance that can never violate), all positives j against each block. */
                for (int64_t k0 = 0; k0 < M; k0 += KB) {
                    const int64_t kb = M - k0 < KB ? M - k0 : KB;
                    float dn[KB];
                    const float far = inverted ? -INFINITY : INFINITY;
                    for (int64_t k = 0; k < kb; k++) dn[k] = ref_labels[k0 + k] != la ? da[k0 + k] : far;
                    for (int64_t j = 0; j < M; j++) {
                        if (ref_labels[j] != la || (exclude_self && j == a)) continue;
                        float rs = 0.0f, rc = 0.0f;
                        triplet_block(dn, ga + k0, kb, da[j], margin, inverted, sg, &rs, &rc);
                        ga[j] += sg * rc;
                        s += rs;
                        nz += (int64_t)rc;
                    }
                }
                for (int64_t j = 0; j < M; j++)
                    if (ref_labels[j] == la && !(exclude_self && j == a)) nt += nneg;
            } else {
                for (int64_t j = 0; j < M; j++) {
                    if (ref_labels[j] != la || (exclude_self && j == a)) continue;
                    const float dap = da[j];
                    nt += nneg;
                    float rs = 0.0f, gpos = 0.0f;
                    int64_t rnz = 0;
                    const float *dp = swap ? dist + j * M : NULL;
                    for (int64_t k = 0; k < M; k++) {
                        if (ref_labels[k] == la) continue;
                        float share = 1.0f;
                        const float dan = swap ? swap_pick(da[k], dp[k], inverted, &share) : da[k];
                        const float v = triplet_violation(dap, dan, margin, inverted);
                        const float l = smooth ? softplus_f(v) : (v > 0.0f ? v : 0.0f);
                        const int counted = nonzero_only ? l > 0.0f : 1;
                        if (!counted) continue;
                        const float w = smooth ? softplus_grad(v) : (v > 0.0f ? 1.0f : 0.0f);
                        rs += l;
                        rnz += l > 0.0f;
                        gpos += w;
                        ga[k] -= sg * w * share;
                    }
                    ga[j] += sg * gpos;
                    s += rs;
                    nz += rnz;
                }
            }
            /* swap: row a as the positive of anchors b (same class, b != a): d_pn = dist[a, k] */
            if (swap) {
                const int64_t lp = ref_labels[a];
                for (int64_t b = 0; b < N; b++) {
                    if (labels[b] != lp || (exclude_self && b == a)) continue;
                    const float *db = dist + b * M;
                    const float dbp = db[a];
                    for (int64_t k = 0; k < M; k++) {
                        if (ref_labels[k] == lp) continue;
                        float share = 1.0f;
                        const float dan = swap_pick(db[k], da[k], inverted, &share);
                        if (share == 1.0f) continue;
                        const float v = triplet_violation(dbp, dan, margin, inverted);
                        const float l = smooth ? softplus_f(v) : (v > 0.0f ? v : 0.0f);
                        const int counted = nonzero_only ? l > 0.0f : 1;
                        if (!counted) continue;
                        const float w = smooth ? softplus_grad(v) : (v > 0.0f ? 1.0f : 0.0f);
                        ga[k] -= sg * w * (1.0f - share);
                    }
                }
            }
        }
        part[c][0] = s; part[c][1] = (double)nt; part[c][2] = (double)nz;
    }
    double tot[3] = {0, 0, 0};
    for (int c = 0; c < NCHUNK; c++)
        for (int k = 0; k < 3; k++) tot[k] += part[c][k];
    const double den = nonzero_only ? tot[2] : tot[1];
    double loss = 0.0;
    if (den > 0) {
        loss = tot[0] / den;
        scale_rows(ddist, N, M, (float)(1.0 / den));
    } else {
        zero_rows(ddist, N, M);
    }
    if (stats) { stats[0] = loss; stats[1] = tot[1]; stats[2] = tot[2]; }
    return loss;
}

/* dist (N,M), triplets (a,p,n) (K) -> ddist (N,M); stats (3). Serial scatter in index order. */
static double triplet_triplets_fused(const float *dist, const int64_t *a, const int64_t *p,
                                     const int64_t *n, int64_t K, float *ddist, int64_t N, int64_t M,
                                     float margin, int swap, int smooth, int inverted,
                                     int nonzero_only, double *stats) {
    zero_rows(ddist, N, M);
    const float sg = inverted ? -1.0f : 1.0f;
    double s = 0.0;
    int64_t nz = 0;
    for (int64_t k = 0; k < K; k++) {
        const float dap = dist[a[k] * M + p[k]];
        float share = 1.0f;
        const float dan = swap ? swap_pick(dist[a[k] * M + n[k]], dist[p[k] * M + n[k]], inverted, &share)
                               : dist[a[k] * M + n[k]];
        const float v = triplet_violation(dap, dan, margin, inverted);
        const float l = smooth ? softplus_f(v) : (v > 0.0f ? v : 0.0f);
        if (!nonzero_only || l > 0.0f) {
            s += l;
            nz += l > 0.0f;
            const float w = smooth ? softplus_grad(v) : (v > 0.0f ? 1.0f : 0.0f);
            ddist[a[k] * M + p[k]] += sg * w;
            if (share > 0.0f) ddist[a[k] * M + n[k]] -= sg * w * share;
            if (share < 1.0f) ddist[p[k] * M + n[k]] -= sg * w * (1.0f - share);
        }
    }
    const double den = nonzero_only ? (double)nz : (double)K;
    double loss = 0.0;
    if (den > 0) {
        loss = s / den;
        scale_rows(ddist, N, M, (float)(1.0 / den));
    } else {
        zero_rows(ddist, N, M);
    }
    if (stats) { stats[0] = loss; stats[1] = (double)K; stats[2] = (double)nz; }
    return loss;
}

/* triplets of anchor a: (positives of a) x (negatives of a) */
static inline int64_t anchor_triplets(const int64_t *labels, const int64_t *ref_labels, int64_t a,
                                      int64_t M, int exclude_self) {
    int64_t np_ = 0, nn = 0;
    for (int64_t k = 0; k < M; k++) {
        const int same = ref_labels[k] == labels[a];
        np_ += same && !(exclude_self && k == a);
        nn += !same;
    }
    return np_ * nn;
}

int64_t me_triplet_all_count(const int64_t *labels, const int64_t *ref_labels, int64_t N, int64_t M,
                             int exclude_self) {
    int64_t t = 0;
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) reduction(+:t) if (N * M >= PAR_MIN)
    for (int64_t a = 0; a < N; a++) t += anchor_triplets(labels, ref_labels, a, M, exclude_self);
    return t;
}

/* The loss of one triplet and dl/dv */
static inline float triplet_term(float v, int smooth, float *dl) {
    *dl = smooth ? softplus_grad(v) : (v > 0.0f ? 1.0f : 0.0f);
    return smooth ? softplus_f(v) : (v > 0.0f ? v : 0.0f);
}

/* The per-term pass of me_triplet_all: triplet t = (a, p, n) in (a, p, n) order (that of
 * utils.get_all_triplets_indices). losses (T) or NULL; weights (T) or NULL (all 0); ddist (N,M) or
 * NULL, overwritten with sum_t weights_t dl_t/d dist. tot (4): sum l, n_triplets, n_nonzero,
 * sum w l. Chunks of anchors in parallel, each starting at its own triplet offset; under swap with
 * a gradient the rows of the positives are written too, so that case runs on one thread. */
static void triplet_all_terms(const float *dist, const int64_t *labels, const int64_t *ref_labels,
                              const float *weights, float *losses, float *ddist, int64_t N, int64_t M,
                              float margin, int exclude_self, int swap, int smooth, int inverted,
                              double *tot) {
    int64_t base[NCHUNK + 1];
    double part[NCHUNK][4];
    const float sg = inverted ? -1.0f : 1.0f;
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * M >= PAR_MIN)
    for (int64_t c = 0; c < NCHUNK; c++) {
        int64_t t = 0;
        for (int64_t a = chunk_lo(c, N); a < chunk_lo(c + 1, N); a++)
            t += anchor_triplets(labels, ref_labels, a, M, exclude_self);
        base[c + 1] = t;
    }
    base[0] = 0;
    for (int c = 0; c < NCHUNK; c++) base[c + 1] += base[c];
    if (ddist) zero_rows(ddist, N, M);
    const int par = !(ddist && swap);
    #pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (par && N * M >= PAR_MIN / 4)
    for (int64_t c = 0; c < NCHUNK; c++) {
        int64_t t = base[c], nz = 0;
        double s = 0.0, ws = 0.0;
        for (int64_t a = chunk_lo(c, N); a < chunk_lo(c + 1, N); a++) {
            const float *da = dist + a * M;
            float *ga = ddist ? ddist + a * M : NULL;
            const int64_t la = labels[a];
            for (int64_t j = 0; j < M; j++) {
                if (ref_labels[j] != la || (exclude_self && j == a)) continue;
                const float dap = da[j];
                const float *dp = swap ? dist + j * M : NULL;
                float gpos = 0.0f;
                for (int64_t k = 0; k < M; k++) {
                    if (ref_labels[k] == la) continue;
                    float share = 1.0f, dl;
                    const float dan = swap ? swap_pick(da[k], dp[k], inverted, &share) : da[k];
                    const float l = triplet_term(triplet_violation(dap, dan, margin, inverted), smooth, &dl);
                    if (losses) losses[t] = l;
                    s += l;
                    nz += l > 0.0f;
                    const float w = weights ? weights[t] : 0.0f;
                    ws += (double)w * (double)l;
                    if (ga) {
                        const float g = w * dl;
                        gpos += g;
                        ga[k] -= sg * g * share;
                        if (share < 1.0f) ddist[j * M + k] -= sg * g * (1.0f - share);
                    }
                    t++;
                }
                if (ga) ga[j] += sg * gpos;
            }
        }
        part[c][0] = s; part[c][1] = (double)(t - base[c]); part[c][2] = (double)nz; part[c][3] = ws;
    }
    for (int k = 0; k < 4; k++) tot[k] = 0.0;
    for (int c = 0; c < NCHUNK; c++)
        for (int k = 0; k < 4; k++) tot[k] += part[c][k];
}

/* value and stats (3) of a triplet reduction from the sums tot (4) of a per-term pass */
static double triplet_value(const double *tot, int reduction, double *stats) {
    double loss;
    if (reduction == ME_PAIR_WEIGHTS) {
        loss = tot[3];
    } else {
        const double den = reduction == ME_PAIR_AVG_NON_ZERO ? tot[2] : tot[1];
        loss = den > 0 ? tot[0] / den : 0.0;
    }
    if (stats) { stats[0] = loss; stats[1] = tot[1]; stats[2] = tot[2]; }
    return loss;
}

double me_triplet_all(const float *dist, const int64_t *labels, const int64_t *ref_labels,
                      const float *weights, float *losses, float *ddist, int64_t N, int64_t M,
                      float margin, int exclude_self, int swap, int smooth, int inverted,
                      int reduction, double *stats) {
    const int weighted = reduction == ME_PAIR_WEIGHTS;
    if (swap && N != M) swap = 0; /* guarded by the wrappers; never read rows past N */
    if (!weighted && !losses && ddist)
        return triplet_all_fused(dist, labels, ref_labels, ddist, N, M, margin, exclude_self, swap,
                                 smooth, inverted, reduction == ME_PAIR_AVG_NON_ZERO, stats);
    double tot[4];
    triplet_all_terms(dist, labels, ref_labels, weighted ? weights : NULL, losses,
                      weighted ? ddist : NULL, N, M, margin, exclude_self, swap, smooth, inverted, tot);
    if (!weighted && ddist)
        return triplet_all_fused(dist, labels, ref_labels, ddist, N, M, margin, exclude_self, swap,
                                 smooth, inverted, reduction == ME_PAIR_AVG_NON_ZERO, stats);
    return triplet_value(tot, reduction, stats);
}

/* The per-term pass of me_triplet_triplets (serial, triplet order); arguments as triplet_all_terms. */
static void triplet_triplets_terms(const float *dist, const int64_t *a, const int64_t *p,
                                   const int64_t *n, int64_t K, const float *weights, float *losses,
                                   float *ddist, int64_t N, int64_t M, float margin, int swap,
                                   int smooth, int inverted, double *tot) {
    const float sg = inverted ? -1.0f : 1.0f;
    for (int k = 0; k < 4; k++) tot[k] = 0.0;
    tot[1] = (double)K;
    if (ddist) zero_rows(ddist, N, M);
    for (int64_t k = 0; k < K; k++) {
        const float dap = dist[a[k] * M + p[k]];
        float share = 1.0f, dl;
        const float dan = swap ? swap_pick(dist[a[k] * M + n[k]], dist[p[k] * M + n[k]], inverted, &share)
                               : dist[a[k] * M + n[k]];
        const float l = triplet_term(triplet_violation(dap, dan, margin, inverted), smooth, &dl);
        if (losses) losses[k] = l;
        tot[0] += l;
        tot[2] += l > 0.0f;
        const float w = weights ? weights[k] : 0.0f;
        tot[3] += (double)w * (double)l;
        if (ddist) {
            const float g = w * dl;
            ddist[a[k] * M + p[k]] += sg * g;
            if (share > 0.0f) ddist[a[k] * M + n[k]] -= sg * g * share;
            if (share < 1.0f) ddist[p[k] * M + n[k]] -= sg * g * (1.0f - share);
        }
    }
}

double me_triplet_triplets(const float *dist, const int64_t *a, const int64_t *p, const int64_t *n,
                           int64_t K, const float *weights, float *losses, float *ddist, int64_t N,
                           int64_t M, float margin, int swap, int smooth, int inverted, int reduction,
                           double *stats) {
    const int weighted = reduction == ME_PAIR_WEIGHTS;
    if (!weighted && !losses && ddist)
        return triplet_triplets_fused(dist, a, p, n, K, ddist, N, M, margin, swap, smooth, inverted,
                                      reduction == ME_PAIR_AVG_NON_ZERO, stats);
    double tot[4];
    triplet_triplets_terms(dist, a, p, n, K, weighted ? weights : NULL, losses, weighted ? ddist : NULL,
                           N, M, margin, swap, smooth, inverted, tot);
    if (!weighted && ddist)
        return triplet_triplets_fused(dist, a, p, n, K, ddist, N, M, margin, swap, smooth, inverted,
                                      reduction == ME_PAIR_AVG_NON_ZERO, stats);
    return triplet_value(tot, reduction, stats);
}
