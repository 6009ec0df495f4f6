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
};
int me_cpu_features(void);              /* bitmask of ME_CPU_* usable on this CPU (and OS) */
const char *me_gemm_kernel_name(void);  /* "avx512", "avx2" or "generic": the SGEMM micro-kernel in use */
void me_set_num_threads(int n);         /* n >= 1; default: number of cores (or MANTISSA_EMBED_NUM_THREADS) */
int me_get_num_threads(void);

/* --------------------------------------------------------------- gemm.c */
/* C (M,N) = alpha * op(A) (M,K) @ op(B) (K,N) + beta * C; row-major.
 * A is (M,K) with leading dimension lda, or (K,M) when trans_a; B likewise (K,N) / (N,K).
 * beta == 0 overwrites C (NaN in C is not propagated). Threads: me_get_num_threads(). */
void me_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
              const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
              float *C, int64_t ldc);
/* The same, single-threaded (for callers that already parallelize over a batch). */
void me_sgemm_st(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                 const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                 float *C, int64_t ldc);

/* --------------------------------------------------------------- conv.c */
/* x (N,C,H,W), w (F,C,KH,KW), b (F) or NULL -> y (N,F,HO,WO); HO = (H + 2*pad - KH)/stride + 1 */
int64_t me_conv2d_workspace_size(int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                                 int64_t KH, int64_t KW, int64_t stride, int64_t pad);
void me_conv2d_forward(const float *x, const float *w, const float *b, float *y,
                       int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                       int64_t KH, int64_t KW, int64_t stride, int64_t pad, float *workspace);
/* dy (N,F,HO,WO) -> dx (N,C,H,W) or NULL, dw (F,C,KH,KW) or NULL, db (F) or NULL.
 * dx is overwritten; dw and db are overwritten when accumulate == 0, added to otherwise. */
void me_conv2d_backward(const float *x, const float *w, const float *dy,
                        float *dx, float *dw, float *db,
                        int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                        int64_t KH, int64_t KW, int64_t stride, int64_t pad,
                        int accumulate, float *workspace);

/* --------------------------------------------------------------- pool.c */
/* x (N,C,H,W) -> y (N,C,HO,WO), argmax (N,C,HO,WO) int32 offset into the H*W plane;
 * HO = (H - size)/stride + 1 (floor, no padding). */
void me_maxpool2d_forward(const float *x, float *y, int32_t *argmax,
                          int64_t N, int64_t C, int64_t H, int64_t W, int64_t size, int64_t stride);
/* dy (N,C,HO,WO), argmax -> dx (N,C,H,W), overwritten. */
void me_maxpool2d_backward(const float *dy, const int32_t *argmax, float *dx,
                           int64_t N, int64_t C, int64_t H, int64_t W, int64_t HO, int64_t WO);

/* -------------------------------------------------------- activations.c */
/* x (n) -> y (n) = max(x, 0); y may alias x */
void me_relu_forward(const float *x, float *y, int64_t n);
/* dy (n), y (n) (the forward output) -> dx (n) = dy * (y > 0); dx may alias dy */
void me_relu_backward(const float *dy, const float *y, float *dx, int64_t n);

/* -------------------------------------------------------------- dense.c */
/* x (N,I), w (O,I), b (O) or NULL -> y (N,O) = x @ w^T + b */
void me_dense_forward(const float *x, const float *w, const float *b, float *y,
                      int64_t N, int64_t I, int64_t O);
/* dy (N,O) -> dx (N,I) or NULL (overwritten), dw (O,I) or NULL, db (O) or NULL
 * (overwritten when accumulate == 0, added to otherwise) */
void me_dense_backward(const float *x, const float *w, const float *dy,
                       float *dx, float *dw, float *db,
                       int64_t N, int64_t I, int64_t O, int accumulate);

/* -------------------------------------------------------------- optim.c */
/* p, g, v (n): torch.optim.SGD semantics; v may be NULL when momentum == 0.
 * `first` != 0 on the first step (v initialised to g, as torch does). */
void me_sgd_step(float *p, const float *g, float *v, int64_t n, float lr, float momentum,
                 float dampening, float weight_decay, int nesterov, int first);
/* p, g, m, v (n): torch.optim.Adam semantics (L2 weight decay added to g); step t >= 1. */
void me_adam_step(float *p, const float *g, float *m, float *v, int64_t n, int64_t t,
                  float lr, float beta1, float beta2, float eps, float weight_decay);

/* ----------------------------------------------------------- distance.c */
/* x (N,D) -> y (N,D) = x / max(||x||, eps), norms (N) = ||x|| */
void me_l2_normalize_forward(const float *x, float *y, float *norms, int64_t N, int64_t D, float eps);
/* dy (N,D), y (N,D), norms (N) -> dx (N,D) = (dy - y <y,dy>) / max(norm, eps) */
void me_l2_normalize_backward(const float *dy, const float *y, const float *norms, float *dx,
                              int64_t N, int64_t D, float eps);
/* x (N,D), r (M,D) -> dist (N,M): squared Euclidean (squared=1) or Euclidean (squared=0), clamped >= 0 */
void me_euclidean_forward(const float *x, const float *r, float *dist, int64_t N, int64_t M, int64_t D,
                          int squared);
/* ddist (N,M), dist (N,M) (the forward output) -> dx (N,D) or NULL, dr (M,D) or NULL (overwritten).
 * For squared=0 the gradient at dist == 0 is taken as 0 (subgradient). ws: workspace of N*M floats. */
void me_euclidean_backward(const float *x, const float *r, const float *dist, const float *ddist,
                           float *dx, float *dr, int64_t N, int64_t M, int64_t D, int squared, float *ws);

/* -------------------------------------------------------- pair_losses.c */
/* The pair/triplet reductions of ContrastiveLoss and TripletMarginLoss over a distance matrix.
 * Each returns the loss and writes ddist (N,M) = dL/d dist (overwritten). See the function bodies. */

#ifdef __cplusplus
}
#endif
#endif /* MANTISSA_ENGINE_H */
