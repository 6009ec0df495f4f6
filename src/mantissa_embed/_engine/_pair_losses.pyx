"""ContrastiveLoss and TripletMarginLoss reductions over a distance matrix, fused with their
gradient, and their per-term modes (per-term losses, the reducer's weights)
(``src/engine_c/pair_losses.c``)."""
from libc.stdint cimport int64_t

from mantissa_embed._engine._cengine cimport (ME_PAIR_AVG_NON_ZERO, ME_PAIR_MEAN, ME_PAIR_WEIGHTS,
                                             me_contrastive_all, me_contrastive_pairs, me_triplet_all,
                                             me_triplet_all_count, me_triplet_triplets)
from mantissa_embed._engine._pointers cimport _fptr, _wptr
from mantissa_embed._checks.arrays import check_f32, check_flag, check_int_array
from mantissa_embed._checks.pair_losses import (check_ddist_overlap, check_label_pair, check_pair_args,
                                                check_self, check_swap_all, check_terms)


__all__ = ['contrastive_loss_all', 'contrastive_loss_pairs', 'triplet_all_count',
           'triplet_loss_all', 'triplet_loss_triplets']


cdef dict _contrastive_stats(double *st):
    return {"pos_loss": st[0], "neg_loss": st[1],
            "num_pos_pairs": int(st[2]), "num_neg_pairs": int(st[3]),
            "num_pos_nonzero": int(st[4]), "num_neg_nonzero": int(st[5])}


cdef dict _triplet_stats(double *st):
    return {"loss": st[0], "num_triplets": int(st[1]), "num_nonzero": int(st[2])}


cdef tuple _terms(weights, shape, ddist, grad, return_losses, bint nonzero_only):
    """check_terms with the reduction as engine.h's code; skipped for the fused call (no
    weights, the gradient, no per-term losses)."""
    if weights is None and grad is True and return_losses is False:
        return None, ddist, None, ME_PAIR_AVG_NON_ZERO if nonzero_only else ME_PAIR_MEAN
    weights, ddist, losses, red = check_terms(weights, shape, ddist, grad, return_losses, nonzero_only)
    code = {"mean": ME_PAIR_MEAN, "avg_non_zero": ME_PAIR_AVG_NON_ZERO, "weights": ME_PAIR_WEIGHTS}[red]
    return weights, ddist, losses, code


cdef tuple _result(double loss, ddist, dict stats, losses, bint return_losses):
    if return_losses:
        return float(loss), ddist, stats, losses
    return float(loss), ddist, stats


def contrastive_loss_all(dist, labels, ref_labels, pos_margin=0.0, neg_margin=1.0, exclude_self=False,
                         inverted=False, nonzero_only=True, ddist=None, weights=None, grad=True,
                         return_losses=False):
    """Contrastive loss over every pair of dist (N, M) and dL/d dist, fused (PML semantics).

    Returns (loss, ddist (N, M) float32 or None, stats dict[, losses (N, M) float32]). See
    ``mantissa_embed._reference.contrastive_loss_all``.
    """
    dist, ddist, N, M, inv, nz = check_pair_args(dist, ddist, inverted, nonzero_only)
    labels, ref_labels = check_label_pair(labels, ref_labels, N, M)
    cdef int ex = check_self(exclude_self, N, M)
    cdef float pm = check_f32(pos_margin, "pos_margin")
    cdef float nm = check_f32(neg_margin, "neg_margin")
    weights, ddist, losses, red = _terms(weights, (N, M), ddist, grad, return_losses, nz)
    check_ddist_overlap(ddist, weights, labels=labels, ref_labels=ref_labels)
    cdef double st[6]
    cdef double loss = 0.0
    cdef int i
    for i in range(6):
        st[i] = 0.0
    cdef int ci = inv, cr = red
    cdef int64_t n = N, m = M
    cdef const float *dp = _fptr(dist)
    cdef const float *wp = _fptr(weights)
    cdef float *lp = _wptr(losses)
    cdef float *gp = _wptr(ddist)
    cdef const int64_t[::1] lv
    cdef const int64_t[::1] rlv
    if N > 0 and M > 0:
        lv = labels
        rlv = ref_labels
        with nogil:
            loss = me_contrastive_all(dp, &lv[0], &rlv[0], wp, lp, gp, n, m, pm, nm, ex, ci, cr, st)
    return _result(loss, ddist, _contrastive_stats(st), losses, return_losses)


