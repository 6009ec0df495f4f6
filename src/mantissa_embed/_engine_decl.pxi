# C declarations of engine.h (one block per family; each family's owner edits only its block).
from libc.stdint cimport int64_t, int32_t

cdef extern from "engine.h" nogil:
    # cpu.c
    int me_cpu_features()
    const char *me_gemm_kernel_name()
    void me_set_num_threads(int n)
    int me_get_num_threads()
    int me_set_gemm_kernel(const char *name)
    int me_gemm_kernel_id()
    # gemm.c
    void me_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                  float *C, int64_t ldc)
    void me_sgemm_st(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                     const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                     float *C, int64_t ldc)
    # distance.c: symmetric (same-set) helpers (wrappers at the end of _engine_core.pxi)
    void me_add_transpose_forward(const float *a, float *out, int64_t N)
    void me_gram_forward(const float *x, float *out, int64_t N, int64_t D)

# layers (conv.c pool.c activations.c dense.c optim.c; owner: layers helper)
cdef extern from "engine.h" nogil:
    int64_t me_conv2d_workspace_size(int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                                     int64_t KH, int64_t KW, int64_t stride, int64_t pad)
    void me_conv2d_forward(const float *x, const float *w, const float *b, float *y,
                           int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                           int64_t KH, int64_t KW, int64_t stride, int64_t pad, float *workspace)
    void me_conv2d_backward(const float *x, const float *w, const float *dy,
                            float *dx, float *dw, float *db,
                            int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                            int64_t KH, int64_t KW, int64_t stride, int64_t pad,
                            int accumulate, float *workspace)
    void me_maxpool2d_forward(const float *x, float *y, int32_t *argmax,
                              int64_t N, int64_t C, int64_t H, int64_t W, int64_t size, int64_t stride)
    void me_maxpool2d_backward(const float *dy, const int32_t *argmax, float *dx,
                               int64_t N, int64_t C, int64_t H, int64_t W, int64_t HO, int64_t WO)
    int64_t me_maxpool2d_backward_checked(const float *dy, const int32_t *argmax, float *dx,
                                          int64_t N, int64_t C, int64_t H, int64_t W, int64_t HO, int64_t WO)
    int64_t me_maxpool2d_relu_backward(const float *dy, const int32_t *argmax, const float *y, float *dx,
                                       int64_t N, int64_t C, int64_t H, int64_t W, int64_t HO, int64_t WO)
    void me_relu_forward(const float *x, float *y, int64_t n)
    void me_relu_backward(const float *dy, const float *y, float *dx, int64_t n)
    int me_all_finite(const float *x, int64_t n)
    void me_dense_forward(const float *x, const float *w, const float *b, float *y,
                          int64_t N, int64_t I, int64_t O, int relu)
    void me_dense_backward(const float *x, const float *w, const float *dy,
                           float *dx, float *dw, float *db,
                           int64_t N, int64_t I, int64_t O, int accumulate)
    void me_sgd_step(float *p, const float *g, float *v, int64_t n, float lr, float momentum,
                     float dampening, float weight_decay, int nesterov, int first)
    void me_adam_step(float *p, const float *g, float *m, float *v, int64_t n, int64_t t,
                      float lr, float beta1, float beta2, float eps, float weight_decay)

# losses (distance.c pair_losses.c; owner: losses helper)
cdef extern from "engine.h" nogil:
    void me_l2_normalize_forward(const float *x, float *y, float *norms, int64_t N, int64_t D, float eps)
    void me_l2_normalize_backward(const float *dy, const float *y, const float *norms, float *dx,
                                  int64_t N, int64_t D, float eps)
    int64_t me_euclidean_forward_workspace_size(int64_t N, int64_t M)
    int64_t me_euclidean_backward_workspace_size(int64_t N, int64_t M)
    void me_euclidean_forward(const float *x, const float *r, float *dist, int64_t N, int64_t M,
                              int64_t D, int squared, float *ws)
    void me_euclidean_backward(const float *x, const float *r, const float *dist, const float *ddist,
                               float *dx, float *dr, int64_t N, int64_t M, int64_t D, int squared,
                               float *ws)
    double me_contrastive_all(const float *dist, const int64_t *labels, const int64_t *ref_labels,
                              float *ddist, int64_t N, int64_t M, float pos_margin, float neg_margin,
                              int exclude_self, int inverted, int nonzero_only, double *stats)
    double me_contrastive_pairs(const float *dist, const int64_t *a1, const int64_t *p, int64_t K1,
                                const int64_t *a2, const int64_t *n, int64_t K2, float *ddist,
                                int64_t N, int64_t M, float pos_margin, float neg_margin,
                                int inverted, int nonzero_only, double *stats)
    double me_triplet_all(const float *dist, const int64_t *labels, const int64_t *ref_labels,
                          float *ddist, int64_t N, int64_t M, float margin, int exclude_self,
                          int swap, int smooth, int inverted, int nonzero_only, double *stats)
    double me_triplet_triplets(const float *dist, const int64_t *a, const int64_t *p, const int64_t *n,
                               int64_t K, float *ddist, int64_t N, int64_t M, float margin,
                               int swap, int smooth, int inverted, int nonzero_only, double *stats)

# knn (knn.c; owner: knn helper)
cdef extern from "engine.h" nogil:
    int64_t me_knn_workspace_size(int64_t M, int64_t tile_q, int64_t tile_r, int num_threads)
    void me_knn(const float *q, const float *r, int64_t N, int64_t M, int64_t D, int64_t k,
                int metric, int exclude_self, int64_t tile_q, int64_t tile_r, int num_threads,
                float *workspace, int64_t *indices, float *distances)
