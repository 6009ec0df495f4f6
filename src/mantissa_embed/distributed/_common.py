"""What the distributed modules share: the optional imports, the client, the query check, and
the order in which a fold visits the blocks of a gallery (grouped by the worker that holds them)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_array


def dask_modules():
    """``(dask, dask.array, distributed.get_client)``; ImportError without the dask extra."""
    try:
        import dask
        import dask.array as da

        from distributed import get_client
    except ImportError as e:  # pragma: no cover - exercised without the extra
        raise ImportError(
            'mantissa_embed.distributed needs dask and distributed: pip install ".[dask]"'
        ) from e
    return dask, da, get_client


def get_client(client: Any) -> Any:
    """``client``, or the current ``distributed`` client when None."""
    _, _, current = dask_modules()
    return current() if client is None else client


def check_queries(queries: Any, dim: int, name: str = "queries") -> np.ndarray:
    """In-memory queries (nq, dim) as C-contiguous float32; ValueError naming ``name``."""
    Q = check_array(queries, name, ndim=2)
    if Q.shape[1] != dim:
        raise ValueError(f"{name} must have {dim} columns (the gallery's), got shape {Q.shape}")
    return np.ascontiguousarray(Q, dtype=np.float32)


def check_gallery(gallery: Any, name: str = "gallery") -> Any:
    """A 2-D numeric dask array, one chunk along axis 1; TypeError / ValueError naming ``name``."""
    _, da, _ = dask_modules()
    if not isinstance(gallery, da.Array):
        raise TypeError(f"{name} must be a dask array, got {type(gallery).__name__}")
    if gallery.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {gallery.shape}")
    if np.dtype(gallery.dtype).kind not in "fiu":
        raise TypeError(f"{name} must have a numeric dtype, got {gallery.dtype}")
    return gallery.rechunk({1: -1})


def offsets(chunks: tuple[int, ...]) -> np.ndarray:
    """Global row of each block's first row, then the total: int64 (nblocks + 1,)."""
    return np.concatenate([[0], np.cumsum(chunks, dtype=np.int64)])


def holders(client: Any, futures: list[Any]) -> list[str] | None:
    """The worker holding each future's result, or None when some are not in memory yet."""
    if not futures:
        return None
    who = client.who_has(futures)
    out = []
    for f in futures:
        w = who.get(f.key)
        if not w:
            return None
        out.append(sorted(w)[0])
    return out


def array_holders(client: Any, arr: Any) -> list[str] | None:
    """:func:`holders` of a dask array's blocks (in block order) when it is persisted."""
    from dask.core import flatten

    from distributed import futures_of

    keys = list(flatten(arr.__dask_keys__()))
    futs = {f.key: f for f in futures_of(arr)}
    if any(k not in futs for k in keys):
        return None
    return holders(client, [futs[k] for k in keys])


def lanes(nblocks: int, where: list[str] | None, nthreads: dict[str, int]) -> list[list[int]]:
    """Block indices split into chains that a fold runs one after the other.

    With the blocks' workers known, each worker's blocks (in block order) are split into as
    many contiguous chains as it has threads, so every chain stays on one worker; otherwise
    the blocks are split into as many chains as the cluster has threads.
    """
    if where is None:
        groups = [(list(range(nblocks)), max(1, sum(nthreads.values())))]
    else:
        by: dict[str, list[int]] = {}
        for i, w in enumerate(where):
            by.setdefault(w, []).append(i)
        groups = [(blocks, max(1, nthreads.get(w, 1))) for w, blocks in sorted(by.items())]
    out = []
    for blocks, n in groups:
        for part in np.array_split(np.asarray(blocks, dtype=np.int64), min(n, len(blocks))):
            out.append([int(i) for i in part])
    return out


def visit_order(nblocks: int, where: list[str] | None, start: int | None = None) -> list[int]:
    """Every block once, grouped by worker when known, rotated to begin at block ``start``."""
    if where is None:
        order = list(range(nblocks))
    else:
        order = sorted(range(nblocks), key=lambda i: (where[i], i))
    if start is not None:
        p = order.index(start)
        order = order[p:] + order[:p]
    return order
