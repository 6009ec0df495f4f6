"""MPerClassSampler: ``m`` samples of each of ``batch_size // m`` classes per batch."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .._typing import ArrayLike, Int64Array, Seed
from .._validation import as_generator, check_int, check_labels


class MPerClassSampler:
    """Class-balanced batches: ``m`` samples from each of ``batch_size // m`` classes.

    pytorch-metric-learning's ``MPerClassSampler`` (same arguments, defaults, checks and
    sampling). Each batch takes a fresh random set of ``batch_size // m`` classes and draws
    ``m`` indices from each, without replacement when the class has at least ``m`` samples.
    Iterating yields int64 index arrays of length ``batch_size``; ``len(sampler)`` is the number
    of batches per iteration and ``list_size`` PML's ``len()`` (indices per iteration).
    Successive iterations continue the generator's stream.

    Parameters
    ----------
    labels : array_like of int, shape (N,)
    m : int >= 1
        Samples per class in each batch.
    batch_size : int or None, default None
        None: each batch holds ``m`` samples of every class (``m * num_classes`` indices).
    length_before_new_iter : int, default 100000
        Indices per iteration, rounded down to a multiple of the batch length.
    seed : int, numpy.random.Generator or None, default 0

    Raises
    ------
    TypeError
        Non-integer ``labels``, ``m``, ``batch_size`` or ``length_before_new_iter``.
    ValueError
        ``labels`` empty or not 1-D; ``m < 1``; ``batch_size`` not a multiple of ``m``;
        ``m * num_classes < batch_size``; ``length_before_new_iter < batch_size``.

    Source: pytorch-metric-learning ``samplers/m_per_class_sampler.py``.
    """

    def __init__(
        self,
        labels: ArrayLike,
        m: int,
        batch_size: int | None = None,
        length_before_new_iter: int = 100000,
        seed: Seed = 0,
    ) -> None:
        if labels is not None and np.size(labels) == 0:
            raise ValueError("labels must not be empty")
        labels = check_labels(labels, "labels")
        if labels.shape[0] == 0:
            raise ValueError("labels must not be empty")
        self.m_per_class = check_int(m, "m", minimum=1)
        self.batch_size = None if batch_size is None else check_int(batch_size, "batch_size", minimum=1)
        self.rng = as_generator(seed)
        # labels -> indices, classes in order of first appearance (as PML's defaultdict)
        uniq, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        sort_idx = np.argsort(inverse, kind="stable")
        counts = np.bincount(inverse, minlength=uniq.shape[0])
        groups = np.split(sort_idx.astype(np.int64), np.cumsum(counts)[:-1])
        self.labels = [int(uniq[c]) for c in order]
        self.labels_to_indices = {int(uniq[c]): groups[c] for c in order}
        self.length_of_single_pass = self.m_per_class * len(self.labels)
        list_size = check_int(length_before_new_iter, "length_before_new_iter", minimum=1)
        if self.batch_size is None:
            if self.length_of_single_pass < list_size:
                list_size -= list_size % self.length_of_single_pass
        else:
            if list_size < self.batch_size:
                raise ValueError(
                    f"length_before_new_iter ({list_size}) must be >= batch_size ({self.batch_size})"
                )
            if self.length_of_single_pass < self.batch_size:
                raise ValueError(
                    f"m * (number of unique labels) must be >= batch_size: m={self.m_per_class}, "
                    f"{len(self.labels)} classes, batch_size={self.batch_size}"
                )
            if self.batch_size % self.m_per_class != 0:
                raise ValueError(
                    f"m_per_class must divide batch_size without any remainder: "
                    f"m={self.m_per_class}, batch_size={self.batch_size}"
                )
            list_size -= list_size % self.batch_size
        self.list_size = list_size

    @property
    def _batch_len(self) -> int:
        return self.length_of_single_pass if self.batch_size is None else self.batch_size

    def calculate_num_iters(self) -> int:
        """Number of batches per iteration (PML's ``calculate_num_iters``)."""
        divisor = self._batch_len
        return self.list_size // divisor if divisor < self.list_size else 1

    def __len__(self) -> int:
        return self.calculate_num_iters()

    def _draw(self, label: int) -> Int64Array:
        idx = self.labels_to_indices[label]
        replace = idx.shape[0] < self.m_per_class
        return self.rng.choice(idx, size=self.m_per_class, replace=replace)

    def next_batch(self) -> Int64Array:
        """Draw one batch: an int64 array of ``batch_size`` (or ``m * num_classes``) indices."""
        labels = self.labels
        # in-place shuffle of the persistent class list, as PML does
        perm = self.rng.permutation(len(labels))
        self.labels = labels = [labels[i] for i in perm]
        chosen = labels if self.batch_size is None else labels[: self.batch_size // self.m_per_class]
        return np.concatenate([self._draw(c) for c in chosen]).astype(np.int64, copy=False)

    def __iter__(self) -> Iterator[Int64Array]:
        for _ in range(self.calculate_num_iters()):
            yield self.next_batch()

    def indices(self) -> Int64Array:
        """One iteration flattened: PML's index list (int64, length ``list_size`` or less)."""
        batches = list(self)
        return np.concatenate(batches) if batches else np.empty(0, np.int64)

    def __repr__(self) -> str:
        return (
            f"MPerClassSampler(m={self.m_per_class}, batch_size={self.batch_size}, "
            f"length_before_new_iter={self.list_size}, num_classes={len(self.labels)})"
        )
