"""Euclidean k nearest neighbours ranked by exactly computed distances (the search of
``Embedder.retrieve``).

``knn`` ranks candidates by float32 SGEMM scores
``|r|^2 - 2 q.r``, whose rounding error (up to ``gamma_D (|r|^2 + 2 |q| |r|)``, ``gamma_D ~ D
2^-24``) can exceed the gap between near-duplicate references, so its k may differ from a float64
brute force's. ``exact_knn`` asks it for ``2k + 16`` candidates, recomputes their squared
distances from float64 differences, and keeps a query's k best once they are certified: every
reference left out scores at least the largest candidate's score, so its exact distance is at
least ``max_candidate_d2 - 2 err``; when that exceeds the k-th exact distance no reference left
out can belong to the k. Rows not certified get ``16k + 128`` candidates, then (still not
certified: hundreds of near-ties) an exact float64 scan of the whole reference set in bounded
blocks. The result is that of a float64 brute force, ties ordered by lower index.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_array, check_int
from ..evaluation.knn import knn

__all__ = ["exact_knn"]

_U = 2.0**-24  # float32 unit roundoff
_TINY = 2.0**-100  # absolute slack for products that underflow float32
_BLOCK = 1 << 21  # float64 values of one difference block (16 MiB)


def _sq_dist(q, r, idx):
    """Squared distances (n, c) float64 from float64 differences between q (n, D) and the
    rows ``r[idx]`` (idx (n, c)), in blocks of at most _BLOCK values."""
    n, c = idx.shape
    D = q.shape[1]
    out = np.empty((n, c), dtype=np.float64)
    step = max(1, _BLOCK // max(1, c * D))
    for s in range(0, n, step):
        diff = r[idx[s : s + step]].astype(np.float64)
        diff -= q[s : s + step, None, :].astype(np.float64)
        np.einsum("bkd,bkd->bk", diff, diff, out=out[s : s + step])
    return out


def _rank(d2, idx, k):
    """Rows of (d2, idx) sorted by (d2, index), first k columns."""
    order = np.lexsort((idx, d2), axis=-1)[:, :k]
    return np.take_along_axis(d2, order, axis=1), np.take_along_axis(idx, order, axis=1)


def _score_error(q, r):
    """Per query row, a bound of the error of the float32 scores ``|r|^2 - 2 q.r`` of the
    candidate search (any summation order, FMA or not; Higham's gamma_{D+2}), times 2."""
    D = q.shape[1]
    gamma = (D + 2) * _U / (1.0 - (D + 2) * _U)
    qn = np.sqrt(np.einsum("ij,ij->i", q, q, dtype=np.float64))
    rmax = float(np.sqrt(np.einsum("ij,ij->i", r, r, dtype=np.float64).max(initial=0.0)))
    return 2.0 * gamma * (rmax * rmax + 2.0 * qn * rmax) + D * _TINY


def _candidates(q, r, k, kk, backend, err):
    """The k best by exact distance among each row's kk float32-ranked candidates, and which rows
    are certified (see the module docstring)."""
    idx, _ = knn(q, r, kk, metric="sqeuclidean", backend=backend)
    d2 = _sq_dist(q, r, idx)
    d2s, idxs = _rank(d2, idx, kk)
    top = d2s[:, -1]
    # certified: every reference left out is farther than the k-th (1e-12: float64 rounding)
    ok = (kk == r.shape[0]) | (top - 2.0 * err - 1e-12 * top > d2s[:, k - 1])
    return d2s[:, :k].copy(), idxs[:, :k].copy(), ok


def _scan(q, r, k):
    """Exact float64 brute force of q (n, D) against every row of r: 64 query rows at a time,
    reference blocks of at most _BLOCK difference values."""
    M, D = r.shape
    out_d = np.empty((q.shape[0], k), dtype=np.float64)
    out_i = np.empty((q.shape[0], k), dtype=np.int64)
    for s in range(0, q.shape[0], 64):
        qb = q[s : s + 64]
        best_d, best_i = np.empty((qb.shape[0], 0)), np.empty((qb.shape[0], 0), dtype=np.int64)
        step = max(k, _BLOCK // (qb.shape[0] * D))
        for c in range(0, M, step):
            cols = np.ascontiguousarray(
                np.broadcast_to(
                    np.arange(c, min(M, c + step), dtype=np.int64), (qb.shape[0], min(M, c + step) - c)
                )
            )
            best_d, best_i = _rank(
                np.concatenate([best_d, _sq_dist(qb, r, cols)], axis=1),
                np.concatenate([best_i, cols], axis=1),
                k,
            )
        out_d[s : s + 64], out_i[s : s + 64] = best_d, best_i
    return out_d, out_i


def exact_knn(query, reference, k, backend="mantissa"):
    """The ``k`` nearest reference rows of every query row by Euclidean distance, ranked by
    distances computed exactly (float64 differences), as a float64 brute force ranks them.

    Parameters
    ----------
    query : array_like, float, shape (n, D)
    reference : array_like, float, shape (M, D)
    k : int, 1 <= k <= M
    backend : {"mantissa", "numpy"}, default "mantissa"
        The backend of the candidate search (``knn``).

    Returns
    -------
    indices : ndarray, int64, shape (n, k)
        Nearest first; equal float64 distances ordered by lower index.
    distances : ndarray, float32, shape (n, k)
        The Euclidean distances (float64, rounded once to float32).

    Raises
    ------
    ValueError / TypeError
        As ``knn`` (shapes, NaN/Inf, ``k``, values whose
        distances overflow float32), naming ``query`` / ``reference``.
    """
    q = check_array(query, "query", ndim=2, finite=False)  # finiteness: knn checks it
    r = check_array(reference, "reference", ndim=2, finite=False)
    k = check_int(k, "k", minimum=1)
    M = r.shape[0]
    err = _score_error(q, r)
    d2, idx, ok = _candidates(q, r, k, min(M, 2 * k + 16) if k <= M else k, backend, err)
    todo = np.flatnonzero(~ok)
    if todo.size:
        d2[todo], idx[todo], ok = _candidates(q[todo], r, k, min(M, 16 * k + 128), backend, err[todo])
        todo = todo[~ok]
    if todo.size:
        d2[todo], idx[todo] = _scan(q[todo], r, k)
    return idx, np.sqrt(d2).astype(np.float32)
