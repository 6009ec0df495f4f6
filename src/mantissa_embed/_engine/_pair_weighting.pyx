"""MultiSimilarity / Circle / (generalized) lifted structure per-row losses over a pair matrix
(``src/engine_c/pair_weighting.c``)."""
import numpy as np

from libc.stdint cimport int64_t, uint8_t

from mantissa_embed._checks.pair_weighting import check_backward_args, check_rows_args
from mantissa_embed._engine._cengine cimport me_pairw_rows_backward, me_pairw_rows_forward


__all__ = ['pairw_rows_forward', 'pairw_rows_backward']


def pairw_rows_forward(kind, mat, labels=None, ref_labels=None, pos_mask=None, neg_mask=None,
                       params=(), exclude_self=False, inverted=False, losses=None, dmat=None):
    """Per-anchor-row losses of the mat-based pair losses (MultiSimilarity, Circle, generalized
    lifted structure, lifted structure's negative term) and d losses_i / d mat_ij, fused.

    kind in {"multi_similarity" (alpha, beta, base), "circle" (m, gamma),
    "generalized_lifted" (pos_margin, neg_margin), "neg_lse" (neg_margin,)}; mat (N, M) float32;
    pairs from labels (N,) / ref_labels (M,) int64 (``exclude_self`` drops (i, i)) or from
    pos_mask / neg_mask (N, M) bool or uint8 -> (losses (N,) float32, dmat (N, M) float32).
    See ``mantissa_embed._reference.pairw_rows_forward`` for the formulas.
    """
    (code, pv, mat, labels, ref_labels, pos_mask, neg_mask, exclude_self, inverted, losses,
     dmat) = check_rows_args(kind, mat, labels, ref_labels, pos_mask, neg_mask, params,
                           exclude_self, inverted, losses, dmat)
    N, M = mat.shape
    if N == 0:
        return losses, dmat
    if M == 0:
        # no pair: every loss term is an empty-set log-sum-exp
        losses[...] = -np.inf if kind == "neg_lse" else 0.0
        return losses, dmat
    cdef const float[:, ::1] mv = mat
    cdef float[::1] lv = losses
    cdef float[:, ::1] dv = dmat
    cdef const int64_t[::1] labv
    cdef const int64_t[::1] rlabv
    cdef const uint8_t[:, ::1] pmv
    cdef const uint8_t[:, ::1] nmv
    cdef const int64_t *lab_p = NULL
    cdef const int64_t *rlab_p = NULL
    cdef const uint8_t *pm_p = NULL
    cdef const uint8_t *nm_p = NULL
    if pos_mask is not None:
        pmv = pos_mask
        nmv = neg_mask
        pm_p = &pmv[0, 0]
        nm_p = &nmv[0, 0]
    else:
        labv = labels
        rlabv = ref_labels
        lab_p = &labv[0]
        rlab_p = &rlabv[0]
    cdef int ckind = code, cex = exclude_self, cinv = inverted
    cdef float p0 = pv[0], p1 = pv[1], p2 = pv[2]
    cdef int64_t n = N, m = M
    with nogil:
        me_pairw_rows_forward(ckind, &mv[0, 0], lab_p, rlab_p, pm_p, nm_p, &lv[0], &dv[0, 0],
                              n, m, p0, p1, p2, cex, cinv)
    return losses, dmat


def pairw_rows_backward(dlosses, dmat):
    """Scale the rows of ``dmat`` in place: ``dmat[i, :] *= dlosses[i]`` (dlosses (N,), dmat (N, M)
    float32) and return it. See ``mantissa_embed._reference.pairw_rows_backward``."""
    dlosses, dmat = check_backward_args(dlosses, dmat)
    if dmat.size == 0:
        return dmat
    cdef const float[::1] glv = dlosses
    cdef float[:, ::1] gdv = dmat
    cdef int64_t n = dmat.shape[0], m = dmat.shape[1]
    with nogil:
        me_pairw_rows_backward(&glv[0], &gdv[0, 0], n, m)
    return dmat