def contrastive_loss_pairs(dist, a1, p, a2, n, pos_margin=0.0, neg_margin=1.0, inverted=False,
                           nonzero_only=True, ddist=None, weights=None, grad=True, return_losses=False):
    """Contrastive loss over given pairs (a1, p) positive, (a2, n) negative, fused (PML semantics).

    Returns (loss, ddist (N, M) float32 or None, stats dict[, losses (K1 + K2,) float32]). See
    ``mantissa_embed._reference.contrastive_loss_pairs``.
    """
    dist, ddist, N, M, inv, nz = check_pair_args(dist, ddist, inverted, nonzero_only)
    a1 = check_int_array(a1, "a1", upper=N)
    p = check_int_array(p, "p", length=a1.shape[0], upper=M)
    a2 = check_int_array(a2, "a2", upper=N)
    n = check_int_array(n, "n", length=a2.shape[0], upper=M)
    cdef float pm = check_f32(pos_margin, "pos_margin")
    cdef float nm = check_f32(neg_margin, "neg_margin")
    cdef int64_t k1 = a1.shape[0], k2 = a2.shape[0]
    weights, ddist, losses, red = _terms(weights, (k1 + k2,), ddist, grad, return_losses, nz)
    check_ddist_overlap(ddist, weights, a1=a1, p=p, a2=a2, n=n)
    cdef double st[6]
    cdef double loss = 0.0
    cdef int i
    for i in range(6):
        st[i] = 0.0
    st[2] = <double>k1
    st[3] = <double>k2
    cdef int ci = inv, cr = red
    cdef int64_t cn = N, cm = M
    cdef int64_t zero = 0
    cdef const float *dp = _fptr(dist)
    cdef const float *wp = _fptr(weights)
    cdef float *lp = _wptr(losses)
    cdef float *gp = _wptr(ddist)
    cdef const int64_t[::1] a1v
    cdef const int64_t[::1] pv
    cdef const int64_t[::1] a2v
    cdef const int64_t[::1] nv
    cdef const int64_t *a1p = &zero
    cdef const int64_t *pp = &zero
    cdef const int64_t *a2p = &zero
    cdef const int64_t *np_ = &zero
    if N > 0 and M > 0:
        if k1 > 0:
            a1v = a1
            pv = p
            a1p = &a1v[0]
            pp = &pv[0]
        if k2 > 0:
            a2v = a2
            nv = n
            a2p = &a2v[0]
            np_ = &nv[0]
        with nogil:
            loss = me_contrastive_pairs(dp, a1p, pp, k1, a2p, np_, k2, wp, lp, gp, cn, cm, pm, nm,
                                        ci, cr, st)
    return _result(loss, ddist, _contrastive_stats(st), losses, return_losses)


def triplet_all_count(labels, ref_labels, exclude_self=False):
    """The number of triplets ``triplet_loss_all`` ranges over (its per-term losses' length)."""
    labels = check_int_array(labels, "labels")
    ref_labels = check_int_array(ref_labels, "ref_labels")
    N, M = labels.shape[0], ref_labels.shape[0]
    cdef int ex = check_self(exclude_self, N, M)
    cdef int64_t n = N, m = M, t = 0
    cdef const int64_t[::1] lv
    cdef const int64_t[::1] rlv
    if N > 0 and M > 0:
        lv = labels
        rlv = ref_labels
        with nogil:
            t = me_triplet_all_count(&lv[0], &rlv[0], n, m, ex)
    return int(t)


