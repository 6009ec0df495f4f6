# The C declarations of src/engine_c/engine.h, once, for every typed module of this package: one
# section per kernel family, in engine.h's order, named by the family's C file(s).
from libc.stdint cimport int32_t, int64_t, uint8_t

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
    # conv.c, conv_*.c
    int64_t me_conv2d_workspace_size(int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                                     int64_t KH, int64_t KW, int64_t stride, int64_t pad)
    void me_conv2d_forward(const float *x, const float *w, const float *b, float *y,
                           int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                           int64_t KH, int64_t KW, int64_t stride, int64_t pad, float *workspace)
    void me_conv2d_forward_act(const float *x, const float *w, const float *b, float *y,
                               int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                               int64_t KH, int64_t KW, int64_t stride, int64_t pad, int act,
                               float slope, float *workspace)
    int me_conv2d_pool2_forward(const float *x, const float *w, const float *b, float *y,
                                int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                                int64_t KH, int64_t KW, int64_t stride, int64_t pad, int relu,
                                float *workspace)
    int me_conv2d_pool2_chain_forward(const float *x, const float *w1, const float *b1, const float *w2,
                                      const float *b2, float *y, int64_t N, int64_t C, int64_t H, int64_t W,
                                      int64_t F1, int64_t pad1, int relu1, int64_t F2, int64_t pad2, int relu2,
                                      float *workspace)
    int64_t me_conv2d_pool2_chain_workspace_size(int64_t N, int64_t C, int64_t H, int64_t W, int64_t F1,
                                                 int64_t pad1, int64_t F2, int64_t pad2)
    void me_conv2d_backward(const float *x, const float *w, const float *dy,
                            float *dx, float *dw, float *db,
                            int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                            int64_t KH, int64_t KW, int64_t stride, int64_t pad,
                            int accumulate, float *workspace)
    # pool.c
    void me_maxpool2d_forward(const float *x, float *y, int32_t *argmax,
                              int64_t N, int64_t C, int64_t H, int64_t W, int64_t size, int64_t stride,
                              int64_t pad)
    void me_maxpool2d_backward(const float *dy, const int32_t *argmax, float *dx,
                               int64_t N, int64_t C, int64_t H, int64_t W, int64_t HO, int64_t WO)
    int64_t me_maxpool2d_backward_checked(const float *dy, const int32_t *argmax, float *dx,
                                          int64_t N, int64_t C, int64_t H, int64_t W, int64_t HO, int64_t WO)
    int64_t me_maxpool2d_relu_backward(const float *dy, const int32_t *argmax, const float *y, float *dx,
                                       int64_t N, int64_t C, int64_t H, int64_t W, int64_t HO, int64_t WO)
    void me_avgpool2d_forward(const float *x, float *y, int64_t N, int64_t C, int64_t H, int64_t W,
                              int64_t size, int64_t stride)
    void me_avgpool2d_backward(const float *dy, float *dx, int64_t N, int64_t C, int64_t H, int64_t W,
                               int64_t size, int64_t stride)
    void me_global_avgpool2d_forward(const float *x, float *y, int64_t N, int64_t C, int64_t H, int64_t W)
    void me_global_avgpool2d_backward(const float *dy, float *dx, int64_t N, int64_t C, int64_t H, int64_t W)
    # activations.c
    void me_relu_forward(const float *x, float *y, int64_t n)
    void me_relu_backward(const float *dy, const float *y, float *dx, int64_t n)
    int me_all_finite(const float *x, int64_t n)
    int me_copy_all_finite(const float *x, float *y, int64_t n)
    void me_leaky_relu_forward(const float *x, float *y, int64_t n, float slope)
    void me_leaky_relu_backward(const float *dy, const float *y, float *dx, int64_t n, float slope)
    void me_dropout_apply(const float *x, const float *mask, float *y, int64_t n)
    # dense.c
    void me_dense_forward(const float *x, const float *w, const float *b, float *y,
                          int64_t N, int64_t I, int64_t O, int act, float slope)
    void me_dense_backward(const float *x, const float *w, const float *dy,
                           float *dx, float *dw, float *db,
                           int64_t N, int64_t I, int64_t O, int accumulate)
    # optim.c
    void me_sgd_step(float *p, const float *g, float *v, int64_t n, float lr, float momentum,
                     float dampening, float weight_decay, int nesterov, int first)
    void me_adam_step(float *p, const float *g, float *m, float *v, int64_t n, int64_t t,
                      float lr, float beta1, float beta2, float eps, float weight_decay, int decoupled)
    # distance.c
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
    void me_add_transpose_forward(const float *a, float *out, int64_t N)
    void me_gram_forward(const float *x, float *out, int64_t N, int64_t D)
    # pair_losses.c
    enum: ME_PAIR_MEAN, ME_PAIR_AVG_NON_ZERO, ME_PAIR_WEIGHTS
    double me_contrastive_all(const float *dist, const int64_t *labels, const int64_t *ref_labels,
                              const float *weights, float *losses, float *ddist, int64_t N, int64_t M,
                              float pos_margin, float neg_margin, int exclude_self, int inverted,
                              int reduction, double *stats)
    double me_contrastive_pairs(const float *dist, const int64_t *a1, const int64_t *p, int64_t K1,
                                const int64_t *a2, const int64_t *n, int64_t K2, const float *weights,
                                float *losses, float *ddist, int64_t N, int64_t M, float pos_margin,
                                float neg_margin, int inverted, int reduction, double *stats)
    double me_triplet_all(const float *dist, const int64_t *labels, const int64_t *ref_labels,
                          const float *weights, float *losses, float *ddist, int64_t N, int64_t M,
                          float margin, int exclude_self, int swap, int smooth, int inverted,
                          int reduction, double *stats)
    int64_t me_triplet_all_count(const int64_t *labels, const int64_t *ref_labels, int64_t N, int64_t M,
                                 int exclude_self)
    double me_triplet_triplets(const float *dist, const int64_t *a, const int64_t *p, const int64_t *n,
                               int64_t K, const float *weights, float *losses, float *ddist, int64_t N,
                               int64_t M, float margin, int swap, int smooth, int inverted, int reduction,
                               double *stats)
    # scatter.c
    void me_scatter_add_forward(const float *src, const int64_t *index, float *out, int64_t K, int64_t D,
                                int64_t N)
    void me_scatter_add_backward(const float *dout, const int64_t *index, float *dsrc, int64_t K,
                                 int64_t D, int64_t N)
    # knn.c
    int64_t me_knn_workspace_size(int64_t M, int64_t tile_q, int64_t tile_r, int num_threads)
    void me_knn(const float *q, const float *r, int64_t N, int64_t M, int64_t D, int64_t k,
                int metric, int exclude_self, int64_t tile_q, int64_t tile_r, int num_threads,
                float *workspace, int64_t *indices, float *distances)
    # knn_codes*.c
    int me_knn_codes_mode(int dtype, int64_t D)
    int64_t me_knn_codes_tile(int mode, int64_t D, int64_t tile_r)
    int64_t me_knn_codes_workspace_size(int mode, int64_t N, int64_t M, int64_t D, int64_t k, int64_t tile_r,
                                        int num_threads)
    void me_knn_codes(int dtype, int mode, const float *q, const void *codes, const float *scales, int64_t N,
                      int64_t M, int64_t D, int64_t k, int metric, int64_t tile_r, int num_threads,
                      void *workspace, int64_t *indices, float *distances)
    # softmax_losses.c
    double me_ntxent_all(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                         const float *weights, float *losses, float *dsim, int64_t N, int64_t M,
                         float temperature, int exclude_self, int inverted, int reduction,
                         double *stats)
    double me_supcon_all(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                         const float *weights, float *losses, float *dsim, int64_t N, int64_t M,
                         float temperature, int exclude_self, int inverted, int reduction,
                         double *stats)
    int64_t me_softmax_nll_forward(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                                   float *losses, double *lse, uint8_t *valid, int64_t N, int64_t M,
                                   float scale, int exclude_self, int inverted, double max_loss)
    void me_softmax_nll_backward(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                                 const double *lse, const float *weights, float *dsim, int64_t N,
                                 int64_t M, float scale, int exclude_self, int inverted)
    # softmax_losses_fast.c
    int64_t me_softmax_nll_fast_forward(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                                        float *losses, double *lse, uint8_t *valid, int64_t N, int64_t M,
                                        float scale, int exclude_self, int inverted, double max_loss)
    void me_softmax_nll_fast_backward(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                                      const double *lse, const float *weights, float *dsim, int64_t N,
                                      int64_t M, float scale, int exclude_self, int inverted)
    void me_softmax_xent_rows_forward(const float *sim, const int64_t *target, float *losses, float *lse,
                                      int64_t N, int64_t M, float scale)
    void me_softmax_xent_rows_backward(const float *sim, const int64_t *target, const float *lse,
                                       const float *weights, float *dsim, int64_t N, int64_t M, float scale)
    # pair_weighting.c
    void me_pairw_rows_forward(int kind, const float *mat, const int64_t *labels,
                               const int64_t *ref_labels, const uint8_t *pos_mask,
                               const uint8_t *neg_mask, float *losses, float *dmat, int64_t N,
                               int64_t M, float p0, float p1, float p2, int exclude_self,
                               int inverted)
    void me_pairw_rows_backward(const float *dlosses, float *dmat, int64_t N, int64_t M)
    # tuple_losses.c
    void me_angular_loss_forward(const float *A, const float *B, const float *c, const int64_t *a,
                                 const int64_t *p, const int64_t *labels, const int64_t *ref_labels,
                                 float *losses, int64_t N, int64_t M, int64_t P)
    void me_angular_loss_backward(const float *A, const float *B, const float *c, const int64_t *a,
                                  const int64_t *p, const int64_t *labels, const int64_t *ref_labels,
                                  const float *losses, const float *dlosses, const int64_t *by_anchor,
                                  const int64_t *anchor_ptr, const int64_t *by_pos, const int64_t *pos_ptr,
                                  float *dA, float *dB, float *dc, int64_t N, int64_t M, int64_t P)
    # ranking_losses.c
    void me_pnp_rank_forward(const float *sim, const int64_t *labels, double *rk, int64_t N, double anneal)
    void me_pnp_rank_backward(const double *drk, const float *sim, const int64_t *labels, double *dsim,
                              int64_t N, double anneal)
    void me_dsm_triplet_hist(const float *mat, const int64_t *labels, const int64_t *ref_labels,
                             int64_t N, int64_t M, int exclude_self, double min_val, double delta,
                             int64_t nb, double momentum, double *u_rows, double *counts)
    void me_dsm_triplet_loss(const float *mat, const int64_t *labels, const int64_t *ref_labels,
                             int64_t N, int64_t M, int exclude_self, double min_val, double delta,
                             int64_t nb, const double *cdf, double *loss_rows, double *by_bin_rows)
    void me_dsm_triplet_backward(const float *mat, const int64_t *labels, const int64_t *ref_labels,
                                 int64_t N, int64_t M, int exclude_self, double min_val, double delta,
                                 int64_t nb, const double *cdf, const double *g_u, double scale,
                                 double momentum, float *dmat, double *work)
    # proxy_losses.c
    int64_t me_p2sgrad_workspace_size(int64_t N, int64_t C, int64_t D)
    double me_p2sgrad_forward_backward(const float *x, const float *w, const int64_t *labels,
                                       float *dx, float *dw, int64_t N, int64_t C, int64_t D, float *ws)
    double me_softmax_xent_forward_backward(const float *logits, const int64_t *labels, double *row_loss,
                                            float *dlogits, int64_t N, int64_t C, float scale,
                                            float grad_scale)
    # mining.c
    void me_triplet_mine_count(const float *mat, const int64_t *labels, const int64_t *ref_labels,
                               int64_t N, int64_t M, int exclude_self, int kind, float margin,
                               int inverted, int64_t *counts)
    void me_triplet_mine_fill(const float *mat, const int64_t *labels, const int64_t *ref_labels,
                              int64_t N, int64_t M, int exclude_self, int kind, float margin,
                              int inverted, const int64_t *offsets, int64_t *a, int64_t *p, int64_t *n)
    void me_angular_mine_count(const float *x, const float *r, const int64_t *labels,
                               const int64_t *ref_labels, int64_t N, int64_t M, int64_t D,
                               int exclude_self, double angle, const int64_t *tri_offsets,
                               uint8_t *keep, int64_t *counts, double *row_stats, double *work)
    void me_angular_mine_fill(const int64_t *labels, const int64_t *ref_labels, int64_t N, int64_t M,
                              int exclude_self, const int64_t *tri_offsets, const uint8_t *keep,
                              const int64_t *offsets, int64_t *a, int64_t *p, int64_t *n)
    # transforms.c
    void me_affine_resample_forward(const float *x, const float *theta, float *y,
                                    int64_t N, int64_t C, int64_t H, int64_t W)
    void me_affine_resample_backward(const float *dy, const float *x, const float *theta, float *dx,
                                     float *dtheta, int64_t N, int64_t C, int64_t H, int64_t W)
    # norm.c
    void me_batchnorm_forward(const float *x, const float *gamma, const float *beta, float *running_mean,
                              float *running_var, float *y, float *save_mean, float *save_invstd,
                              int64_t N, int64_t C, int64_t S, int training, float momentum, float eps,
                              int relu)
    void me_batchnorm_backward(const float *dy, const float *x, const float *y, const float *gamma,
                               const float *save_mean, const float *save_invstd, float *dx, float *dgamma,
                               float *dbeta, int64_t N, int64_t C, int64_t S, int training, int accumulate)
    void me_batchnorm_fold(const float *w, const float *b, const float *gamma, const float *beta,
                           const float *running_mean, const float *running_var, float *w_out, float *b_out,
                           int64_t F, int64_t K, float eps)
