"""NTXent / SupCon / NCA / NPairs / Instance: softmax over pairs, fused with the gradient
(``src/engine_c/softmax_losses.c``; the single-exp variants are in ``softmax_losses_fast.c``)."""
import numpy as np

from libc.stdint cimport int64_t, uint8_t

from mantissa_embed._checks.arrays import check_f32
from mantissa_embed._checks.softmax_losses import (REDUCTIONS, check_common, check_lse, check_max_loss,
                                                   check_reduction, check_row_weights,
                                                   check_temperature, check_xent_lse,
                                                   check_xent_rows)
from mantissa_embed._engine._cengine cimport (me_ntxent_all, me_softmax_nll_backward,
                                             me_softmax_nll_fast_backward, me_softmax_nll_fast_forward,
                                             me_softmax_nll_forward, me_softmax_xent_rows_backward,
                                             me_softmax_xent_rows_forward, me_supcon_all)


__all__ = ['ntxent_all', 'supcon_all', 'softmax_nll_forward', 'softmax_nll_backward',
           'softmax_nll_fast_forward', 'softmax_nll_fast_backward', 'softmax_xent_rows_forward',
           'softmax_xent_rows_backward']


cdef object _pair_softmax(int which, sim, labels, ref_labels, temperature, exclude_self, inverted,
                          reduction, weights, losses, grad):
    sim, labels, ref_labels, exclude_self = check_common(sim, labels, ref_labels, exclude_self, inverted)
    cdef float t = check_temperature(temperature)
    N, M = sim.shape
    wshape = (N, M) if which == 0 else (N,)
    weights = check_reduction(reduction, weights, wshape, losses, grad)
    cdef int red = REDUCTIONS[reduction]
    cdef int excl = exclude_self, inv = bool(inverted)
    dsim = np.zeros((N, M), dtype=np.float32) if grad else None
    lout = np.zeros(wshape, dtype=np.float32) if losses else None
    cdef double st[4]
    st[0] = st[1] = st[2] = st[3] = 0.0
    cdef double value = 0.0
    cdef const float[:, ::1] sv
    cdef const int64_t[::1] lv = labels
    cdef const int64_t[::1] rv = ref_labels
    cdef const float *wp = NULL
    cdef float *lp = NULL
    cdef float *gp = NULL
    cdef const float[::1] w1
    cdef const float[:, ::1] w2
    cdef float[::1] l1
    cdef float[:, ::1] l2
    cdef float[:, ::1] gv
    cdef int64_t n = N, m = M
    if N > 0 and M > 0:
        sv = sim
        if weights is not None:
            if which == 0:
                w2 = weights
                wp = &w2[0, 0]
            else:
                w1 = weights
                wp = &w1[0]
        if lout is not None:
            if which == 0:
                l2 = lout
                lp = &l2[0, 0]
            else:
                l1 = lout
                lp = &l1[0]
        if dsim is not None:
            gv = dsim
            gp = &gv[0, 0]
        with nogil:
            if which == 0:
                value = me_ntxent_all(&sv[0, 0], &lv[0], &rv[0], wp, lp, gp, n, m, t, excl, inv, red, st)
            else:
                value = me_supcon_all(&sv[0, 0], &lv[0], &rv[0], wp, lp, gp, n, m, t, excl, inv, red, st)
    if which == 0:
        stats = {"num_pos_pairs": int(st[1]), "num_neg_pairs": int(st[2]), "num_nonzero": int(st[3])}
    else:
        stats = {"num_pos_pairs": int(st[1]), "num_anchors": int(st[2]), "num_nonzero": int(st[3])}
    return float(value), dsim, lout, stats


def ntxent_all(sim, labels, ref_labels, temperature, exclude_self=False, inverted=True,
               reduction="mean", weights=None, losses=False, grad=True):
    """NTXentLoss over every pair the labels define, fused in C (parallel over anchor rows, one
    log-sum-exp per row, no pair list). See ``mantissa_embed._reference.ntxent_all``
    (same signature and results)."""
    return _pair_softmax(0, sim, labels, ref_labels, temperature, exclude_self, inverted,
                           reduction, weights, losses, grad)


def supcon_all(sim, labels, ref_labels, temperature, exclude_self=False, inverted=True,
               reduction="avg_non_zero", weights=None, losses=False, grad=True):
    """SupConLoss over every pair the labels define, fused in C. See
    ``mantissa_embed._reference.supcon_all`` (same signature and results)."""
    return _pair_softmax(1, sim, labels, ref_labels, temperature, exclude_self, inverted,
                           reduction, weights, losses, grad)


# the float-exp kernels of softmax_losses_fast.c share the contract, and the signatures, of the
# double-exp ones of softmax_losses.c: one argument path each for the forward and the backward
ctypedef int64_t (*_nll_forward_kernel)(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                                        float *losses, double *lse, uint8_t *valid, int64_t N, int64_t M,
                                        float scale, int exclude_self, int inverted,
                                        double max_loss) noexcept nogil
ctypedef void (*_nll_backward_kernel)(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                                      const double *lse, const float *weights, float *dsim, int64_t N,
                                      int64_t M, float scale, int exclude_self, int inverted) noexcept nogil