def triplet_loss_all(dist, labels, ref_labels, margin=0.05, exclude_self=False, swap=False, smooth=False,
                     inverted=False, nonzero_only=True, ddist=None, weights=None, grad=True,
                     return_losses=False):
    """Triplet margin loss over every triplet of dist (N, M) and dL/d dist, fused (PML semantics).

    The fused reduction never materializes the triplets: parallel over anchors, fixed-order sums.
    Returns (loss, ddist (N, M) float32 or None, stats dict[, losses (T,) float32]). See
    ``mantissa_embed._reference.triplet_loss_all``.
    """
    dist, ddist, N, M, inv, nz = check_pair_args(dist, ddist, inverted, nonzero_only)
    labels, ref_labels = check_label_pair(labels, ref_labels, N, M)
    cdef int ex = check_self(exclude_self, N, M)
    cdef int sw = check_swap_all(swap, labels, ref_labels)
    cdef int sm = check_flag(smooth, "smooth")
    cdef float mg = check_f32(margin, "margin")
    T = triplet_all_count(labels, ref_labels, ex) if (weights is not None or return_losses) else 0
    weights, ddist, losses, red = _terms(weights, (T,), ddist, grad, return_losses, nz)
    check_ddist_overlap(ddist, weights, labels=labels, ref_labels=ref_labels)
    cdef double st[3]
    st[0] = 0.0
    st[1] = 0.0
    st[2] = 0.0
    cdef double loss = 0.0
    cdef int ci = inv, cr = red
    cdef int64_t n = N, m = M
    cdef const float *dp = _fptr(dist)
    cdef const float *wp = _fptr(weights)
    cdef float *lp = _wptr(losses)
    cdef float *gp = _wptr(ddist)
    cdef const int64_t[::1] lv
    cdef const int64_t[::1] rlv
    if N > 0 and M > 0:
        lv = labels
        rlv = ref_labels
        with nogil:
            loss = me_triplet_all(dp, &lv[0], &rlv[0], wp, lp, gp, n, m, mg, ex, sw, sm, ci, cr, st)
    return _result(loss, ddist, _triplet_stats(st), losses, return_losses)


def triplet_loss_triplets(dist, a, p, n, margin=0.05, swap=False, smooth=False, inverted=False,
                          nonzero_only=True, ddist=None, weights=None, grad=True, return_losses=False):
    """Triplet margin loss over given triplets (a, p, n) and dL/d dist, fused (PML semantics).

    Returns (loss, ddist (N, M) float32 or None, stats dict[, losses (K,) float32]). See
    ``mantissa_embed._reference.triplet_loss_triplets``.
    """
    dist, ddist, N, M, inv, nz = check_pair_args(dist, ddist, inverted, nonzero_only)
    cdef int sw = check_flag(swap, "swap")
    a = check_int_array(a, "a", upper=N)
    p = check_int_array(p, "p", length=a.shape[0], upper=min(N, M) if sw else M)
    n = check_int_array(n, "n", length=a.shape[0], upper=M)
    cdef int sm = check_flag(smooth, "smooth")
    cdef float mg = check_f32(margin, "margin")
    cdef int64_t k = a.shape[0]
    weights, ddist, losses, red = _terms(weights, (k,), ddist, grad, return_losses, nz)
    check_ddist_overlap(ddist, weights, a=a, p=p, n=n)
    cdef double st[3]
    st[0] = 0.0
    st[1] = <double>k
    st[2] = 0.0
    cdef double loss = 0.0
    cdef int ci = inv, cr = red
    cdef int64_t cn = N, cm = M
    cdef const float *dp = _fptr(dist)
    cdef const float *wp = _fptr(weights)
    cdef float *lp = _wptr(losses)
    cdef float *gp = _wptr(ddist)
    cdef const int64_t[::1] av
    cdef const int64_t[::1] pv
    cdef const int64_t[::1] nv
    if N > 0 and M > 0 and k > 0:
        av = a
        pv = p
        nv = n
        with nogil:
            loss = me_triplet_triplets(dp, &av[0], &pv[0], &nv[0], k, wp, lp, gp, cn, cm, mg,
                                       sw, sm, ci, cr, st)
    elif ddist is not None:
        ddist[...] = 0
    return _result(loss, ddist, _triplet_stats(st), losses, return_losses)


