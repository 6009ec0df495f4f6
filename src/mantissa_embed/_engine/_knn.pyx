"""Exact k nearest neighbours (``src/engine_c/knn.c``)."""
import numpy as np

from libc.stdint cimport int64_t

from mantissa_embed._checks.knn import (CODE_DTYPES, CODE_MODES, check_code_width, check_knn_codes_search,
                                        check_knn_search)
from mantissa_embed._engine._cengine cimport (me_cpu_features, me_get_num_threads, me_knn, me_knn_codes,
                                             me_knn_codes_mode, me_knn_codes_tile,
                                             me_knn_codes_workspace_size, me_knn_workspace_size)

__all__ = ['knn_search', 'knn_codes_search', 'knn_codes_mode']


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


_DTYPE_CODE = {"float32": 0, "float16": 1, "bfloat16": 2, "int8": 3}
_CODES_METRIC = {"sqeuclidean": 0, "euclidean": 1, "inner_product": 2, "cosine": 3}


def knn_codes_mode(dtype, D):
    """The ranking arithmetic ``knn_codes_search`` uses by default for ``dtype`` and width ``D`` with
    the SGEMM kernel in use on this CPU: ``"bf16dot"`` (bfloat16, AVX-512 BF16), ``"u8dot"`` (int8,
    AVX-512 VNNI), ``"u7dot"`` (int8, AVX2), else ``"f32"``. Raises ValueError for an unknown dtype
    or ``D < 1``, TypeError for a non-integer ``D``."""
    if dtype not in CODE_DTYPES:
        raise ValueError(f"dtype must be one of {tuple(CODE_DTYPES)}, got {dtype!r}")
    return CODE_MODES[me_knn_codes_mode(_DTYPE_CODE[dtype], <int64_t>check_code_width(D))]


def _mode_runs(mode):
    cdef int f = me_cpu_features()
    return (mode == "f32" or (mode == "u7dot" and (f & 3) == 3)
            or (mode == "bf16dot" and f & 128) or (mode == "u8dot" and f & 64))


def knn_codes_search(query, codes, scales, k, dtype, metric="sqeuclidean", mode=None, tile_r=0,
                     indices=None, distances=None):
    """k nearest stored rows over codes (``src/engine_c/knn_codes*.c``), GIL released, threads
    over reference tiles. See ``mantissa_embed._reference.knn_codes_search`` for the parameters,
    the modes and the errors; ``mode=None`` is ``knn_codes_mode(dtype, D)``. A mode this CPU
    cannot run raises ValueError. Scratch: one tile per thread plus (threads - 1) heaps."""
    if mode is None:  # D from the codes (always an array): a list query has no shape
        cd = getattr(codes, "shape", ())
        mode = knn_codes_mode(dtype, cd[1] if len(cd) == 2 else 0)
    q, c, s, kk, tr, indices, distances = check_knn_codes_search(
        query, codes, scales, k, dtype, metric, mode, tile_r, indices, distances)
    if not _mode_runs(mode):
        raise ValueError(f"mode {mode!r} needs a CPU feature this machine lacks")
    n, M, D = q.shape[0], c.shape[0], q.shape[1]
    if n == 0:
        return indices, distances
    cdef int c_mode = CODE_MODES.index(mode), c_dtype = _DTYPE_CODE[dtype]
    cdef int c_nt = me_get_num_threads()
    cdef int64_t c_n = n, c_m = M, c_d = D, c_k = kk, c_tr = tr
    ws = np.empty(me_knn_codes_workspace_size(c_mode, c_n, c_m, c_d, c_k, c_tr, c_nt), dtype=np.uint8)
    cdef const float[:, ::1] qv = q
    cdef const unsigned char[::1] cv = c.reshape(-1).view(np.uint8) if c.size else np.zeros(1, np.uint8)
    cdef const float[::1] sv = s if s is not None else np.zeros(1, np.float32)
    cdef const float *sp = &sv[0] if s is not None else NULL
    cdef int64_t[:, ::1] iv = indices
    cdef float[:, ::1] dv = distances
    cdef unsigned char[::1] wv = ws
    cdef int c_metric = _CODES_METRIC[metric]
    with nogil:
        me_knn_codes(c_dtype, c_mode, &qv[0, 0], &cv[0], sp, c_n, c_m, c_d, c_k, c_metric, c_tr, c_nt,
                     &wv[0], &iv[0, 0], &dv[0, 0])
    return indices, distances
