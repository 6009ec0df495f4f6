"""Exact k nearest rows of a dask-array gallery by a streaming, bounded top-k merge.

A fold carries one running top k per query, ``(indices (nq, k) int64, distances (nq, k)
float32)``, through a chain of gallery blocks: each step searches its block by slices of
``_SLICE`` rows (``evaluation.knn`` on each slice) and merges every slice's candidates into the
running top k at once, so a step holds the accumulator, one slice's candidates and one float32
slice, never a whole block's copy or the candidates of several blocks. The chains (one per worker
thread, each on the blocks of one worker when the gallery is persisted) are merged by a tree of
``split_every`` top-k lists per task. Every merge orders by (distance, global row): the result is
the single-process one whatever the chunking.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_int
from ..engine import all_finite
from ..evaluation.knn import knn as _exact_knn
from ._common import (
    array_holders,
    check_gallery,
    check_queries,
    dask_modules,
    get_client,
    lanes,
    offsets,
    visit_order,
)

__all__ = ["knn", "KNN_METRICS"]

KNN_METRICS = ("euclidean", "sqeuclidean", "cosine")
_SLICE = 65536  # gallery rows searched at a time inside a block (16 MB of float32 at D = 64)
_NONE = np.iinfo(np.int64).max  # index of a dropped candidate (the query's own row)


def merge_topk(parts: list[Any], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k lists ``(idx, dist)`` of the same queries (None skipped) -> the best k by
    (distance, global index)."""
    parts = [p for p in parts if p is not None]
    idx = np.concatenate([p[0] for p in parts], axis=1)
    dist = np.concatenate([p[1] for p in parts], axis=1)
    order = np.lexsort((idx, dist), axis=1)[:, :k]
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(dist, order, axis=1)


def fold_block(acc, block, Q, k, offset, metric, q0=-1, name="gallery"):
    """``acc`` (or None) merged with the k nearest rows of ``block`` (global rows ``offset``
    on) for the queries ``Q`` (nq, D) float32, slice by slice.

    ``q0 >= 0``: ``Q`` is the gallery's rows ``q0 .. q0 + nq - 1``, and a query's own row is
    never its neighbour (PML's ``ref_includes_query``); other rows equal to it still are.
    """
    Q = np.asarray(Q, dtype=np.float32)
    nq = Q.shape[0]
    for s in range(0, block.shape[0], _SLICE):
        part = np.ascontiguousarray(block[s : s + _SLICE], dtype=np.float32)
        if not all_finite(part):  # here, to name the rows; no boolean temporary
            raise ValueError(
                f"{name} contains NaN or Inf (in rows {offset + s} to {offset + s + len(part) - 1})"
            )
        g0 = offset + s
        own = 0 <= q0 < g0 + part.shape[0] and g0 < q0 + nq
        kk = min(k + int(own), part.shape[0])
        idx, dist = _exact_knn(Q, part, kk, metric=metric)
        idx += g0
        if own:
            mine = idx == np.arange(q0, q0 + nq, dtype=np.int64)[:, None]
            idx[mine] = _NONE
            dist[mine] = np.inf
        acc = merge_topk([acc, (idx, dist)], k)
    return acc


def tree(parts: list[Any], k: int, split_every: int) -> Any:
    """Delayed top-k lists -> one delayed top-k list, ``split_every`` lists per merge task."""
    dask, _, _ = dask_modules()
    while len(parts) > 1:
        parts = [
            dask.delayed(merge_topk)(parts[i : i + split_every], k) for i in range(0, len(parts), split_every)
        ]
    return parts[0]


def chains(step, sources: list[Any], order_lanes: list[list[int]], k: int, split_every: int, args_of) -> Any:
    """``acc = step(acc, sources[i], *args_of(i))`` along each lane (from ``acc = None``), the
    lanes' results merged by ``tree``: one delayed top-k list."""
    dask, _, _ = dask_modules()
    ends = []
    for lane in order_lanes:
        acc = None
        for i in lane:
            acc = dask.delayed(step)(acc, sources[i], *args_of(i))
        ends.append(acc)
    return tree(ends, k, split_every)


