/*
 * mantissa-embed C engine: the one public header.
 *
 * Conventions (llm.c style):
 *  - every buffer is caller-owned, float32, C-contiguous (row-major), NCHW for images;
 *  - each operation is a *_forward / *_backward pair; shapes are given in a one-line comment;
 *  - no allocation inside hot loops: operations that need scratch take a `workspace`
 *    whose size (in floats) is returned by the matching *_workspace_size function;
 *  - no hidden global state except the thread count (me_set_num_threads) and the
 *    cached CPU feature probe (me_cpu_features), both process-wide and read-only in kernels;
 *  - for a fixed thread count every result is bitwise reproducible (static work split,
 *    fixed reduction order).
 *  - integer sizes are int64_t; index arrays are int64_t (labels, index tuples) or
 *    int32_t (pooling argmax, flat offsets into one H*W plane).
 */
#ifndef MANTISSA_ENGINE_H
#define MANTISSA_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- cpu.c */
enum {
    ME_CPU_AVX2 = 1 << 0,
    ME_CPU_FMA = 1 << 1,
    ME_CPU_AVX512F = 1 << 2,
    ME_CPU_AVX512VL = 1 << 3, /* AVX-512 on 128/256-bit registers (32 ymm) */
    ME_CPU_F16C = 1 << 4,     /* float16 <-> float32 conversions (vcvtph2ps) */
    ME_CPU_AVX512BW = 1 << 5, /* AVX-512 byte and word instructions */
    ME_CPU_AVX512VNNI = 1 << 6, /* vpdpbusd: u8 x s8 dot products into int32 */
    ME_CPU_AVX512BF16 = 1 << 7, /* vdpbf16ps: bfloat16 pair dot products into float32 */
};
int me_cpu_features(void);              /* bitmask of ME_CPU_* usable on this CPU (and OS) */
const char *me_gemm_kernel_name(void);  /* "avx512", "avx2" or "generic": the SGEMM micro-kernel in use */
void me_set_num_threads(int n);         /* n >= 1; default: number of cores (or MANTISSA_EMBED_NUM_THREADS) */
int me_get_num_threads(void);
/* Force the SGEMM micro-kernel: "generic", "avx2" or "avx512" (tests, benchmarks).
 * Returns 0 on success, -1 for an unknown name, -2 when the CPU lacks it (unchanged). */
int me_set_gemm_kernel(const char *name);
int me_gemm_kernel_id(void);            /* 0 generic, 1 avx2, 2 avx512 (the kernel in use) */

/* --------------------------------------------------------------- gemm.c */
/* C (M,N) = alpha * op(A) (M,K) @ op(B) (K,N) + beta * C; row-major.
 * A is (M,K) with leading dimension lda, or (K,M) when trans_a; B likewise (K,N) / (N,K).
 * beta == 0 overwrites C (NaN in C is not propagated); alpha == 0 or K == 0 only scale C.
 * Threads: me_get_num_threads(); results are bitwise identical for every thread count
 * (and between me_sgemm and me_sgemm_st) for a given shape and micro-kernel. */
void me_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
              const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
              float *C, int64_t ldc);
/* The same, single-threaded (for callers that already parallelize over a batch). */
void me_sgemm_st(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                 const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                 float *C, int64_t ldc);

/* --------------------------------------------------------------- conv.c, conv_*.c */
/* Per group of images (the group split depends on the shapes only, so results are bitwise
 * identical for any thread count); conv.c's header gives the layouts, the workspace and which
 * conv_*.c file holds each path.
 * x (N,C,H,W), w (F,C,KH,KW), b (F) or NULL -> y (N,F,HO,WO); HO = (H + 2*pad - KH)/stride + 1 */
int64_t me_conv2d_workspace_size(int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                                 int64_t KH, int64_t KW, int64_t stride, int64_t pad);
void me_conv2d_forward(const float *x, const float *w, const float *b, float *y,
                       int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                       int64_t KH, int64_t KW, int64_t stride, int64_t pad, float *workspace);
/* the same, then the activation act (ME_ACT_IDENTITY, ME_ACT_RELU, ME_ACT_LEAKY_RELU with
 * negative slope `slope`; activations.c) fused into the store. The path follows the shapes and
 * the SGEMM kernel in use: direct kernels (shallow K), Winograd F(2x2, 3x3) (3x3 stride 1),
 * GEMMs on the plane itself (1x1 stride 1), im2col + SGEMM otherwise; the same result up to
 * float32 rounding. */
void me_conv2d_forward_act(const float *x, const float *w, const float *b, float *y,
                           int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                           int64_t KH, int64_t KW, int64_t stride, int64_t pad, int act,
                           float slope, float *workspace);
/* inference: y (N,F,HO/2,WO/2) = maxpool 2x2 stride 2 (floor) of the above, in one pass, no
 * argmax. Returns 1, or 0 when no fused path applies (then y may hold partial results: the
 * caller runs the convolution and the pooling instead). */
int me_conv2d_pool2_forward(const float *x, const float *w, const float *b, float *y,
                            int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                            int64_t KH, int64_t KW, int64_t stride, int64_t pad, int relu,
                            float *workspace);
