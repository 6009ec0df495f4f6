"""Exact, tiled k-nearest-neighbour search over embeddings.

The query x reference score matrix is never materialized: it is computed block by block
(one SGEMM per block, on the mantissa engine or numpy) and each block is reduced to its
``k`` best candidates (a threshold from group minima then a filter when ``k`` is small
against the block, ``argpartition`` otherwise; candidates are sorted stably in index
order), which are merged into a running top-``k`` (stable, earlier blocks first). Equal
scores are therefore always ordered by lower reference index.
"""
from __future__ import annotations

import numpy as np

from .._validation import check_array, check_int

__all__ = ["knn", "METRICS"]

METRICS = ("euclidean", "sqeuclidean", "cosine", "inner_product")

# Elements of one score block (float32) -- bounds scratch to ~ 13 bytes x this.
_BLOCK_ELEMS = 1 << 22
_F32_MAX = float(np.finfo(np.float32).max)


def _gemm_nt(backend_mod, A, B, C, alpha, beta):
    """C = alpha * A @ B.T + beta * C in float32, in place."""
    if backend_mod is None:
        prod = np.matmul(A, B.T)
        if beta == 0.0:
            np.multiply(prod, np.float32(alpha), out=C)
        else:
            C *= np.float32(beta)
            C += np.float32(alpha) * prod
        return C
    return backend_mod.sgemm(A, B, C, trans_b=True, alpha=alpha, beta=beta)


def _topk_sorted(S, kk, col0):
    """Row-wise kk smallest of S (bq, br), ordered by (value, column). Returns (vals, global idx)."""
    bq, br = S.shape
    if kk >= br:
        idx = np.argsort(S, axis=1, kind="stable")[:, :kk]
    elif 16 * kk <= br:
        # Threshold = the kk-th smallest of g >= kk group minima: an upper bound of the row's
        # kk-th smallest value, so every row keeps >= kk candidates (usually few more).
        g = min(br, max(4 * kk, 32))
        gmin = np.minimum.reduceat(S, (np.arange(g) * br) // g, axis=1)
        th = np.partition(gmin, kk - 1, axis=1)[:, kk - 1:kk]
        flat = np.flatnonzero(S <= th)  # row-major: rows, then columns ascending
        rows, cols = np.divmod(flat, br)
        vals = S.reshape(-1)[flat]
        order = np.lexsort((cols, vals, rows))  # by row, then value, then column
        first = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=bq))[:-1]))
        sel = order[first[:, None] + np.arange(kk)]
        return vals[sel], cols[sel].astype(np.int64) + col0
    else:
        part = np.argpartition(S, kk - 1, axis=1)[:, :kk]
        part.sort(axis=1)  # column order, so the stable value sort breaks ties by index
        pv = np.take_along_axis(S, part, axis=1)
        idx = np.take_along_axis(part, np.argsort(pv, axis=1, kind="stable"), axis=1)
        # argpartition may have kept a higher column among values equal to the k-th one.
        kth = np.take_along_axis(S, idx[:, -1:], axis=1)
        n_le = np.count_nonzero(S <= kth, axis=1)
        for r in np.flatnonzero(n_le > kk):
            cand = np.flatnonzero(S[r] <= kth[r, 0])
            idx[r] = cand[np.argsort(S[r, cand], kind="stable")[:kk]]
    vals = np.take_along_axis(S, idx, axis=1)
    return vals, idx.astype(np.int64) + col0


def _check_knn_args(query, reference, k, exclude_self, metric, tile, backend):
    q = check_array(query, "query", ndim=2)
    r = check_array(reference, "reference", ndim=2)
    if q.shape[1] != r.shape[1]:
        raise ValueError(
            f"query and reference must have the same number of columns, got {q.shape[1]} and {r.shape[1]}")
    if q.shape[1] == 0:
        raise ValueError("query and reference must have at least one column (embedding dimension 0)")
    k = check_int(k, "k", minimum=1)
    if not isinstance(exclude_self, (bool, np.bool_)):
        raise TypeError(f"exclude_self must be a bool, got {type(exclude_self).__name__}")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    tile = check_int(tile, "tile", minimum=1)
    if backend == "numpy":
        backend_mod = None
    elif backend == "mantissa":
        from .. import engine as backend_mod
    else:
        raise ValueError(f"backend must be 'mantissa' or 'numpy', got {backend!r}")
    n, M = q.shape[0], r.shape[0]
    if exclude_self and n > M:
        raise ValueError(
            f"exclude_self=True needs query row i to be reference row i, but query has {n} rows "
            f"and reference only {M}")
    avail = M - int(bool(exclude_self))
    if k > avail:
        what = "reference rows, excluding self" if exclude_self else "reference rows"
        raise ValueError(f"k must be <= {avail} (the number of {what}), got k={k}")
    return q, r, k, bool(exclude_self), tile, backend_mod