def gallery_neighbors(
    client: Any,
    gallery: Any,
    query_blocks: list[Any],
    k: int,
    metric: str,
    split_every: int,
    own_rows: bool,
    name: str = "gallery",
) -> list[Any]:
    """Futures of the top-k lists of each query block against the whole gallery.

    ``query_blocks``: delayed objects or futures of float (nq_i, D) arrays; with ``own_rows``
    they are the gallery's own blocks (query block i is gallery block i, its rows excluded
    from their own neighbours). One chain per query block visits every gallery block, beginning
    with the query block's own (so on its worker, when the gallery is persisted); a single
    query block of other rows is folded along one chain per worker thread instead.
    """
    blocks = list(gallery.to_delayed().ravel())
    off = offsets(gallery.chunks[0])
    where = array_holders(client, gallery)
    graphs = []
    for qi, Q in enumerate(query_blocks):
        if len(query_blocks) == 1 and not own_rows:
            order_lanes = lanes(len(blocks), where, client.nthreads())
        else:
            start = qi if own_rows else qi * len(blocks) // len(query_blocks)  # spread the chains' starts
            order_lanes = [visit_order(len(blocks), where, start)]
        q0 = int(off[qi]) if own_rows else -1

        def args_of(i, Q=Q, q0=q0):
            return (Q, k, int(off[i]), metric, q0, name)

        graphs.append(chains(fold_block, blocks, order_lanes, k, split_every, args_of))
    return client.compute(graphs)


def knn(
    queries: Any, gallery: Any, k: int, *, metric: str = "euclidean", split_every: int = 8, client: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest gallery rows of each query.

    Parameters
    ----------
    queries : array_like, float, (nq, D), in memory
        Sent once to every worker.
    gallery : dask array, float or int, (N, D), chunked along axis 0
        Persisted or lazy: a lazy gallery's blocks are computed, searched and released one at
        a time per worker thread.
    k : int, 1 <= k <= N
    metric : {"euclidean", "sqeuclidean", "cosine"}, default "euclidean"
        As ``evaluation.knn``.
    split_every : int >= 2, default 8
        Top-k lists merged per task when the chains are combined.
    client : distributed.Client, optional
        Default: the current client.

    Returns
    -------
    indices : ndarray, int64, (nq, k)
        Global gallery rows, nearest first; equal distances ordered by lower row.
    distances : ndarray, float32, (nq, k)
        Computed now; equal to ``evaluation.knn(queries, gallery.compute(), k, metric=metric)``.

    Memory: per worker thread, one gallery slice of 65,536 rows in float32, its candidates and
    one (nq, k) running top k; a lazy gallery adds the block being computed.

    Raises
    ------
    TypeError
        ``gallery`` not a dask array or not numeric; non-integer ``k`` or ``split_every``.
    ValueError
        ``gallery`` not 2-D, ``queries`` of another width or with NaN/Inf, ``k`` out of range,
        an unknown ``metric``, ``split_every < 2``; NaN/Inf in the gallery (raised by the
        worker that meets it, naming the rows).
    ImportError
        Without dask / distributed.
    """
    gallery = check_gallery(gallery)
    if metric not in KNN_METRICS:
        raise ValueError(f"metric must be one of {KNN_METRICS}, got {metric!r}")
    Q = check_queries(queries, gallery.shape[1])
    k = check_int(k, "k", minimum=1)
    if k > gallery.shape[0]:
        raise ValueError(f"k must be <= the number of gallery rows ({gallery.shape[0]}), got k={k}")
    split_every = check_int(split_every, "split_every", minimum=2)
    c = get_client(client)
    qf = c.scatter(Q, broadcast=True, hash=False)
    (fut,) = gallery_neighbors(c, gallery, [qf], k, metric, split_every, own_rows=False)
    return fut.result()
