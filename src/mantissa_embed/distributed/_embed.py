"""Embedding and exact search beyond one process, on Dask (``pip install ".[dask]"``).

- ``embed``: a dask array of images -> a dask array of embeddings. The Embedder travels as
  its saved file's bytes, scattered once to every worker (``broadcast=True``), and is loaded
  once per worker process (cached by the bytes' digest), not once per chunk.
- ``knn``: the exact k nearest rows of a dask-array gallery for in-memory queries: each
  chunk's exact top k (``mantissa_embed.evaluation.knn``) on the workers, then a tree
  merge (groups of ``split_every``) by distance, ties to the lower global row: the
  single-process result.
- ``ShardedIndex``: one ``Index`` per chunk of a dask-array
  gallery, built and kept on the workers; ``ShardedIndex.search`` merges like ``knn``.

Every function takes ``client=None`` (the current ``distributed`` client) and raises ImportError
without dask / distributed, TypeError for a non-dask gallery.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from typing import Any

import numpy as np

from ._typing import ArrayLike, Float32Array, Int64Array
from ._validation import check_array, check_int
from .embedder import Embedder
from .evaluation.knn import knn as _exact_knn
from .index import DTYPES, METRICS, Index

__all__ = ["embed", "knn", "ShardedIndex"]

_MODELS: dict[str, Embedder] = {}  # per worker process: digest -> Embedder
_MODELS_LOCK = threading.Lock()


def _dask():
    try:
        import dask
        import dask.array as da

        from distributed import get_client
    except ImportError as e:  # pragma: no cover - exercised without the extra
        raise ImportError(
            'mantissa_embed.distributed needs dask and distributed: pip install ".[dask]"'
        ) from e
    return dask, da, get_client


def _client(client):
    _, _, get_client = _dask()
    return get_client() if client is None else client


def _model_bytes(embedder):
    fd, path = tempfile.mkstemp(suffix=".npz")
    os.close(fd)
    try:
        embedder.save(path)
        with open(path, "rb") as f:
            return f.read()
    finally:
        os.unlink(path)


def _worker_model(digest, blob):
    """The Embedder of ``blob`` in this process, loaded at its first use."""
    with _MODELS_LOCK:
        emb = _MODELS.get(digest)
        if emb is None:
            fd, path = tempfile.mkstemp(suffix=".npz")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(blob)
                emb = Embedder.load(path)
            finally:
                os.unlink(path)
            _MODELS[digest] = emb
        return emb


def _embed_block(block, blob, digest, batch_size, normalize):
    emb = _worker_model(digest, blob)
    return emb.embed(np.asarray(block), batch_size=batch_size, normalize=normalize)


def embed(
    embedder: Embedder, images: Any, batch_size: int = 256, normalize: bool = True, client: Any = None
) -> Any:
    """``embedder.embed`` over a dask array of images ``(n, C, H, W)`` (chunked along axis 0;
    other axes are made single chunks): a lazy float32 dask array ``(n, D)``, chunked as the
    images. The model is sent to each worker once."""
    _, da, _ = _dask()
    if not isinstance(images, da.Array):
        raise TypeError(f"images must be a dask array, got {type(images).__name__}")
    embedder._check_fitted()
    shape = embedder.input_shape_
    assert shape is not None  # set by fit / load
    if images.ndim != len(shape) + 1 or tuple(images.shape[1:]) != shape:
        raise ValueError(f"images must have shape (n, {', '.join(map(str, shape))}), got {images.shape}")
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    c = _client(client)
    blob = _model_bytes(embedder)
    digest = hashlib.sha256(blob).hexdigest()
    fut = c.scatter(blob, broadcast=True, hash=False)
    images = images.rechunk({i: -1 for i in range(1, images.ndim)})
    drop = list(range(2, images.ndim))
    return images.map_blocks(
        _embed_block,
        fut,
        digest,
        batch_size,
        bool(normalize),
        dtype=np.float32,
        drop_axis=drop,
        chunks=(images.chunks[0], (embedder.embed_dim_,)),
    )


def _chunk_knn(block, Q, k, offset, metric):
    block = np.asarray(block, dtype=np.float32)
    kk = min(k, block.shape[0])
    if kk == 0:
        return np.empty((Q.shape[0], 0), np.int64), np.empty((Q.shape[0], 0), np.float32)
    idx, dist = _exact_knn(Q, block, kk, metric=metric)
    return idx + offset, dist


def _merge(parts, k):
    """Candidates (idx, dist) of several chunks -> the best k by (distance, global index)."""
    idx = np.concatenate([p[0] for p in parts], axis=1)
    dist = np.concatenate([p[1] for p in parts], axis=1)
    order = np.lexsort((idx, dist), axis=1)[:, :k]
    rows = np.arange(idx.shape[0])[:, None]
    return idx[rows, order], dist[rows, order]


def _tree(parts, k, split_every):
    import dask

    while len(parts) > 1:
        parts = [
            dask.delayed(_merge)(parts[i : i + split_every], k) for i in range(0, len(parts), split_every)
        ]
    return parts[0]


def _check_queries(queries, dim):
    Q = check_array(queries, "queries", ndim=2)
    if Q.shape[1] != dim:
        raise ValueError(f"queries must have {dim} columns (the gallery's), got shape {Q.shape}")
    return np.ascontiguousarray(Q, dtype=np.float32)


def knn(
    queries: Any, gallery: Any, k: int, *, metric: str = "euclidean", split_every: int = 8, client: Any = None
) -> tuple[Any, Any]:
    """Exact k nearest gallery rows of each query.

    Parameters
    ----------
    queries : array_like, float, (nq, D), in memory
    gallery : dask array, float, (N, D), chunked along axis 0
    k : int, 1 <= k <= N
    metric : {"euclidean", "sqeuclidean", "cosine"}, default "euclidean"
    split_every : int >= 2, default 8
        Chunks' candidates merged per task of the tree.

    Returns ``(indices (nq, k) int64, distances (nq, k) float32)``, computed now, equal to
    ``evaluation.knn(queries, gallery.compute(), k, metric=metric)``.
    """
    dask, da, _ = _dask()
    if not isinstance(gallery, da.Array):
        raise TypeError(f"gallery must be a dask array, got {type(gallery).__name__}")
    if gallery.ndim != 2:
        raise ValueError(f"gallery must be 2-D, got shape {gallery.shape}")
    if metric not in ("euclidean", "sqeuclidean", "cosine"):
        raise ValueError(f"metric must be 'euclidean', 'sqeuclidean' or 'cosine', got {metric!r}")
    Q = _check_queries(queries, gallery.shape[1])
    k = check_int(k, "k", minimum=1)
    if k > gallery.shape[0]:
        raise ValueError(f"k must be <= the number of gallery rows ({gallery.shape[0]}), got k={k}")
    split_every = check_int(split_every, "split_every", minimum=2)
    c = _client(client)
    gallery = gallery.rechunk({1: -1})
    qf = c.scatter(Q, broadcast=True, hash=False)
    offsets = np.concatenate([[0], np.cumsum(gallery.chunks[0])])
    blocks = gallery.to_delayed().ravel()
    parts = [dask.delayed(_chunk_knn)(b, qf, k, int(offsets[i]), metric) for i, b in enumerate(blocks)]
    return c.compute(_tree(parts, k, split_every)).result()


def _build_shard(block, offset, metric, dtype):
    block = np.asarray(block, dtype=np.float32)
    return Index(block.shape[1], metric=metric, dtype=dtype).add(
        block, ids=np.arange(offset, offset + block.shape[0], dtype=np.int64)
    )


def _search_shard(ix, Q, k):
    kk = min(k, len(ix))
    if kk == 0:
        return np.empty((Q.shape[0], 0), np.int64), np.empty((Q.shape[0], 0), np.float32)
    return ix.search(Q, kk)


class ShardedIndex:
    """One ``Index`` per chunk of a gallery, held on the workers.

    ``ShardedIndex(gallery, metric="euclidean", dtype="float32", client=None)``: ``gallery`` is a
    dask array (N, D) chunked along axis 0 (e.g. ``embed``'s output); the shards are built
    and persisted on the workers (the vectors never gather in one process). Ids are the global
    row numbers. ``search`` is exact on the stored vectors, as ``Index.search``.
    """

    def __init__(
        self, gallery: Any, metric: str = "euclidean", dtype: str = "float32", client: Any = None
    ) -> None:
        dask, da, _ = _dask()
        if not isinstance(gallery, da.Array) or gallery.ndim != 2:
            raise TypeError("gallery must be a 2-D dask array")
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
        self.client = _client(client)
        gallery = gallery.rechunk({1: -1})
        self.dim, self.n, self.metric, self.dtype = (
            int(gallery.shape[1]),
            int(gallery.shape[0]),
            metric,
            dtype,
        )
        offsets = np.concatenate([[0], np.cumsum(gallery.chunks[0])])
        shards = [
            dask.delayed(_build_shard)(b, int(offsets[i]), metric, dtype)
            for i, b in enumerate(gallery.to_delayed().ravel())
        ]
        self.shards = self.client.compute(shards)  # futures: the Indexes stay on the workers

    def __len__(self) -> int:
        return self.n

    def search(self, queries: ArrayLike, k: int, split_every: int = 8) -> tuple[Int64Array, Float32Array]:
        """``(ids (nq, k) int64, distances (nq, k) float32)``, nearest first."""
        import dask

        Q = _check_queries(queries, self.dim)
        k = check_int(k, "k", minimum=1)
        if k > self.n:
            raise ValueError(f"k must be <= the number of indexed vectors ({self.n}), got k={k}")
        split_every = check_int(split_every, "split_every", minimum=2)
        qf = self.client.scatter(Q, broadcast=True, hash=False)
        parts = [dask.delayed(_search_shard)(s, qf, k) for s in self.shards]
        return self.client.compute(_tree(parts, k, split_every)).result()