/* Two 3x3 stride-1 conv + bias + act + 2x2 max pool stages in one pass (inference):
 * x (N,C,H,W) -> stage 1 (w1 (F1,C,3,3), b1 (F1) or NULL, pad1) -> (N,F1,H2,W2) -> stage 2
 * (w2 (F2,F1,3,3), b2, pad2) -> y (N,F2,TH2,TW2), H2 = (H + 2*pad1 - 2)/2, TH2 = (H2 + 2*pad2 - 2)/2
 * (W likewise). Returns 0 when unsupported (y may then hold partial results), 1 when done; the
 * result is bitwise that of two me_conv2d_pool2_forward calls. workspace:
 * me_conv2d_pool2_chain_workspace_size floats (0 when unsupported by shape). */
int me_conv2d_pool2_chain_forward(const float *x, const float *w1, const float *b1, const float *w2,
                                  const float *b2, float *y, int64_t N, int64_t C, int64_t H, int64_t W,
                                  int64_t F1, int64_t pad1, int relu1, int64_t F2, int64_t pad2, int relu2,
                                  float *workspace);
int64_t me_conv2d_pool2_chain_workspace_size(int64_t N, int64_t C, int64_t H, int64_t W, int64_t F1,
                                             int64_t pad1, int64_t F2, int64_t pad2);
/* dy (N,F,HO,WO) -> dx (N,C,H,W) or NULL, dw (F,C,KH,KW) or NULL, db (F) or NULL.
 * dx is overwritten; dw and db are overwritten when accumulate == 0, added to otherwise. */
void me_conv2d_backward(const float *x, const float *w, const float *dy,
                        float *dx, float *dw, float *db,
                        int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                        int64_t KH, int64_t KW, int64_t stride, int64_t pad,
                        int accumulate, float *workspace);

/* --------------------------------------------------------------- pool.c */
/* x (N,C,H,W) -> y (N,C,HO,WO), argmax (N,C,HO,WO) int32 offset into the H*W plane;
 * HO = (H + 2*pad - size)/stride + 1 (floor); pad (0 <= 2*pad <= size): implicit -inf
 * padding on every side, which never wins (torch's max_pool2d padding). */
void me_maxpool2d_forward(const float *x, float *y, int32_t *argmax,
                          int64_t N, int64_t C, int64_t H, int64_t W, int64_t size, int64_t stride,
                          int64_t pad);
/* dy (N,C,HO,WO), argmax -> dx (N,C,H,W), overwritten. */
void me_maxpool2d_backward(const float *dy, const int32_t *argmax, float *dx,
                           int64_t N, int64_t C, int64_t H, int64_t W, int64_t HO, int64_t WO);
/* The same, for untrusted argmax: entries outside [0, H*W) are skipped and counted;
 * returns their number (0 when every entry is valid). */
int64_t me_maxpool2d_backward_checked(const float *dy, const int32_t *argmax, float *dx,
                                      int64_t N, int64_t C, int64_t H, int64_t W, int64_t HO, int64_t WO);
/* Pooling backward fused with the backward of the ReLU before it: y (N,C,HO,WO) the pooling's
 * output; dx = relu_backward(maxpool2d_backward(dy), relu output), exactly, in one pass.
 * Untrusted argmax as above (returns the number of skipped entries). */
int64_t me_maxpool2d_relu_backward(const float *dy, const int32_t *argmax, const float *y, float *dx,
                                   int64_t N, int64_t C, int64_t H, int64_t W, int64_t HO, int64_t WO);
/* x (N,C,H,W) -> y (N,C,HO,WO), HO = (H - size)/stride + 1: window means (avg_pool2d, no padding,
 * floor mode); the backward overwrites dx (N,C,H,W) with dy / size^2 spread over each window. */
void me_avgpool2d_forward(const float *x, float *y, int64_t N, int64_t C, int64_t H, int64_t W,
                          int64_t size, int64_t stride);
void me_avgpool2d_backward(const float *dy, float *dx, int64_t N, int64_t C, int64_t H, int64_t W,
                           int64_t size, int64_t stride);
/* x (N,C,H,W) -> y (N,C), the mean of each plane; backward: dx (N,C,H,W) = dy / (H*W), overwritten */
void me_global_avgpool2d_forward(const float *x, float *y, int64_t N, int64_t C, int64_t H, int64_t W);
void me_global_avgpool2d_backward(const float *dy, float *dx, int64_t N, int64_t C, int64_t H, int64_t W);

/* -------------------------------------------------------- activations.c */
/* the activation codes of the conv / dense forward epilogues */
enum { ME_ACT_IDENTITY = 0, ME_ACT_RELU = 1, ME_ACT_LEAKY_RELU = 2 };

/* x (n) -> y (n) = max(x, 0); y may alias x */
void me_relu_forward(const float *x, float *y, int64_t n);
/* dy (n), y (n) (the forward output) -> dx (n) = dy * (y > 0); dx may alias dy */
void me_relu_backward(const float *dy, const float *y, float *dx, int64_t n);
/* x (n) -> 1 when every value is finite (no NaN, no +-Inf), else 0 */
int me_all_finite(const float *x, int64_t n);
/* x (n) -> y (n) = x (y must not overlap x), and me_all_finite(x, n) from the same read */
int me_copy_all_finite(const float *x, float *y, int64_t n);
/* x (n) -> y (n) = x < 0 ? slope * x : x; y may alias x */
void me_leaky_relu_forward(const float *x, float *y, int64_t n, float slope);
/* dy (n), y (n) the forward output (slope >= 0) -> dx (n) = y > 0 ? dy : slope * dy; dx may alias dy */
void me_leaky_relu_backward(const float *dy, const float *y, float *dx, int64_t n, float slope);
/* inverted dropout, forward and backward: x (n), mask (n) (0 or 1/(1-p)) -> y (n) = x * mask;
 * y may alias x */
