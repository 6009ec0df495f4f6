"""``embed``: an Embedder over a dask array of images, the model sent to each worker once."""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from typing import Any

import numpy as np

from .._validation import check_int
from ..embedder import Embedder
from ._common import dask_modules, get_client

__all__ = ["embed"]

_MODELS: dict[str, Embedder] = {}  # per worker process: digest -> Embedder
_MODELS_LOCK = threading.Lock()


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
    """``embedder.embed`` over a dask array of images, on the workers.

    Parameters
    ----------
    embedder : Embedder, fitted
        Sent to each worker once (its saved file's bytes, scattered with ``broadcast=True``) and
        loaded once per worker process.
    images : dask array, (n, *embedder.input_shape_), chunked along axis 0
        The other axes are made single chunks.
    batch_size : int >= 1, default 256
    normalize : bool, default True
        As ``Embedder.embed``.
    client : distributed.Client, optional
        Default: the current client.

    Returns
    -------
    dask array, float32, (n, embedder.embed_dim_)
        Lazy, chunked along axis 0 as ``images``; each block equals ``embedder.embed`` of the
        images block (to float32 rounding: the worker's engine threads may differ).

    Raises
    ------
    TypeError
        ``images`` not a dask array; non-integer ``batch_size``.
    ValueError
        ``images`` of another shape, ``batch_size < 1``.
    RuntimeError
        An unfitted ``embedder``.
    ImportError
        Without dask / distributed.
    """
    _, da, _ = dask_modules()
    if not isinstance(images, da.Array):
        raise TypeError(f"images must be a dask array, got {type(images).__name__}")
    embedder._check_fitted()
    shape = embedder.input_shape_
    assert shape is not None  # set by fit / load
    if images.ndim != len(shape) + 1 or tuple(images.shape[1:]) != shape:
        raise ValueError(f"images must have shape (n, {', '.join(map(str, shape))}), got {images.shape}")
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    c = get_client(client)
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