cdef object _nll_forward(_nll_forward_kernel kernel, sim, labels, ref_labels, scale, exclude_self, inverted,
                         max_loss):
    """Check the arguments, run ``kernel`` without the GIL -> (losses (N,) float32, lse (N, 2)
    float64, valid (N,) bool)."""
    sim, labels, ref_labels, exclude_self = check_common(sim, labels, ref_labels, exclude_self, inverted)
    cdef float sc = check_f32(scale, "scale")
    cdef double ml = check_max_loss(max_loss)
    N, M = sim.shape
    losses = np.zeros(N, dtype=np.float32)
    lse = np.full((N, 2), -np.inf, dtype=np.float64)
    valid = np.zeros(N, dtype=np.uint8)
    if N == 0 or M == 0:
        return losses, lse, valid.view(bool)
    cdef const float[:, ::1] sv = sim
    cdef const int64_t[::1] lv = labels
    cdef const int64_t[::1] rv = ref_labels
    cdef float[::1] ov = losses
    cdef double[:, ::1] ev = lse
    cdef uint8_t[::1] vv = valid
    cdef int64_t n = N, m = M
    cdef int excl = exclude_self, inv = bool(inverted)
    with nogil:
        kernel(&sv[0, 0], &lv[0], &rv[0], &ov[0], &ev[0, 0], &vv[0], n, m, sc, excl, inv, ml)
    return losses, lse, valid.view(bool)


cdef object _nll_backward(_nll_backward_kernel kernel, sim, labels, ref_labels, lse, weights, scale,
                          exclude_self, inverted):
    """Check the arguments, run ``kernel`` without the GIL -> dsim (N, M) float32 (every entry
    written by the kernel)."""
    sim, labels, ref_labels, exclude_self = check_common(sim, labels, ref_labels, exclude_self, inverted)
    cdef float sc = check_f32(scale, "scale")
    N, M = sim.shape
    lse = check_lse(lse, N)
    weights = check_row_weights(weights, N)
    dsim = np.empty((N, M), dtype=np.float32)
    if N == 0 or M == 0:
        return dsim
    cdef const float[:, ::1] sv = sim
    cdef const int64_t[::1] lv = labels
    cdef const int64_t[::1] rv = ref_labels
    cdef const double[:, ::1] ev = lse
    cdef const float[::1] wv = weights
    cdef float[:, ::1] gv = dsim
    cdef int64_t n = N, m = M
    cdef int excl = exclude_self, inv = bool(inverted)
    with nogil:
        kernel(&sv[0, 0], &lv[0], &rv[0], &ev[0, 0], &wv[0], &gv[0, 0], n, m, sc, excl, inv)
    return dsim


def softmax_nll_forward(sim, labels, ref_labels, scale=1.0, exclude_self=False, inverted=True,
                        max_loss=np.inf):
    """Row softmax negative log-likelihood (NCA / NPairs / Instance). See
    ``mantissa_embed._reference.softmax_nll_forward``."""
    return _nll_forward(me_softmax_nll_forward, sim, labels, ref_labels, scale, exclude_self, inverted,
                        max_loss)


def softmax_nll_backward(sim, labels, ref_labels, lse, weights, scale=1.0, exclude_self=False,
                         inverted=True):
    """Gradient of ``sum_i weights[i] * l_i`` w.r.t. ``sim``. See
    ``mantissa_embed._reference.softmax_nll_backward``."""
    return _nll_backward(me_softmax_nll_backward, sim, labels, ref_labels, lse, weights, scale,
                         exclude_self, inverted)


def softmax_nll_fast_forward(sim, labels, ref_labels, scale=1.0, exclude_self=False, inverted=True,
                             max_loss=np.inf):
    """``softmax_nll_forward`` with one vectorized float exp per entry (C kernel; equal up to
    float32 rounding of the logits). See ``mantissa_embed._reference.softmax_nll_fast_forward``."""
    return _nll_forward(me_softmax_nll_fast_forward, sim, labels, ref_labels, scale, exclude_self, inverted,
                        max_loss)


def softmax_nll_fast_backward(sim, labels, ref_labels, lse, weights, scale=1.0, exclude_self=False,
                              inverted=True):
    """``softmax_nll_backward`` with one vectorized float exp per entry (C kernel). See
    ``mantissa_embed._reference.softmax_nll_fast_backward``."""
    return _nll_backward(me_softmax_nll_fast_backward, sim, labels, ref_labels, lse, weights, scale,
                         exclude_self, inverted)


def softmax_xent_rows_forward(sim, target, scale=1.0):
    """Single-target row softmax cross-entropy (C kernel, float32 logits). See
    ``mantissa_embed._reference.softmax_xent_rows_forward``."""
    sim, target = check_xent_rows(sim, target)
    cdef float sc = check_f32(scale, "scale")
    N, M = sim.shape
    losses = np.zeros(N, dtype=np.float32)
    lse = np.zeros(N, dtype=np.float32)
    if N == 0:
        return losses, lse
    cdef const float[:, ::1] sv = sim
    cdef const int64_t[::1] tv = target
    cdef float[::1] ov = losses
    cdef float[::1] ev = lse
    cdef int64_t n = N, m = M
    with nogil:
        me_softmax_xent_rows_forward(&sv[0, 0], &tv[0], &ov[0], &ev[0], n, m, sc)
    return losses, lse


def softmax_xent_rows_backward(sim, target, lse, weights, scale=1.0):
    """Gradient of ``softmax_xent_rows_forward`` (C kernel). See
    ``mantissa_embed._reference.softmax_xent_rows_backward``."""
    sim, target = check_xent_rows(sim, target)
    cdef float sc = check_f32(scale, "scale")
    N, M = sim.shape
    lse = check_xent_lse(lse, N)
    weights = check_row_weights(weights, N)
    dsim = np.empty((N, M), dtype=np.float32)
    if N == 0:
        return dsim
    cdef const float[:, ::1] sv = sim
    cdef const int64_t[::1] tv = target
    cdef const float[::1] ev = lse
    cdef const float[::1] wv = weights
    cdef float[:, ::1] gv = dsim
    cdef int64_t n = N, m = M
    with nogil:
        me_softmax_xent_rows_backward(&sv[0, 0], &tv[0], &ev[0], &wv[0], &gv[0, 0], n, m, sc)
    return dsim