void me_dropout_apply(const float *x, const float *mask, float *y, int64_t n);

/* -------------------------------------------------------------- dense.c */
/* (In, not I: complex.h, which numpy's headers include into the Cython modules, defines I) */
/* x (N,In), w (O,In), b (O) or NULL -> y (N,O) = x @ w^T + b, then the activation act (ME_ACT_*,
 * slope: the leaky ReLU's negative slope) */
void me_dense_forward(const float *x, const float *w, const float *b, float *y,
                      int64_t N, int64_t In, int64_t O, int act, float slope);
/* dy (N,O) -> dx (N,In) or NULL (overwritten), dw (O,In) or NULL, db (O) or NULL
 * (overwritten when accumulate == 0, added to otherwise) */
void me_dense_backward(const float *x, const float *w, const float *dy,
                       float *dx, float *dw, float *db,
                       int64_t N, int64_t In, int64_t O, int accumulate);

/* -------------------------------------------------------------- optim.c */
/* p, g, v (n): torch.optim.SGD semantics; v may be NULL when momentum == 0.
 * `first` != 0 on the first step (v initialised to g, as torch does). */
void me_sgd_step(float *p, const float *g, float *v, int64_t n, float lr, float momentum,
                 float dampening, float weight_decay, int nesterov, int first);
/* p, g, m, v (n): torch.optim.Adam semantics (L2 weight decay added to g); step t >= 1.
 * decoupled != 0: torch.optim.AdamW (p *= 1 - lr*weight_decay before the Adam update). */
void me_adam_step(float *p, const float *g, float *m, float *v, int64_t n, int64_t t,
                  float lr, float beta1, float beta2, float eps, float weight_decay, int decoupled);

/* ----------------------------------------------------------- distance.c */
/* x (N,D) -> y (N,D) = x / max(||x||, eps), norms (N) = ||x|| (torch.nn.functional.normalize). y may alias x. */
void me_l2_normalize_forward(const float *x, float *y, float *norms, int64_t N, int64_t D, float eps);
/* dy (N,D), y (N,D), norms (N) -> dx (N,D) = (dy - y <y,dy>) / norm when norm >= eps,
 * dy / eps otherwise (the clamp's branch, as torch). dx may alias dy. */
void me_l2_normalize_backward(const float *dy, const float *y, const float *norms, float *dx,
                              int64_t N, int64_t D, float eps);
/* Workspace sizes (floats) of me_euclidean_forward (N+M) and me_euclidean_backward (N*M+N+M). */
int64_t me_euclidean_forward_workspace_size(int64_t N, int64_t M);
int64_t me_euclidean_backward_workspace_size(int64_t N, int64_t M);
/* x (N,D), r (M,D) -> dist (N,M) = ||x_i||^2 + ||r_j||^2 - 2 x_i.r_j (one me_sgemm), then sqrt when
 * squared == 0. Entries below 1e-3 (||x_i||^2 + ||r_j||^2) (cancellation) are recomputed directly as
 * ||x_i - r_j||^2, so duplicates give exactly 0. r may be x (the same buffer: diagonal exactly 0).
 * ws: forward workspace. */
void me_euclidean_forward(const float *x, const float *r, float *dist, int64_t N, int64_t M, int64_t D,
                          int squared, float *ws);
/* ddist (N,M), dist (N,M) (the forward output) -> dx (N,D) or NULL, dr (M,D) or NULL (overwritten),
 * by two sgemm with G = ddist/dist (squared=0) or 2*ddist (squared=1): dx = x*rowsum(G) - G r,
 * dr = r*colsum(G) - G^T x. Where dist == 0 the gradient is taken as 0 (the subgradient torch.cdist
 * uses). Never forms an N x M x D tensor. ws: backward workspace. */
void me_euclidean_backward(const float *x, const float *r, const float *dist, const float *ddist,
                           float *dx, float *dr, int64_t N, int64_t M, int64_t D, int squared, float *ws);
/* a (N,N) -> out (N,N) = a + a^T, exactly symmetric (the same-set backward of a similarity matrix:
 * (dS + dS^T) x in one sgemm). Cache-blocked; out must not overlap a. */
void me_add_transpose_forward(const float *a, float *out, int64_t N);
/* x (N,D) -> out (N,N) = x x^T (SYRK-like: the blocks on and above the diagonal by me_sgemm, the
 * rest mirrored; exactly symmetric). */
void me_gram_forward(const float *x, float *out, int64_t N, int64_t D);

/* -------------------------------------------------------- pair_losses.c */
/* The pair/triplet reductions of ContrastiveLoss and TripletMarginLoss over a distance matrix
 * dist (N,M), with pytorch-metric-learning's semantics. Each returns the value (double) and fills
 * stats (see below) when stats != NULL.
 *  - inverted != 0: dist is a similarity (DotProduct/Cosine): "margin(x, y)" is y - x.
 *  - reduction: ME_PAIR_AVG_NON_ZERO (AvgNonZeroReducer: the mean over the terms with loss > 0),
 *    ME_PAIR_MEAN (MeanReducer: the mean over every term; no term -> 0), or ME_PAIR_WEIGHTS
 *    (any other reducer: value = sum_t weights_t * l_t, weights_t = d value / d l_t given).
 *  - weights (T) (ME_PAIR_WEIGHTS only; NULL reads as 0), losses (T) or NULL: the per-term
 *    losses l_t, T and the term order given per kernel. ddist (N,M) or NULL: d value / d dist
 *    (overwritten). With MEAN / AVG_NON_ZERO, a gradient and no losses, the fused body runs.
 *  - labels (N), ref_labels (M) int64; exclude_self != 0 (requires N == M) drops the pairs (i, i).
 * Reductions are split into a fixed number of row chunks summed in a fixed order, so results
 * do not even depend on the thread count. */
