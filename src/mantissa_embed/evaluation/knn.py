"""Exact, tiled k-nearest-neighbour search over embeddings.

The query x reference score matrix is never materialized: the C engine (``engine.knn_search``,
``src/engine_c/knn.c``) ranks each reference tile by one SGEMM into a bounded per-query heap,
then recomputes the k values in double precision and re-sorts each row by (value, index).
``backend="numpy"`` runs the numpy twin (the same tiling with matmul and partial sorts).
"""

from __future__ import annotations

import numpy as np

from .._checks.distance import l2_normalize_rows, sq_norms64
from .._typing import ArrayLike, Float32Array, Int64Array
from .._validation import check_array, check_bool, check_int
from ..backend import BACKENDS, get_backend

__all__ = ["knn", "METRICS"]

METRICS = ("euclidean", "sqeuclidean", "cosine", "inner_product")
"""The values of ``knn``'s ``metric``."""

# rows of one float32 score block (one block per engine thread): 512 x 1024, 2 MB
_TILE_Q = 512
_TILE_R = 1024
_F32_MAX = float(np.finfo(np.float32).max)


def _check_knn_args(query, reference, k, exclude_self, metric, tile, backend):
    # finiteness is checked from the row norms in knn (no N x D boolean temporary)
    q = check_array(query, "query", ndim=2, finite=False)
    r = check_array(reference, "reference", ndim=2, finite=False)
    if q.shape[1] != r.shape[1]:
        raise ValueError(
            f"query and reference must have the same number of columns, got {q.shape[1]} and {r.shape[1]}"
        )
    if q.shape[1] == 0:
        raise ValueError("query and reference must have at least one column (embedding dimension 0)")
    k = check_int(k, "k", minimum=1)
    check_bool(exclude_self, "exclude_self")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    tile = check_int(tile, "tile", minimum=1)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be 'mantissa' or 'numpy', got {backend!r}")
    backend_mod = get_backend(backend)
    n, M = q.shape[0], r.shape[0]
    if exclude_self and n > M:
        raise ValueError(
            f"exclude_self=True needs query row i to be reference row i, but query has {n} rows "
            f"and reference only {M}"
        )
    avail = M - int(bool(exclude_self))
    if k > avail:
        what = "reference rows, excluding self" if exclude_self else "reference rows"
        raise ValueError(f"k must be <= {avail} (the number of {what}), got k={k}")
    return q, r, k, bool(exclude_self), tile, backend_mod


def knn(
    query: ArrayLike,
    reference: ArrayLike,
    k: int,
    *,
    exclude_self: bool = False,
    metric: str = "euclidean",
    tile: int = 4096,
    backend: str = "mantissa",
) -> tuple[Int64Array, Float32Array]:
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
        Maximum query and reference rows of one score block (at most 512 x 1024 scores per
        thread, plus M floats of reference norms).
    backend : {"mantissa", "numpy"}, default "mantissa"
        ``"mantissa"``: the C engine, GIL released, OpenMP over query blocks
        (``engine.set_num_threads``); ``"numpy"``: the numpy twin.

    Returns
    -------
    indices : ndarray, int64, shape (n, k)
        Reference row indices, nearest first; equal scores are ordered by lower index.
    distances : ndarray, float32, shape (n, k)
        The metric's values for those neighbours, recomputed from the vectors in float64
        (so a point's distance to its duplicate is exactly 0): non-decreasing along each row
        (non-increasing for ``"inner_product"``), cosine distances clamped to ``[0, 2]``.

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
    Candidates are ranked by float32 SGEMM scores (as faiss's ``IndexFlatL2``), so references
    whose distances differ by less than ~``1e-7 (|q|^2 + |r|^2)`` may come in either order; the
    returned values are recomputed in float64. See docs/evaluation.md.
    """
    q, r, k, exclude_self, tile, backend_mod = _check_knn_args(
        query, reference, k, exclude_self, metric, tile, backend
    )
    n, M = q.shape[0], r.shape[0]
    euclid = metric in ("euclidean", "sqeuclidean")
    # squared row norms in float64 (finite for every finite float32 row): NaN/Inf check and
    # overflow guard, every score is bounded by (|q| + |r|)^2
    qsq = sq_norms64(q, "query")
    rsq = sq_norms64(r, "reference")
    if n == 0:
        return np.empty((0, k), dtype=np.int64), np.empty((0, k), dtype=np.float32)
    if metric == "cosine":
        q = _unit_rows(q, qsq)
        r = _unit_rows(r, rsq)
        qsq = rsq = np.ones(1)
    qmax = float(np.sqrt(np.max(qsq)))
    rmax = float(np.sqrt(np.max(rsq)))
    bound = (qmax + rmax) ** 2 if euclid else qmax * rmax
    if not np.isfinite(bound) or bound > _F32_MAX / 4:
        raise ValueError(
            "query/reference values are too large: their distances overflow float32; rescale them"
        )
    if metric == "cosine" or metric == "inner_product":
        kmetric = "inner_product"
    else:
        kmetric = metric
    # query block per thread: small enough to give every engine thread a block (the split
    # depends on the shapes and the thread count only)
    tile_r = min(M, tile, _TILE_R)
    nthreads = backend_mod.get_num_threads()
    tile_q = min(tile, _TILE_Q, -(-n // nthreads))
    indices, values = backend_mod.knn_search(
        q, r, k, metric=kmetric, exclude_self=exclude_self, tile_q=tile_q, tile_r=tile_r
    )
    if metric == "cosine":
        np.subtract(np.float32(1.0), values, out=values)
        np.maximum(values, 0.0, out=values)
    return indices, values


_CHUNK_ROWS = 8192  # rows per float64 temporary of _unit_rows (bounded scratch)


def _unit_rows(x: np.ndarray, sq: np.ndarray | None = None) -> Float32Array:
    """Rows of finite x (n, D) float32 divided by their norm, float32: ``l2_normalize_rows`` with
    ``eps=0`` (zero rows stay 0) in float64, by chunks of rows (bounded scratch). ``sq``: the
    rows' squared norms (``sq_norms64``) when the caller has them; None computes them."""
    nrm = None if sq is None else np.sqrt(sq)
    out = np.empty(x.shape, dtype=np.float32)
    for s in range(0, x.shape[0], _CHUNK_ROWS):
        e = s + _CHUNK_ROWS
        rows = x[s:e].astype(np.float64)
        out[s:e] = l2_normalize_rows(rows, eps=0.0, norms=None if nrm is None else nrm[s:e])[0]
    return out