def knn(query, reference, k, *, exclude_self=False, metric="euclidean", tile=4096, backend="mantissa"):
    """Exact k nearest neighbours of each query row among the reference rows.

    Parameters
    ----------
    query : array_like, float, shape (n, D)
    reference : array_like, float, shape (M, D)
    k : int, 1 <= k <= M (M - 1 with ``exclude_self``)
    exclude_self : bool, default False
        Query row ``i`` is reference row ``i`` (the query set is the first n rows of the
        reference set, as PML's ``ref_includes_query``): reference ``i`` is never returned
        for query ``i``. Other rows equal to the query are still returned.
    metric : {"euclidean", "sqeuclidean", "cosine", "inner_product"}, default "euclidean"
        ``"euclidean"``: ``||q - r||``; ``"sqeuclidean"``: ``||q - r||^2``; ``"cosine"``: the
        cosine distance ``1 - q.r / (||q|| ||r||)`` (an all-zero row has similarity 0 to
        everything, as scikit-learn's ``cosine_distances``); ``"inner_product"``: the
        similarity ``q.r``, largest first (the returned values are the inner products).
    tile : int, default 4096
        Maximum rows of the query and of the reference in one score block; a block also holds
        at most 2**22 scores, so scratch memory stays below ~60 MB whatever n and M are.
    backend : {"mantissa", "numpy"}, default "mantissa"
        Block products by the engine's SGEMM or by numpy's matmul.

    Returns
    -------
    indices : ndarray, int64, shape (n, k)
        Reference row indices, nearest first; equal scores are ordered by lower index.
    distances : ndarray, float32, shape (n, k)
        The metric's values for those neighbours: non-decreasing along each row (non-increasing
        for ``"inner_product"``).

    Raises
    ------
    ValueError
        Wrong ndim, NaN/Inf, mismatched D, D == 0, ``k`` larger than the available
        references (message names ``k``), ``exclude_self`` with fewer reference than query
        rows, unknown ``metric`` or ``backend``, or values so large that scores overflow float32.
    TypeError
        Non-numeric arrays, non-integer ``k`` or ``tile``, non-bool ``exclude_self``.

    Notes
    -----
    Scores are float32 and computed by GEMM, as in faiss's ``IndexFlatL2``: for the Euclidean
    metrics ``|r|^2 - 2 q.r`` is ranked and ``|q|^2`` added to the selected ones (clamped at 0),
    so a distance carries an absolute error of about ``1e-7 * (|q|^2 + |r|^2)`` (a point's
    distance to itself may come out slightly above 0) and two references whose true distances
    differ by less than that may swap. Exact ties (e.g. duplicate rows) are ordered by index.
    """
    q, r, k, exclude_self, tile, backend_mod = _check_knn_args(
        query, reference, k, exclude_self, metric, tile, backend)
    n, M = q.shape[0], r.shape[0]
    if n == 0:
        return np.empty((0, k), dtype=np.int64), np.empty((0, k), dtype=np.float32)

    euclid = metric in ("euclidean", "sqeuclidean")
    if metric == "cosine":
        q = _unit_rows(q)
        r = _unit_rows(r)
    # overflow guard: every score is bounded by (|q| + |r|)^2
    qmax = float(np.sqrt(np.max(np.einsum("ij,ij->i", q, q, dtype=np.float64))))
    rmax = float(np.sqrt(np.max(np.einsum("ij,ij->i", r, r, dtype=np.float64))))
    bound = (qmax + rmax) ** 2 if euclid else qmax * rmax
    if not np.isfinite(bound) or bound > _F32_MAX / 4:
        raise ValueError("query/reference values are too large: their distances overflow float32; rescale them")
    if euclid:
        rn = np.einsum("ij,ij->i", r, r)

    br_max = min(M, tile)
    bq_max = min(n, tile, max(1, _BLOCK_ELEMS // br_max))
    buf = np.empty(bq_max * br_max, dtype=np.float32)
    indices = np.empty((n, k), dtype=np.int64)
    scores = np.empty((n, k), dtype=np.float32)
    for q0 in range(0, n, bq_max):
        q1 = min(n, q0 + bq_max)
        bq = q1 - q0
        best_v = best_i = None
        for r0 in range(0, M, br_max):
            r1 = min(M, r0 + br_max)
            br = r1 - r0
            S = buf[:bq * br].reshape(bq, br)
            if euclid:  # |r|^2 - 2 q.r  (|q|^2 is constant along a row)
                S[...] = rn[None, r0:r1]
                _gemm_nt(backend_mod, q[q0:q1], r[r0:r1], S, -2.0, 1.0)
            else:  # -q.r
                _gemm_nt(backend_mod, q[q0:q1], r[r0:r1], S, -1.0, 0.0)
            if exclude_self:
                lo, hi = max(q0, r0), min(q1, r1)
                if lo < hi:
                    d = np.arange(lo, hi)
                    S[d - q0, d - r0] = np.inf
            vals, idx = _topk_sorted(S, min(k, br), r0)
            if best_v is None:
                best_v, best_i = vals, idx
            else:
                # earlier blocks hold lower indices, so a stable sort keeps ties by index
                cv = np.concatenate([best_v, vals], axis=1)
                ci = np.concatenate([best_i, idx], axis=1)
                order = np.argsort(cv, axis=1, kind="stable")[:, :k]
                best_v = np.take_along_axis(cv, order, axis=1)
                best_i = np.take_along_axis(ci, order, axis=1)
        indices[q0:q1] = best_i
        scores[q0:q1] = best_v

    if euclid:
        scores += np.einsum("ij,ij->i", q, q)[:, None]
        np.maximum(scores, 0.0, out=scores)
        if metric == "euclidean":
            np.sqrt(scores, out=scores)
    elif metric == "cosine":
        scores += np.float32(1.0)
    else:
        np.negative(scores, out=scores)
    return indices, scores


def _unit_rows(x):
    norms = np.sqrt(np.einsum("ij,ij->i", x, x, dtype=np.float64))
    norms[norms == 0.0] = 1.0
    return np.ascontiguousarray(x / norms[:, None], dtype=np.float32)