enum { ME_PAIR_MEAN = 0, ME_PAIR_AVG_NON_ZERO = 1, ME_PAIR_WEIGHTS = 2 };

/* Contrastive: positive pairs charge relu(d - pos_margin), negative pairs relu(neg_margin - d)
 * (inverted: relu(pos_margin - s), relu(s - neg_margin)); each kind is reduced on its own and the
 * two values are summed. Terms: the (N,M) matrix, l_ij at the positive and negative pairs (0 and
 * weight ignored elsewhere). stats (6): pos_loss, neg_loss, n_pos, n_neg, n_pos_nonzero,
 * n_neg_nonzero. */
double me_contrastive_all(const float *dist, const int64_t *labels, const int64_t *ref_labels,
                          const float *weights, float *losses, float *ddist, int64_t N, int64_t M,
                          float pos_margin, float neg_margin, int exclude_self, int inverted,
                          int reduction, double *stats);
/* The same over given pairs: (a1, p) positive (K1 each), (a2, n) negative (K2 each), int64 indices
 * already checked in range (a* < N, p/n < M). Repeated pairs count once per occurrence. Terms
 * (K1+K2): the positive pairs, then the negative ones. */
double me_contrastive_pairs(const float *dist, const int64_t *a1, const int64_t *p, int64_t K1,
                            const int64_t *a2, const int64_t *n, int64_t K2, const float *weights,
                            float *losses, float *ddist, int64_t N, int64_t M, float pos_margin,
                            float neg_margin, int inverted, int reduction, double *stats);
/* Triplet margin over every (a, p, n) with labels[a] == ref_labels[p] (p != a under exclude_self)
 * and labels[a] != ref_labels[n]: v = (d_ap - d_an) + margin (inverted: (s_an - s_ap) + margin),
 * loss relu(v), or softplus(v) when smooth (torch's, threshold 20). swap (requires N == M and
 * labels == ref_labels): d_an is replaced by min(d_an, d_pn) (inverted: max), ties share the
 * gradient half and half as torch.min does. Parallel over anchors; the fused body never
 * materializes the triplets. Terms (me_triplet_all_count): sorted by (a, p, n).
 * stats (3): value, n_triplets, n_nonzero. */
double me_triplet_all(const float *dist, const int64_t *labels, const int64_t *ref_labels,
                      const float *weights, float *losses, float *ddist, int64_t N, int64_t M,
                      float margin, int exclude_self, int swap, int smooth, int inverted,
                      int reduction, double *stats);
/* The number of triplets me_triplet_all ranges over. */
int64_t me_triplet_all_count(const int64_t *labels, const int64_t *ref_labels, int64_t N, int64_t M,
                             int exclude_self);
/* The same over given triplets a (K) < N, p, n (K) < M (swap additionally requires p < N).
 * Terms (K): the given order. */
double me_triplet_triplets(const float *dist, const int64_t *a, const int64_t *p, const int64_t *n,
                           int64_t K, const float *weights, float *losses, float *ddist, int64_t N,
                           int64_t M, float margin, int swap, int smooth, int inverted, int reduction,
                           double *stats);

/* ------------------------------------------------------------ scatter.c */
/* src (K,D), index (K) in [0,N) -> out (N,D) += src[k] at row index[k] (np.add.at(out, index, src)):
 * every entry of out receives its additions in k order, whatever the thread count (threads own
 * ranges of out's rows), so results are bitwise those of a serial loop. A pair scatter into an
 * (R,C) matrix is D = 1 with index r*C + c. */
void me_scatter_add_forward(const float *src, const int64_t *index, float *out, int64_t K, int64_t D,
                            int64_t N);
/* Its backward, a gather: dout (N,D) -> dsrc (K,D) = dout[index[k]] (overwritten). */
void me_scatter_add_backward(const float *dout, const int64_t *index, float *dsrc, int64_t K,
                             int64_t D, int64_t N);

/* ---------------------------------------------------------------- knn.c */
enum { ME_KNN_SQEUCLIDEAN = 0, ME_KNN_EUCLIDEAN = 1, ME_KNN_INNER_PRODUCT = 2 };
/* Floats of scratch for me_knn with these tiles and threads:
 * M (reference norms) + num_threads * tile_q * tile_r (one score block per thread). */
int64_t me_knn_workspace_size(int64_t M, int64_t tile_q, int64_t tile_r, int num_threads);
/* Exact k-NN. q (N,D), r (M,D) -> indices (N,k) int64, distances (N,k), nearest first.
 * Candidates are ranked by SGEMM scores per tile (|r|^2 - 2 q.r, or -q.r for the inner product,
 * largest product first), ties by lower index; the k returned values are then recomputed from
 * the vectors in double (squared distance, distance or inner product) and the row re-sorted by
 * (value, index). exclude_self: reference i is never returned for query i. OpenMP static over
 * blocks of tile_q queries on num_threads threads (pass me_get_num_threads()); workspace from
 * me_knn_workspace_size with the same num_threads.
 * Requires 1 <= tile_q, 1 <= tile_r, k <= M - exclude_self (else trailing slots get index -1). */
void me_knn(const float *q, const float *r, int64_t N, int64_t M, int64_t D, int64_t k,
            int metric, int exclude_self, int64_t tile_q, int64_t tile_r, int num_threads,
            float *workspace, int64_t *indices, float *distances);

