"""Batches of an ``ImageDataset`` decoded on a thread pool while the caller computes.

Pillow releases the GIL while it decodes and resamples, and numpy while it converts, so
threads decode in parallel with each other and with the engine. ``stream_batches`` keeps
``ds.prefetch`` batches in flight ahead of the one the caller holds, in a ring of
``prefetch + 1`` preallocated batch buffers: memory is bounded by the batch size, never by the
number of images. Each image is decoded by one task into its row of the buffer, with
parameters drawn beforehand, so the bytes of a batch do not depend on the thread count.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np

__all__ = ["stream_batches", "eval_batches"]


def stream_batches(
    ds,
    batches: Iterable[tuple[np.ndarray, Sequence[Any] | None]],
    batch_size: int,
    *,
    total: int | None = None,
    progress: bool = False,
    desc: str = "decoding",
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(idx, xb)`` for every ``(idx, params)`` of ``batches``, in order: ``xb``
    (len(idx), C, H, W) float32 holds images ``idx`` of ``ds``: the eval transform when
    ``params`` is None, else the train transform with ``params[j]`` for image ``j``.

    ``batches`` is consumed ``ds.prefetch`` batches ahead of the one yielded (a lazy
    iterator drawing indices and parameters from a generator draws them in the same order
    whatever the thread count). ``batch_size``: the largest ``len(idx)``. ``xb`` is a view of
    a ring buffer, valid until the next batch is requested. The first file that fails to
    decode, in batch order, raises its ImageFileError when its batch is reached.
    ``progress``: a tqdm bar in images (and images/s) over ``total`` images.
    """
    it = iter(batches)
    ring = [np.empty((batch_size,) + tuple(ds.image_shape), dtype=np.float32) for _ in range(ds.prefetch + 1)]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc=desc, unit="img", unit_scale=True)
    pool = ThreadPoolExecutor(max_workers=ds.workers(), thread_name_prefix="mantissa-decode")
    pending: deque = deque()
    k = 0

    def submit():
        nonlocal k
        item = next(it, None)
        if item is None:
            return False
        idx, params = item
        if idx.shape[0] > batch_size:
            raise ValueError(f"a batch of {idx.shape[0]} images is larger than batch_size={batch_size}")
        buf = ring[k % len(ring)][: idx.shape[0]]
        train = params is not None
        futs = [
            pool.submit(ds.load_into, int(i), buf[j], params[j] if train else None, train)
            for j, i in enumerate(idx)
        ]
        pending.append((idx, buf, futs))
        k += 1
        return True

    try:
        for _ in range(ds.prefetch):
            if not submit():
                break
        while pending:
            submit()  # reuses the slot of the batch the caller just gave back
            idx, buf, futs = pending.popleft()
            wait(futs)
            for f in futs:
                exc = f.exception()
                if exc is not None:
                    raise exc
            if bar is not None:
                bar.update(idx.shape[0])
            yield idx, buf
    finally:
        for _, _, futs in pending:
            for f in futs:
                f.cancel()
        pool.shutdown(wait=True)
        if bar is not None:
            bar.close()


def eval_batches(ds, batch_size: int, progress: bool = False) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``stream_batches`` over every image of ``ds`` in order, eval mode, ``batch_size`` at a time."""
    n = len(ds)
    batches = ((np.arange(s, min(s + batch_size, n)), None) for s in range(0, n, batch_size))
    return stream_batches(
        ds, batches, min(batch_size, max(n, 1)), total=n, progress=progress, desc="embedding"
    )
