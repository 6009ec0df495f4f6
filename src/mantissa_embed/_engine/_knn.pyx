"""Exact k nearest neighbours (``src/engine_c/knn.c``)."""
import numpy as np

from libc.stdint cimport int64_t

from mantissa_embed._checks.knn import check_knn_search
from mantissa_embed._engine._cengine cimport me_get_num_threads, me_knn, me_knn_workspace_size

__all__ = ['knn_search']


_METRIC_CODE = {"sqeuclidean": 0, "euclidean": 1, "inner_product": 2}


def knn_search(query, reference, k, metric="sqeuclidean", exclude_self=False, tile_q=256,
               tile_r=2048, indices=None, distances=None):
    """Exact k nearest neighbours (``src/engine_c/knn.c``), GIL released, OpenMP over query blocks.

    query (n, D), reference (M, D) float32 -> (indices int64 (n, k), distances float32 (n, k)),
    nearest first, ties by lower index, values recomputed exactly for the returned neighbours.
    Scratch: M + num_threads * tile_q * tile_r floats. See
    ``mantissa_embed._reference.knn_search`` for the parameters and errors.
    """
    q, r, kk, excl, tq, tr, indices, distances = check_knn_search(
        query, reference, k, metric, exclude_self, tile_q, tile_r, indices, distances)
    n, M, D = q.shape[0], r.shape[0], q.shape[1]
    if n == 0:
        return indices, distances
    tq = min(tq, n)
    tr = min(tr, M)
    cdef int c_nt = me_get_num_threads()  # read once: the workspace is sized for these threads
    ws = np.empty(me_knn_workspace_size(M, tq, tr, c_nt), dtype=np.float32)
    cdef const float[:, ::1] qv = q
    cdef const float[:, ::1] rv = r
    cdef int64_t[:, ::1] iv = indices
    cdef float[:, ::1] dv = distances
    cdef float[::1] wv = ws
    cdef int64_t c_n = n, c_m = M, c_d = D, c_k = kk, c_tq = tq, c_tr = tr
    cdef int c_metric = _METRIC_CODE[metric], c_excl = excl
    with nogil:
        me_knn(&qv[0, 0], &rv[0, 0], c_n, c_m, c_d, c_k, c_metric, c_excl, c_tq, c_tr, c_nt,
               &wv[0], &iv[0, 0], &dv[0, 0])
    return indices, distances