/* ---------------------------------------------------------------- knn_codes*.c */
/* Storage of the reference rows of me_knn_codes */
enum { ME_CODES_F32 = 0, ME_CODES_F16 = 1, ME_CODES_BF16 = 2, ME_CODES_I8 = 3 };
/* Arithmetic of the candidate pass (knn_codes.c's header explains each):
 * F32: float32 query x decoded float32 rows; BF16DOT: the query rounded to bfloat16 (vdpbf16ps);
 * U8DOT / U7DOT: the query quantized to 8 / 7 bits per value (vpdpbusd / vpmaddubsw). */
enum { ME_CODES_MODE_F32 = 0, ME_CODES_MODE_BF16DOT = 1, ME_CODES_MODE_U8DOT = 2, ME_CODES_MODE_U7DOT = 3 };
/* me_knn_codes's metric: the three of me_knn, and the cosine distance to unit queries */
enum { ME_KNN_COSINE = 3 };
/* The mode me_knn_codes uses for this dtype and D with the SGEMM kernel in use (me_gemm_kernel_id)
 * on this CPU. */
int me_knn_codes_mode(int dtype, int64_t D);
/* Reference rows per packed tile for D and mode when tile_r <= 0 (about 256 KB of panel). */
int64_t me_knn_codes_tile(int mode, int64_t D, int64_t tile_r);
/* Bytes of scratch for me_knn_codes with these shapes, mode, tile and threads. */
int64_t me_knn_codes_workspace_size(int mode, int64_t N, int64_t M, int64_t D, int64_t k, int64_t tile_r,
                                    int num_threads);
/* k nearest stored rows. q (N,D) float32 (unit rows for ME_KNN_COSINE); codes (M,D) of dtype
 * (float32, float16 bits, bfloat16 bits or int8); scales (M) float32 (int8: row = code * scale;
 * else NULL) -> indices (N,k) int64, distances (N,k) float32.
 * The k candidates are the k best by the mode's ranking score (|r|^2 - 2 q.r; -q.r for the inner
 * product; -q.r/|r| for the cosine), ties by lower index, over the decoded rows r; their values are
 * then recomputed in double from q and the decoded rows (squared distance, distance, inner product,
 * or 1 - q.r/|r| in [0, 2] with 1 for a zero row) and each row is sorted by (value, index), the
 * inner product largest first. Threads split the reference tiles; the result is the same for every
 * thread count. A slot no row reaches (NaN in the query, scores beyond float32) gets index -1 and
 * +inf (-inf for the inner product). Requires 1 <= k <= M, mode from me_knn_codes_mode (or a mode this CPU runs: F32 always;
 * U7DOT with AVX2; BF16DOT, U8DOT with AVX-512 BF16 / VNNI), workspace of
 * me_knn_codes_workspace_size bytes (any alignment). */
void me_knn_codes(int dtype, int mode, const float *q, const void *codes, const float *scales, int64_t N,
                  int64_t M, int64_t D, int64_t k, int metric, int64_t tile_r, int num_threads,
                  void *workspace, int64_t *indices, float *distances);

/* -------------------------------------------- softmax_losses.c */
/* NTXent / SupCon / NPairs / NCA / Instance (softmax over pairs) */
/* Reductions of the fused kernels: the mean over every term, the mean over the terms > 0
 * (AvgNonZeroReducer), or sum_k weights_k * l_k with caller-given weights (any other reducer). */
enum { ME_SOFTMAX_MEAN = 0, ME_SOFTMAX_AVG_NON_ZERO = 1, ME_SOFTMAX_WEIGHTS = 2 };
/* NTXentLoss over every pair the labels define. sim (N,M) (a similarity when inverted, else a
 * distance: z = sim/T or -sim/T). Positive pairs (i,j): labels[i] == ref_labels[j] (j != i under
 * exclude_self); negatives: labels differ. Each positive pair charges
 * l_ij = -log(exp(z_ij) / (exp(z_ij) + sum_{n neg of i} exp(z_in)) + FLT_MIN) (>= 0).
 * weights (N,M) (read at the positive pairs, only for ME_SOFTMAX_WEIGHTS) or NULL.
 * losses (N,M) or NULL: l_ij at the positive pairs, 0 elsewhere. dsim (N,M) or NULL: d value/d sim.
 * stats (4) or NULL: value, n_pos_pairs, n_neg_pairs, n_nonzero. Returns the value. */
double me_ntxent_all(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                     const float *weights, float *losses, float *dsim, int64_t N, int64_t M,
                     float temperature, int exclude_self, int inverted, int reduction,
                     double *stats);
/* SupConLoss over every pair the labels define (same z, positives, negatives as NTXent): row i
 * charges l_i = logsumexp_{j pos or neg} z_ij - mean_{j pos} z_ij (0 when i has no positive).
 * ME_SOFTMAX_MEAN divides by N. weights (N) or NULL; losses (N) or NULL; dsim (N,M) or NULL.
 * stats (4) or NULL: value, n_pos_pairs, rows with a positive, n_nonzero. Returns the value. */
double me_supcon_all(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                     const float *weights, float *losses, float *dsim, int64_t N, int64_t M,
                     float temperature, int exclude_self, int inverted, int reduction,
                     double *stats);
