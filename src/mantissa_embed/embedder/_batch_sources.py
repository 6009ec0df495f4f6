"""The batch sources of ``train_epochs``: ``fit``'s batches from an in-memory array
(``ArrayBatches``) or from an ``ImageDataset``'s files (``FileBatches``). Each has
``epoch(index_batches, rng)``, an iterator of ``(idx, xb)``.
"""

from __future__ import annotations

import numpy as np

from ..datasets._stream import stream_batches

__all__ = ["ArrayBatches", "FileBatches"]


class ArrayBatches:
    """``fit``'s batches from an in-memory ``X``: ``X[idx]`` gathered into one reused buffer,
    then ``augment(xb, rng)`` when given (``rng`` drawn after each batch's indices)."""

    def __init__(self, X, augment, batch_size) -> None:
        self.X, self.augment = X, augment
        self.buf = np.empty((batch_size,) + X.shape[1:], dtype=np.float32)

    def epoch(self, index_batches, rng):
        for idx in index_batches:
            xb = self.buf[: idx.shape[0]]
            np.take(self.X, idx, axis=0, out=xb)
            yield idx, (xb if self.augment is None else self.augment(xb, rng))


class FileBatches:
    """``fit``'s batches from an ``ImageDataset``: each batch's indices, then its images'
    ``train_transform`` parameters, drawn in the main thread in that order (``ds.prefetch``
    batches ahead), the images decoded on ``ds.workers()`` threads
    (``datasets._stream.stream_batches``): the same batches for any thread count."""

    def __init__(self, ds, batch_size) -> None:
        self.ds, self.batch_size = ds, batch_size

    def epoch(self, index_batches, rng):
        ds, t = self.ds, self.ds.train_transform

        def draws():
            for idx in index_batches:
                yield idx, [t.draw(rng, ds.source_size(int(i))) for i in idx]

        return stream_batches(ds, draws(), self.batch_size)
