"""PNP smoothed ranks and the all-triplets DynamicSoftMargin loops
(``src/engine_c/ranking_losses.c``)."""
import numpy as np

from libc.stdint cimport int64_t

from mantissa_embed._checks.ranking_losses import (check_cdf, check_dsm, check_f64, check_nb, check_pnp,
                                                   check_real)
from mantissa_embed._engine._cengine cimport (me_dsm_triplet_backward, me_dsm_triplet_hist,
                                             me_dsm_triplet_loss, me_pnp_rank_backward,
                                             me_pnp_rank_forward)


__all__ = ['pnp_rank_forward', 'pnp_rank_backward', 'dsm_triplet_hist', 'dsm_triplet_loss',
           'dsm_triplet_backward']


def pnp_rank_forward(sim, labels, anneal):
    """PNP smoothed ranks. sim (N, N) float32, labels (N,) int -> rk (N, N) float64.
    See ``mantissa_embed._reference.pnp_rank_forward``."""
    sim, labels, a = check_pnp(sim, labels, anneal)
    N = sim.shape[0]
    rk = np.zeros((N, N), dtype=np.float64)
    if N == 0:
        return rk
    cdef const float[:, ::1] sv = sim
    cdef const int64_t[::1] lv = labels
    cdef double[:, ::1] rv = rk
    cdef int64_t n = N
    cdef double ad = a
    with nogil:
        me_pnp_rank_forward(&sv[0, 0], &lv[0], &rv[0, 0], n, ad)
    return rk


def pnp_rank_backward(drk, sim, labels, anneal):
    """Gradient of ``pnp_rank_forward``: drk (N, N) float64 -> dsim (N, N) float64.
    See ``mantissa_embed._reference.pnp_rank_backward``."""
    sim, labels, a = check_pnp(sim, labels, anneal)
    N = sim.shape[0]
    drk = check_f64(drk, "drk", (N, N))
    ds = np.zeros((N, N), dtype=np.float64)
    if N == 0:
        return ds
    cdef const double[:, ::1] gv = drk
    cdef const float[:, ::1] sv = sim
    cdef const int64_t[::1] lv = labels
    cdef double[:, ::1] dv = ds
    cdef int64_t n = N
    cdef double ad = a
    with nogil:
        me_pnp_rank_backward(&gv[0, 0], &sv[0, 0], &lv[0], &dv[0, 0], n, ad)
    return ds


def dsm_triplet_hist(mat, labels, ref_labels, exclude_self, min_val, delta, num_bins, momentum):
    """DynamicSoftMargin histogram contribution over all triplets -> (u (num_bins,) float64, count).
    See ``mantissa_embed._reference.dsm_triplet_hist``."""
    mat, labels, ref_labels, excl, mv, dl = check_dsm(mat, labels, ref_labels, exclude_self, min_val, delta)
    cdef int64_t nb = check_nb(num_bins)
    cdef double mom = check_real(momentum, "momentum")
    N, M = mat.shape
    if N == 0 or M == 0:
        return np.zeros(nb), 0
    u_rows = np.zeros((N, nb), dtype=np.float64)
    counts = np.zeros(N, dtype=np.float64)
    cdef const float[:, ::1] mv_ = mat
    cdef const int64_t[::1] lv = labels
    cdef const int64_t[::1] rv = ref_labels
    cdef double[:, ::1] uv = u_rows
    cdef double[::1] cv = counts
    cdef int64_t n = N, m = M
    cdef int ex = excl
    cdef double mvd = mv, dld = dl
    with nogil:
        me_dsm_triplet_hist(&mv_[0, 0], &lv[0], &rv[0], n, m, ex, mvd, dld, nb, mom, &uv[0, 0], &cv[0])
    u = np.zeros(nb)
    for a in range(N):  # anchor order: identical for any thread count
        u += u_rows[a]
    return u, int(counts.sum())


def dsm_triplet_loss(mat, labels, ref_labels, exclude_self, min_val, delta, cdf):
    """(sum_x cdf[rc(x)] x, by_bin (nb,)) over all triplets.
    See ``mantissa_embed._reference.dsm_triplet_loss``."""
    mat, labels, ref_labels, excl, mv, dl = check_dsm(mat, labels, ref_labels, exclude_self, min_val, delta)
    cdf = check_cdf(cdf)
    cdef int64_t nb = cdf.shape[0]
    N, M = mat.shape
    if N == 0 or M == 0:
        return 0.0, np.zeros(nb)
    loss_rows = np.zeros(N, dtype=np.float64)
    bb_rows = np.zeros((N, nb), dtype=np.float64)
    cdef const float[:, ::1] mv_ = mat
    cdef const int64_t[::1] lv = labels
    cdef const int64_t[::1] rv = ref_labels
    cdef const double[::1] cdv = cdf
    cdef double[::1] lrv = loss_rows
    cdef double[:, ::1] bbv = bb_rows
    cdef int64_t n = N, m = M
    cdef int ex = excl
    cdef double mvd = mv, dld = dl
    with nogil:
        me_dsm_triplet_loss(&mv_[0, 0], &lv[0], &rv[0], n, m, ex, mvd, dld, nb, &cdv[0], &lrv[0], &bbv[0, 0])
    total = 0.0
    by_bin = np.zeros(nb)
    for a in range(N):
        total += loss_rows[a]
        by_bin += bb_rows[a]
    return float(total), by_bin


def dsm_triplet_backward(mat, labels, ref_labels, exclude_self, min_val, delta, cdf, g_u, scale, momentum):
    """dL/d mat (N, M) float32 of the all-triplets DynamicSoftMargin loss.
    See ``mantissa_embed._reference.dsm_triplet_backward``."""
    mat, labels, ref_labels, excl, mv, dl = check_dsm(mat, labels, ref_labels, exclude_self, min_val, delta)
    cdf = check_cdf(cdf)
    cdef int64_t nb = cdf.shape[0]
    g_u = check_f64(g_u, "g_u", (nb,))
    cdef double sc = check_real(scale, "scale")
    cdef double mom = check_real(momentum, "momentum")
    N, M = mat.shape
    dmat = np.zeros((N, M), dtype=np.float32)
    if N == 0 or M == 0:
        return dmat
    work = np.empty((N, M), dtype=np.float64)
    cdef const float[:, ::1] mv_ = mat
    cdef const int64_t[::1] lv = labels
    cdef const int64_t[::1] rv = ref_labels
    cdef const double[::1] cdv = cdf
    cdef const double[::1] guv = g_u
    cdef float[:, ::1] dv = dmat
    cdef double[:, ::1] wv = work
    cdef int64_t n = N, m = M
    cdef int ex = excl
    cdef double mvd = mv, dld = dl
    with nogil:
        me_dsm_triplet_backward(&mv_[0, 0], &lv[0], &rv[0], n, m, ex, mvd, dld, nb, &cdv[0], &guv[0], sc, mom,
                                &dv[0, 0], &wv[0, 0])
    return dmat