/* Row softmax negative log-likelihood (NCA / NPairs / Instance). z = scale*sim (inverted) or
 * -scale*sim; row i ranges over j != i under exclude_self, its positives are the j with
 * labels[i] == ref_labels[j]; l_i = logsumexp_j z_ij - logsumexp_{j pos} z_ij = -log p_i.
 * Writes lse (N,2) (the two log-sum-exps, -inf when empty), losses (N) (0 for invalid rows),
 * valid (N): the row has a positive and -log(max positive probability) < max_loss.
 * Returns the number of valid rows. */
int64_t me_softmax_nll_forward(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                               float *losses, double *lse, uint8_t *valid, int64_t N, int64_t M,
                               float scale, int exclude_self, int inverted, double max_loss);
/* sim (N,M), lse (N,2) from the forward, weights (N) = d value / d l_i -> dsim (N,M) (overwritten). */
void me_softmax_nll_backward(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                             const double *lse, const float *weights, float *dsim, int64_t N,
                             int64_t M, float scale, int exclude_self, int inverted);

/* softmax_losses_fast.c. The contract of me_softmax_nll_forward / me_softmax_nll_backward (sim (N,M),
 * labels (N), ref_labels (M) -> losses (N), lse (N,2) = (log-sum-exp over all kept entries, over the
 * kept positives), valid (N); backward: dsim (N,M) of sum_i weights[i] l_i), computed with one
 * float exp per entry (fast_expf.h) in vectorized row loops, sums in double: equal to those
 * kernels up to float32 rounding of the logits. Rows in parallel (static). */
int64_t me_softmax_nll_fast_forward(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                                    float *losses, double *lse, uint8_t *valid, int64_t N, int64_t M,
                                    float scale, int exclude_self, int inverted, double max_loss);
void me_softmax_nll_fast_backward(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                                  const double *lse, const float *weights, float *dsim, int64_t N,
                                  int64_t M, float scale, int exclude_self, int inverted);
/* Single-target row softmax cross-entropy (InstanceLoss): z = scale * sim (N,M), target (N) in [0,M)
 * -> losses (N) l_i = logsumexp_j z_ij - z_i,target_i (>= 0), lse (N) float = logsumexp_j z_ij.
 * Float logits, row maximum subtracted, one vectorized float exp per entry (fast_expf.h), sums in
 * float over fixed blocks then double. Backward: weights (N) = d value / d l_i -> dsim (N,M)
 * (overwritten) = weights_i * scale * (softmax_ij - [j == target_i]). Rows in parallel (static). */
void me_softmax_xent_rows_forward(const float *sim, const int64_t *target, float *losses, float *lse,
                                  int64_t N, int64_t M, float scale);
void me_softmax_xent_rows_backward(const float *sim, const int64_t *target, const float *lse,
                                   const float *weights, float *dsim, int64_t N, int64_t M, float scale);

/* -------------------------------------------- pair_weighting.c */
/* MultiSimilarity / Circle / LiftedStructure / GeneralizedLifted (row losses) */
/* Per-anchor-row losses of pytorch-metric-learning's mat-based pair losses over a matrix x (N,M)
 * (similarity when inverted != 0, else distance; sg = -1 when inverted, +1 otherwise).
 * Row i's positives P_i / negatives N_i: from labels (N) and ref_labels (M) (same label -> P,
 * else N; exclude_self != 0 drops (i, i) from P; requires N == M), or, when pos_mask != NULL,
 * from pos_mask / neg_mask (N,M) uint8 (non-zero = member; pos wins if both are set).
 * LSE_S(t) = log sum_{j in S} exp(t_j), computed stably (max subtracted, sums in double, exp by a
 * branch-free polynomial of about 1 ulp); an empty set gives 0 (PML's masked logsumexp).
 *  MULTI_SIMILARITY (p0 alpha, p1 beta, p2 base): pe_j = sg (x_ij - base);
 *    loss_i = log(1 + sum_P exp(alpha pe)) / alpha + log(1 + sum_N exp(-beta pe)) / beta.
 *  CIRCLE (p0 m, p1 gamma; x a cosine similarity): t_j = -gamma [1 + m - x]+ (x - (1 - m)) on P,
 *    gamma [x + m]+ (x - m) on N; loss_i = softplus(LSE_P(t) + LSE_N(t)) (torch's, threshold 20),
 *    0 when P_i or N_i is empty. The bracketed weights are constants for the gradient (detached).
 *  GENERALIZED_LIFTED (p0 pos_margin, p1 neg_margin): loss_i = relu(LSE_P(sg (x - pos_margin))
 *    + LSE_N(sg (neg_margin - x))) (gradient 0 at 0).
 *  NEG_LSE (p1 neg_margin): loss_i = LSE_N(sg (neg_margin - x)), -INFINITY when N_i is empty
 *    (the per-anchor negative term of LiftedStructureLoss); P is ignored.
 * Writes losses (N) and dmat (N,M) = d losses_i / d x_ij (0 outside P_i and N_i). OpenMP over rows,
 * every row independent: bitwise identical for any thread count. Vectorized row passes in three
 * copies (generic / AVX2+FMA / AVX-512), picked like the SGEMM micro-kernel (me_gemm_kernel_id). */
enum { ME_PAIRW_MULTI_SIMILARITY = 0, ME_PAIRW_CIRCLE = 1, ME_PAIRW_GENERALIZED_LIFTED = 2,
       ME_PAIRW_NEG_LSE = 3 };
void me_pairw_rows_forward(int kind, const float *mat, const int64_t *labels,
                           const int64_t *ref_labels, const uint8_t *pos_mask,
                           const uint8_t *neg_mask, float *losses, float *dmat, int64_t N,
                           int64_t M, float p0, float p1, float p2, int exclude_self,
                           int inverted);
