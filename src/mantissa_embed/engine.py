"""Typed wrappers around the mantissa C engine (``src/engine_c/engine.h``).

One function per C entry point, re-exported from the family modules of
:mod:`mantissa_embed._engine`. Inputs are validated once (float32, C-contiguous, shapes), then the
engine call runs with the GIL released. Every public function has a numpy twin with the same
signature in :mod:`mantissa_embed._reference`.
"""
from mantissa_embed._engine._cpu import (
    cpu_features, gemm_kernel_name, get_num_threads, set_num_threads, _set_gemm_kernel)
from mantissa_embed._engine._gemm import sgemm, _sgemm_st
from mantissa_embed._engine._conv import (
    conv2d_backward, conv2d_forward, conv2d_pool2_chain_forward, conv2d_pool2_chain_workspace_size,
    conv2d_pool2_forward, conv2d_workspace_size)
from mantissa_embed._engine._pool import (
    maxpool2d_backward, maxpool2d_forward, maxpool2d_relu_backward)
from mantissa_embed._engine._dense import (
    adam_step, all_finite, dense_backward, dense_forward, relu_backward, relu_forward, sgd_step)
from mantissa_embed._engine._distance import (
    add_transpose_forward, dot_similarity_backward, dot_similarity_forward,
    euclidean_backward, euclidean_forward, euclidean_workspace_size, gram_forward,
    l2_normalize_backward, l2_normalize_forward)
from mantissa_embed._engine._pair_losses import (
    contrastive_loss_all, contrastive_loss_pairs, triplet_all_count, triplet_loss_all, triplet_loss_triplets)
from mantissa_embed._engine._scatter import scatter_add_backward, scatter_add_forward
from mantissa_embed._engine._softmax_losses import (
    ntxent_all, softmax_nll_backward, softmax_nll_fast_backward, softmax_nll_fast_forward,
    softmax_nll_forward, softmax_xent_rows_backward, softmax_xent_rows_forward, supcon_all)
from mantissa_embed._engine._pair_weighting import pairw_rows_backward, pairw_rows_forward
from mantissa_embed._engine._tuple_losses import angular_loss_backward, angular_loss_forward
from mantissa_embed._engine._ranking_losses import (
    dsm_triplet_backward, dsm_triplet_hist, dsm_triplet_loss, pnp_rank_backward, pnp_rank_forward)
from mantissa_embed._engine._proxy_losses import (
    p2sgrad_forward_backward, softmax_xent_forward_backward)
from mantissa_embed._engine._mining import angular_mine, triplet_margin_mine
from mantissa_embed._engine._knn import knn_search
