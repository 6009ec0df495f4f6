"""``ShardedIndex``: one ``Index`` per block of a dask-array gallery, kept on the workers, and
``build_index``: embed a dask array of images into one."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._typing import ArrayLike, Float32Array, Int64Array
from .._validation import check_int
from ..embedder import Embedder
from ..index import DTYPES, METRICS, Index
from ._common import (
    array_holders,
    check_gallery,
    check_queries,
    dask_modules,
    get_client,
    holders,
    lanes,
    offsets,
)
from ._embed import embed
from ._knn import chains, merge_topk

__all__ = ["ShardedIndex", "build_index"]


def _build_shard(block, metric, dtype):
    # the shard's own ids 0..n-1 (no ids= argument: nothing to check for duplicates); a search
    # adds the block's offset
    block = np.asarray(block, dtype=np.float32)
    return Index(block.shape[1], metric=metric, dtype=dtype).add(block)


def _fold_shard(acc, ix, Q, k, offset):
    kk = min(k, len(ix))
    if kk == 0:
        return acc
    ids, dist = ix.search(Q, kk)
    return merge_topk([acc, (ids + offset, dist)], k)


class ShardedIndex:
    """One ``Index`` per block of a gallery, built and held on the workers.

    Parameters
    ----------
    gallery : dask array, float, (N, D), chunked along axis 0
        E.g. ``embed``'s output. Each block is computed (or read, if persisted), added to its
        own ``Index`` on the worker that holds it, and released:
        build from the lazy array and the workers end up with the shards only (N x D values in
        ``dtype``, plus 8 bytes of id per row); a persisted gallery stays in memory beside its
        shards as long as it is referenced.
    metric : {"euclidean", "cosine"}, default "euclidean"
        As ``Index``.
    dtype : {"float32", "float16", "bfloat16", "int8"}, default "float32"
        The shards' storage, as ``Index``.
    client : distributed.Client, optional
        Default: the current client.

    Attributes
    ----------
    shards : list of distributed.Future
        One ``Index`` per gallery block, in block order; its ids are the block's rows
        (0 .. n_i - 1), ``search`` adds the block's first global row from ``offsets``.
    offsets : ndarray, int64, (len(shards) + 1,)
        Global row of each shard's first vector, then N.
    dim, n : int
        D and N.

    Raises
    ------
    TypeError
        ``gallery`` not a dask array or not numeric.
    ValueError
        ``gallery`` not 2-D, an unknown ``metric`` or ``dtype``.
    ImportError
        Without dask / distributed.
    """

    def __init__(
        self, gallery: Any, metric: str = "euclidean", dtype: str = "float32", client: Any = None
    ) -> None:
        dask, _, _ = dask_modules()
        gallery = check_gallery(gallery)
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
        self.client = get_client(client)
        self.dim, self.n = int(gallery.shape[1]), int(gallery.shape[0])
        self.metric, self.dtype = metric, dtype
        self.offsets = offsets(gallery.chunks[0])
        shards = [dask.delayed(_build_shard)(b, metric, dtype) for b in gallery.to_delayed().ravel()]
        # each shard where its block is, or, for a lazy gallery, the same number of consecutive
        # blocks on every worker (a search runs each worker's shards one after the other)
        where = array_holders(self.client, gallery)
        if where is None:
            workers = sorted(self.client.nthreads())
            where = [workers[i * len(workers) // len(shards)] for i in range(len(shards))]
        # futures of the shards only: the blocks they were built from are released once added
        self.shards = [
            self.client.compute(s, workers=[w], allow_other_workers=True) for s, w in zip(shards, where)
        ]

    def __len__(self) -> int:
        return self.n

    def search(self, queries: ArrayLike, k: int, split_every: int = 8) -> tuple[Int64Array, Float32Array]:
        """The ``k`` nearest stored vectors of each query, over every shard.

        Parameters
        ----------
        queries : array_like, float, (nq, D), finite
        k : int, 1 <= k <= N
        split_every : int >= 2, default 8
            Top-k lists merged per task when the per-thread chains are combined.

        Returns
        -------
        ids : ndarray, int64, (nq, k)
            Global gallery rows, nearest first; equal distances ordered by lower row.
        distances : ndarray, float32, (nq, k)
            As ``Index.search`` on one index of the whole gallery (exact on the stored vectors).

        Each worker thread folds its shards' ``Index.search`` results into one running top k.
        Raises ValueError (``queries`` of another width or with NaN/Inf, ``k`` out of range,
        ``split_every < 2``) / TypeError.
        """
        Q = check_queries(queries, self.dim)
        k = check_int(k, "k", minimum=1)
        if k > self.n:
            raise ValueError(f"k must be <= the number of indexed vectors ({self.n}), got k={k}")
        split_every = check_int(split_every, "split_every", minimum=2)
        qf = self.client.scatter(Q, broadcast=True, hash=False)
        order = lanes(len(self.shards), holders(self.client, self.shards), self.client.nthreads())
        graph = chains(
            _fold_shard, self.shards, order, k, split_every, lambda i: (qf, k, int(self.offsets[i]))
        )
        return self.client.compute(graph).result()


def build_index(
    embedder: Embedder,
    images: Any,
    metric: str = "euclidean",
    dtype: str = "float32",
    client: Any = None,
    *,
    batch_size: int = 256,
    normalize: bool = True,
) -> ShardedIndex:
    """``ShardedIndex(embed(embedder, images, ...), metric, dtype)``: the images embedded on the
    workers, block by block, each block's embeddings added to its shard and released.

    Parameters
    ----------
    embedder : Embedder, fitted
    images : dask array, (n, *embedder.input_shape_), chunked along axis 0
        One shard per chunk.
    metric, dtype, client
        As ``ShardedIndex``.
    batch_size : int >= 1, default 256
    normalize : bool, default True
        As ``embed`` (``Embedder.embed``).

    Returns
    -------
    ShardedIndex
        Of n vectors of ``embedder.embed_dim_`` dimensions, ids the image rows.

    Raises the errors of ``embed`` and ``ShardedIndex``: TypeError for non-dask ``images``,
    ValueError for images of another shape or an unknown ``metric`` / ``dtype``.
    """
    if metric not in METRICS:  # before the model is sent to the workers
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    Z = embed(embedder, images, batch_size=batch_size, normalize=normalize, client=client)
    return ShardedIndex(Z, metric=metric, dtype=dtype, client=client)