/* dlosses (N), dmat (N,M) in place: dmat[i, :] *= dlosses[i] (dL/dx from d losses_i / dx and
 * dL/d losses_i, e.g. a reducer's weights). */
void me_pairw_rows_backward(const float *dlosses, float *dmat, int64_t N, int64_t M);

/* ---------------------------------------------- tuple_losses.c */
/* AngularLoss */
/* AngularLoss over P (anchor, positive) pairs. A (N,M), B (M,M), c (P), a (P) in [0,N), p (P) in
 * [0,M), labels (N), ref_labels (M) -> losses (P) = log(1 + sum_{n: labels[a_k] != ref_labels[n]}
 * exp(A[a_k,n] + B[p_k,n] - c_k)) (max-shifted, double accumulation). Pairs in parallel (static). */
void me_angular_loss_forward(const float *A, const float *B, const float *c, const int64_t *a,
                             const int64_t *p, const int64_t *labels, const int64_t *ref_labels,
                             float *losses, int64_t N, int64_t M, int64_t P);
/* Backward of sum_k dlosses_k losses_k: dA (N,M), dB (M,M), dc (P) overwritten. by_anchor (P) = the
 * pair ids grouped by anchor, anchor_ptr (N+1) its CSR offsets; by_pos (P), pos_ptr (M+1) the same
 * by positive. Rows of dA in parallel over anchors, rows of dB over positives, each row summed in
 * CSR order: bitwise identical for any thread count. */
void me_angular_loss_backward(const float *A, const float *B, const float *c, const int64_t *a,
                              const int64_t *p, const int64_t *labels, const int64_t *ref_labels,
                              const float *losses, const float *dlosses, const int64_t *by_anchor,
                              const int64_t *anchor_ptr, const int64_t *by_pos, const int64_t *pos_ptr,
                              float *dA, float *dB, float *dc, int64_t N, int64_t M, int64_t P);

/* -------------------------------------------- ranking_losses.c */
/* PNP / DynamicSoftMargin */
/* PNP smoothed ranks: sim (N,N) f32, labels (N,) -> rk (N,N) f64; backward drk (N,N) f64 -> dsim (N,N) f64 */
void me_pnp_rank_forward(const float *sim, const int64_t *labels, double *rk, int64_t N, double anneal);
void me_pnp_rank_backward(const double *drk, const float *sim, const int64_t *labels, double *dsim,
                          int64_t N, double anneal);
/* DynamicSoftMargin over all triplets of the labels: mat (N,M) f32 -> per-anchor histogram rows
 * u_rows (N,nb) f64 and counts (N,); per-anchor loss_rows (N,) and by_bin_rows (N,nb) given cdf (nb);
 * backward -> dmat (N,M) f32 given cdf, g_u (nb), with work (N,M) f64 scratch. */
void me_dsm_triplet_hist(const float *mat, const int64_t *labels, const int64_t *ref_labels,
                         int64_t N, int64_t M, int exclude_self, double min_val, double delta,
                         int64_t nb, double momentum, double *u_rows, double *counts);
void me_dsm_triplet_loss(const float *mat, const int64_t *labels, const int64_t *ref_labels,
                         int64_t N, int64_t M, int exclude_self, double min_val, double delta,
                         int64_t nb, const double *cdf, double *loss_rows, double *by_bin_rows);
void me_dsm_triplet_backward(const float *mat, const int64_t *labels, const int64_t *ref_labels,
                             int64_t N, int64_t M, int exclude_self, double min_val, double delta,
                             int64_t nb, const double *cdf, const double *g_u, double scale,
                             double momentum, float *dmat, double *work);

/* ---------------------------------------------- proxy_losses.c */
/* proxy and classifier losses (P2SGrad, NormalizedSoftmax, ArcFace, ...) */
/* Workspace (floats) of me_p2sgrad_forward_backward: N*D + N*C + N. */
int64_t me_p2sgrad_workspace_size(int64_t N, int64_t C, int64_t D);
/* x (N,D), w (C,D), labels (N) int64 in [0,C) -> dx (N,D), dw (C,D) (overwritten), returns the loss
 * 1/(N C) sum_ij (clamp(<x_i/max(|x_i|,1e-12), w_j>, -1, 1) - 1[j = y_i])^2 (P2SGrad). dw is the
 * gradient with w held fixed. Three me_sgemm; ws: me_p2sgrad_workspace_size floats. */
double me_p2sgrad_forward_backward(const float *x, const float *w, const int64_t *labels,
                                   float *dx, float *dw, int64_t N, int64_t C, int64_t D, float *ws);
/* logits (N,C), labels (N) int64 in [0,C) -> row_loss (N) double = logsumexp(s z_i) - s z_{i,y_i},
 * dlogits (N,C) = grad_scale * s * (softmax(s z_i) - onehot(y_i)); returns sum(row_loss) in row
 * order (s = scale). Rows in parallel (static), in double. */
double me_softmax_xent_forward_backward(const float *logits, const int64_t *labels, double *row_loss,
                                        float *dlogits, int64_t N, int64_t C, float scale,
                                        float grad_scale);
/* ---------------------------------------------------- mining.c */
/* TripletMarginMiner / AngularMiner selection, two passes: *_count -> counts (N) int64 of selected
 * triplets per anchor; the caller sets offsets (N+1) = [0, cumsum(counts)]; *_fill writes
 * a, p, n (offsets[N]) int64 sorted by (a, p, n). Positives: ref_labels[p] == labels[a] (p != a when
 * exclude_self); negatives: ref_labels[n] != labels[a]. Rows in parallel (static). */
