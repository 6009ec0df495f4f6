"""A faiss k-NN backend with the signature of ``mantissa_embed.evaluation.knn.knn``.

Install with ``pip install mantissa-embed[faiss]`` (``faiss-cpu``). Modelled on
pytorch-metric-learning's ``utils.inference.FaissKNN`` (same constructor arguments and
``train`` / ``add`` / ``save`` / ``load`` / ``reset`` methods), but called like our ``knn``:
``FaissKNN()(query, reference, k, exclude_self=..., metric=...)`` -> ``(indices, distances)``,
so it plugs into ``knn_func`` arguments. With an approximate index (``index_init_fn`` building,
e.g., an IVF index trained by ``FaissKNN.train``), it searches galleries that the exact
search would take too long on.

Reference: Johnson, Douze & Jegou 2019, "Billion-scale similarity search with GPUs",
IEEE Trans. Big Data (faiss).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._typing import ArrayLike
from .._validation import check_array, check_bool, check_int
from .knn import METRICS, _unit_rows

__all__ = ["FaissKNN"]


def _import_faiss():
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("FaissKNN needs faiss: pip install 'mantissa-embed[faiss]' (or faiss-cpu)") from exc
    return faiss


class FaissKNN:
    """k-NN through a faiss index, callable like ``knn``.

    Parameters
    ----------
    index_init_fn : callable or None, default None
        ``index_init_fn(D)`` returns an empty faiss index for D-dimensional vectors. None:
        ``faiss.IndexFlatL2`` for the Euclidean metrics, ``faiss.IndexFlatIP`` for
        ``"inner_product"`` and ``"cosine"`` (exact search, as PML's default ``IndexFlatL2``).
        An index whose ``metric_type`` is ``METRIC_L2`` serves the Euclidean metrics, one with
        ``METRIC_INNER_PRODUCT`` serves ``"inner_product"`` and ``"cosine"``.
    reset_before : bool, default True
        Build a new index from ``reference`` at each call (PML's meaning). With False the
        index filled by ``train`` / ``add`` (or ``load``) is searched, and
        ``reference`` may be None (if given, it is added to the index first, as PML does).
    reset_after : bool, default True
        Drop the index after each call.

    Call
    ----
    ``knn_func(query, reference, k, *, exclude_self=False, metric="euclidean", tile=4096,
    backend="mantissa")`` -> ``(indices int64 (n, k), distances float32 (n, k))``, nearest
    first. ``tile`` and ``backend`` are accepted for signature compatibility and ignored.
    ``exclude_self``: query ``i`` is reference ``i``; ``k + 1`` neighbours are searched and
    reference ``i`` removed from row ``i`` (or the last one when ``i`` is not among them),
    exactly as PML's ``return_results``. ``"euclidean"`` is the square root of faiss's squared
    L2; ``"cosine"`` normalizes the rows and returns ``1 - q.r``. Values are faiss's float32
    GEMM values (not recomputed: ``knn`` recomputes them exactly); faiss orders equal
    distances by lower index; an approximate index may return index -1 when it finds fewer
    than k neighbours.

    Raises
    ------
    ImportError   faiss is not installed (at construction).
    ValueError    bad shapes, NaN/Inf, mismatched D, k too large, unknown metric, an index whose
                  metric does not serve ``metric``, no index with ``reset_before=False``.
    TypeError     non-numeric arrays, non-int k, non-bool flags, non-callable index_init_fn.
    """

    def __init__(self, index_init_fn=None, reset_before: bool = True, reset_after: bool = True) -> None:
        self._faiss = _import_faiss()
        if index_init_fn is not None and not callable(index_init_fn):
            raise TypeError(f"index_init_fn must be callable or None, got {type(index_init_fn).__name__}")
        self.index_init_fn = index_init_fn
        self.reset_before = check_bool(reset_before, "reset_before")
        self.reset_after = check_bool(reset_after, "reset_after")
        self.index: Any = None

    # -- index management (PML's FaissKNN methods) --------------------------------------
    def _new_index(self, d, metric):
        if self.index_init_fn is not None:
            return self.index_init_fn(d)
        if metric in ("inner_product", "cosine"):
            return self._faiss.IndexFlatIP(d)
        return self._faiss.IndexFlatL2(d)

    def train(self, embeddings: ArrayLike, metric: str = "euclidean") -> None:
        """A new index for ``embeddings`` (n, D): trained on them (if it needs training) and
        filled with them."""
        x = self._prep(check_array(embeddings, "embeddings", ndim=2, allow_empty=False), metric)
        self.index = self._new_index(x.shape[1], metric)
        if not self.index.is_trained:
            self.index.train(x)
        self.index.add(x)

    def add(self, embeddings: ArrayLike, metric: str = "euclidean"):
        """Add ``embeddings`` (n, D) to the current index."""
        if self.index is None:
            raise ValueError("no index: call train() (or load()) first")
        self.index.add(self._prep(check_array(embeddings, "embeddings", ndim=2), metric))

    def save(self, filename):
        """Write the index with ``faiss.write_index``."""
        if self.index is None:
            raise ValueError("no index to save")
        self._faiss.write_index(self.index, str(filename))

    def load(self, filename) -> None:
        """Read an index written by ``save``."""
        self.index = self._faiss.read_index(str(filename))

    def reset(self) -> None:
        """Drop the index."""
        self.index = None

    @staticmethod
    def _prep(x, metric):
        if metric == "cosine":
            return _unit_rows(x)
        return np.ascontiguousarray(x, dtype=np.float32)

    # -- search ------------------------------------------------------------------------
    def __call__(
        self,
        query: ArrayLike,
        reference: ArrayLike,
        k: int,
        *,
        exclude_self: bool = False,
        metric: str = "euclidean",
        tile=4096,
        backend: str = "mantissa",
    ):
        faiss = self._faiss
        q = check_array(query, "query", ndim=2)
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
        k = check_int(k, "k", minimum=1)
        check_bool(exclude_self, "exclude_self")
        r = None
        if reference is not None:
            r = check_array(reference, "reference", ndim=2)
            if q.shape[1] != r.shape[1]:
                raise ValueError(
                    f"query and reference must have the same number of columns, got {q.shape[1]} and {r.shape[1]}"
                )
        elif self.reset_before:
            raise ValueError("reference is required when reset_before=True")
        if q.shape[1] == 0:
            raise ValueError("query and reference must have at least one column (embedding dimension 0)")
        q = self._prep(q, metric)
        if self.reset_before:
            self.index = self._new_index(q.shape[1], metric)
        if self.index is None:
            raise ValueError("self.index is None: with reset_before=False call train() or load() first")
        index = self.index
        try:
            if index.d != q.shape[1]:
                raise ValueError(f"query has {q.shape[1]} columns but the index holds {index.d}-D vectors")
            euclid = metric in ("euclidean", "sqeuclidean")
            want = faiss.METRIC_L2 if euclid else faiss.METRIC_INNER_PRODUCT
            if index.metric_type != want:
                raise ValueError(
                    f"the index's metric (faiss metric_type {index.metric_type}) does not "
                    f"serve metric={metric!r}"
                )
            if r is not None:
                r = self._prep(r, metric)
                if not index.is_trained:
                    index.train(r)
                index.add(r)
            M = index.ntotal
            if exclude_self and q.shape[0] > M:
                raise ValueError(
                    f"exclude_self=True needs query row i to be reference row i, but query has "
                    f"{q.shape[0]} rows and reference only {M}"
                )
            avail = M - int(bool(exclude_self))
            if k > avail:
                raise ValueError(
                    f"k must be <= {avail} (the number of reference rows"
                    f"{', excluding self' if exclude_self else ''}), got k={k}"
                )
            n = q.shape[0]
            if n == 0:
                return np.empty((0, k), dtype=np.int64), np.empty((0, k), dtype=np.float32)
            kk = k + int(bool(exclude_self))
            D, ids = index.search(q, kk)
        finally:
            if self.reset_after:
                self.reset()
        D = np.asarray(D, dtype=np.float32)
        ids = np.asarray(ids, dtype=np.int64)
        if exclude_self:
            self_hit = ids == np.arange(n)[:, None]
            self_hit[~self_hit.any(axis=1), -1] = True
            ids = ids[~self_hit].reshape(n, k)
            D = D[~self_hit].reshape(n, k)
        if euclid:
            np.maximum(D, 0.0, out=D)
            if metric == "euclidean":
                np.sqrt(D, out=D)
        elif metric == "cosine":
            D = np.maximum(np.float32(1.0) - D, 0.0)
        return np.ascontiguousarray(ids), np.ascontiguousarray(D, dtype=np.float32)
