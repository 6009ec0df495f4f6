"""TripletMarginMiner and AngularMiner selection (``src/engine_c/mining.c``)."""
import numpy as np

from libc.stdint cimport int64_t, uint8_t

from mantissa_embed._checks.mining import check_angular_mine_args, check_triplet_mine_args
from mantissa_embed._engine._cengine cimport (me_angular_mine_count, me_angular_mine_fill,
                                             me_triplet_mine_count, me_triplet_mine_fill)


__all__ = ['triplet_margin_mine', 'angular_mine']


def _empty_triplets():
    return tuple(np.zeros(0, dtype=np.int64) for _ in range(3))


def triplet_margin_mine(mat, labels, ref_labels, exclude_self, type_of_triplets, margin, is_inverted):
    """Triplets of TripletMarginMiner selected on mat (N, M) float32: (a, p, n) int64 sorted.

    See ``mantissa_embed._reference.triplet_margin_mine``.
    """
    mat, labels, ref_labels, N, M, exclude_self, kind, margin, inverted = check_triplet_mine_args(
        mat, labels, ref_labels, exclude_self, type_of_triplets, margin, is_inverted)
    if N == 0 or M == 0:
        return _empty_triplets()
    counts = np.zeros(N, dtype=np.int64)
    cdef const float[:, ::1] mv = mat
    cdef const int64_t[::1] lv = labels
    cdef const int64_t[::1] rv = ref_labels
    cdef int64_t[::1] cv = counts
    cdef int64_t cn = N, cm = M
    cdef int cex = exclude_self, ckind = kind, cinv = inverted
    cdef float cmargin = margin
    with nogil:
        me_triplet_mine_count(&mv[0, 0], &lv[0], &rv[0], cn, cm, cex, ckind, cmargin, cinv, &cv[0])
    offsets = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    T = int(offsets[N])
    if T == 0:
        return _empty_triplets()
    a = np.empty(T, dtype=np.int64)
    p = np.empty(T, dtype=np.int64)
    n = np.empty(T, dtype=np.int64)
    cdef const int64_t[::1] ov = offsets
    cdef int64_t[::1] av = a
    cdef int64_t[::1] pv = p
    cdef int64_t[::1] nv = n
    with nogil:
        me_triplet_mine_fill(&mv[0, 0], &lv[0], &rv[0], cn, cm, cex, ckind, cmargin, cinv, &ov[0],
                             &av[0], &pv[0], &nv[0])
    return a, p, n


def _triplets_per_anchor(labels, ref_labels, exclude_self):
    """(N,) int64: positives x negatives of each anchor."""
    u, cnt = np.unique(ref_labels, return_counts=True)
    pos = np.zeros(len(labels), dtype=np.int64)
    if len(u):
        j = np.minimum(np.searchsorted(u, labels), len(u) - 1)
        pos = np.where(u[j] == labels, cnt[j], 0).astype(np.int64)
    neg = len(ref_labels) - pos
    if exclude_self:
        pos = np.maximum(pos - 1, 0)
    return pos * neg


def angular_mine(x, r, labels, ref_labels, exclude_self, angle):
    """Triplets of AngularMiner and the angle stats: (a, p, n, stats).

    See ``mantissa_embed._reference.angular_mine``.
    """
    x, r, labels, ref_labels, N, M, D, exclude_self, angle = check_angular_mine_args(
        x, r, labels, ref_labels, exclude_self, angle)
    stats = np.array([0.0, 0.0, 0.0, np.inf, -np.inf])
    if N == 0 or M == 0:
        return (*_empty_triplets(), stats)
    tri_offsets = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(_triplets_per_anchor(labels, ref_labels, exclude_self), out=tri_offsets[1:])
    if tri_offsets[N] == 0:
        return (*_empty_triplets(), stats)
    keep = np.zeros(int(tri_offsets[N]), dtype=np.uint8)
    counts = np.zeros(N, dtype=np.int64)
    row_stats = np.zeros((N, 5), dtype=np.float64)
    work = np.empty((N, 2 * D), dtype=np.float64)
    cdef const float[:, ::1] xv = x
    cdef const float[:, ::1] rmv = r
    cdef const int64_t[::1] alv = labels
    cdef const int64_t[::1] arv = ref_labels
    cdef const int64_t[::1] atv = tri_offsets
    cdef uint8_t[::1] akv = keep
    cdef int64_t[::1] acv = counts
    cdef double[:, ::1] sv = row_stats
    cdef double[:, ::1] wv = work
    cdef int64_t an = N, am = M, ad = D
    cdef int aex = exclude_self
    cdef double cang = angle
    with nogil:
        me_angular_mine_count(&xv[0, 0], &rmv[0, 0], &alv[0], &arv[0], an, am, ad, aex, cang, &atv[0],
                              &akv[0], &acv[0], &sv[0, 0], &wv[0, 0])
    stats[0] = row_stats[:, 0].sum()
    fin = row_stats[:, 1] > 0
    if fin.any():
        stats[1] = row_stats[:, 1].sum()
        stats[2] = row_stats[fin, 2].sum()
        stats[3] = row_stats[fin, 3].min()
        stats[4] = row_stats[fin, 4].max()
    offsets = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    T = int(offsets[N])
    if T == 0:
        return (*_empty_triplets(), stats)
    a = np.empty(T, dtype=np.int64)
    p = np.empty(T, dtype=np.int64)
    n = np.empty(T, dtype=np.int64)
    cdef const int64_t[::1] aov = offsets
    cdef int64_t[::1] aav = a
    cdef int64_t[::1] apv = p
    cdef int64_t[::1] anv = n
    with nogil:
        me_angular_mine_fill(&alv[0], &arv[0], an, am, aex, &atv[0], &akv[0], &aov[0],
                             &aav[0], &apv[0], &anv[0])
    return a, p, n, stats