enum { ME_MINE_EVERY = 0, ME_MINE_ALL = 1, ME_MINE_HARD = 2, ME_MINE_SEMIHARD = 3, ME_MINE_EASY = 4 };
/* mat (N,M) f32 distances (inverted=0) or similarities (inverted=1); tm = an - ap (ap - an), float32;
 * kind ALL: tm <= margin, HARD: tm <= margin and tm <= 0, SEMIHARD: 0 < tm <= margin,
 * EASY: tm > margin, EVERY: every triplet. */
void me_triplet_mine_count(const float *mat, const int64_t *labels, const int64_t *ref_labels,
                           int64_t N, int64_t M, int exclude_self, int kind, float margin,
                           int inverted, int64_t *counts);
void me_triplet_mine_fill(const float *mat, const int64_t *labels, const int64_t *ref_labels,
                          int64_t N, int64_t M, int exclude_self, int kind, float margin,
                          int inverted, const int64_t *offsets, int64_t *a, int64_t *p, int64_t *n);
/* x (N,D), r (M,D) f32; angle(a,p,n) = atan(|x_a - r_p + e| / (2 |r_n - (x_a + r_p)/2 + e|)), e = 1e-6,
 * in double (sums in numpy's pairwise order); kept when angle > `angle` (radians). tri_offsets
 * (N+1): prefix sum of each anchor's number of triplets (positives x negatives); keep
 * (tri_offsets[N]) u8 <- 1 for the kept triplets in (p, n) order; row_stats (N,5) f64 per anchor
 * over all its triplets: [count, finite count, sum, min, max] of the angles in degrees.
 * work: 2*N*D doubles scratch. The fill pass reads keep (no angle recomputed). */
void me_angular_mine_count(const float *x, const float *r, const int64_t *labels,
                           const int64_t *ref_labels, int64_t N, int64_t M, int64_t D,
                           int exclude_self, double angle, const int64_t *tri_offsets,
                           uint8_t *keep, int64_t *counts, double *row_stats, double *work);
void me_angular_mine_fill(const int64_t *labels, const int64_t *ref_labels, int64_t N, int64_t M,
                          int exclude_self, const int64_t *tri_offsets, const uint8_t *keep,
                          const int64_t *offsets, int64_t *a, int64_t *p, int64_t *n);

/* ---------------------------------------------------------- transforms.c */
/* x (N,C,H,W), theta (N,2,3) (output -> input, normalized coordinates) -> y (N,C,H,W): each image
 * resampled by its own matrix, bilinear, zero fill outside, as torch's
 * grid_sample(x, affine_grid(theta, x.shape, align_corners=False), "bilinear", "zeros",
 * align_corners=False). y must not overlap x. */
void me_affine_resample_forward(const float *x, const float *theta, float *y,
                                int64_t N, int64_t C, int64_t H, int64_t W);
/* dy (N,C,H,W), x, theta -> dx (N,C,H,W) or NULL, dtheta (N,2,3) or NULL, both overwritten. */
void me_affine_resample_backward(const float *dy, const float *x, const float *theta, float *dx,
                                 float *dtheta, int64_t N, int64_t C, int64_t H, int64_t W);

/* ---------------------------------------------------------------- norm.c */
/* Batch normalization (torch.nn.BatchNorm1d / 2d) over x (N,C,S) (S = H*W, L or 1).
 * gamma, beta (C); running_mean, running_var (C) read in eval, updated in place in training
 * (running = (1 - momentum) running + momentum * batch, the variance unbiased: N*S >= 2);
 * y (N,C,S) (may be x) = gamma (x - mean) invstd + beta, then max(y, 0) when relu;
 * save_mean, save_invstd (C) <- the mean and 1/sqrt(var + eps) used: the batch's (biased
 * variance) in training, the running ones in eval. Statistics in double. */
void me_batchnorm_forward(const float *x, const float *gamma, const float *beta, float *running_mean,
                          float *running_var, float *y, float *save_mean, float *save_invstd,
                          int64_t N, int64_t C, int64_t S, int training, float momentum, float eps, int relu);
/* dy, x (N,C,S), y (N,C,S) the forward output or NULL (not NULL: the ReLU's backward, the gradient
 * passes where y > 0), gamma, save_mean, save_invstd (C) -> dx (N,C,S) (NULL: skipped),
 * dgamma, dbeta (C) (overwritten, or added to when accumulate). training: the forward used batch
 * statistics (dx = gamma invstd (g - mean(g) - xhat mean(g xhat))); else dx = gamma invstd g. */
void me_batchnorm_backward(const float *dy, const float *x, const float *y, const float *gamma,
                           const float *save_mean, const float *save_invstd, float *dx, float *dgamma,
                           float *dbeta, int64_t N, int64_t C, int64_t S, int training, int accumulate);
/* An eval-mode batch norm folded into the layer before it: w (F,K), b (F) or NULL (zeros), gamma, beta,
 * running_mean, running_var (F) -> w_out (F,K) = w s, b_out (F) = (b - running_mean) s + beta,
 * s = gamma / sqrt(running_var + eps) (in double). */
void me_batchnorm_fold(const float *w, const float *b, const float *gamma, const float *beta,
                       const float *running_mean, const float *running_var, float *w_out, float *b_out,
                       int64_t F, int64_t K, float eps);

#ifdef __cplusplus
}
#endif
#endif /* MANTISSA_ENGINE_H */
