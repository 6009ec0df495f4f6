"""FixedSetOfTriplets: a fixed set of random triplets, served in a new order each iteration."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from .._typing import ArrayLike, Int64Array, Seed
from .._validation import as_generator, check_int, check_labels
from ._common import safe_random_choice, split_batches


class FixedSetOfTriplets:
    """A fixed set of random triplets, drawn once, served in a new order each iteration.

    ``FixedSetOfTriplets(labels, num_triplets, seed=0, *, triplets_per_batch=1)``
    (pytorch-metric-learning's sampler). At construction, each triplet picks two distinct
    classes uniformly (the anchor's and the negative's), an anchor and a positive from the
    anchor's class (two distinct rows when the class has two or more, else the same row twice)
    and a negative from the other class. ``fixed_set_of_triplets`` is the (num_triplets, 3)
    int64 array of ``(anchor, positive, negative)`` rows. Each iteration shuffles those rows
    (in place, as PML) and yields batches of ``triplets_per_batch`` triplets flattened as
    ``a0, p0, n0, a1, p1, n1, ...`` (3 * triplets_per_batch indices; the last batch may be
    shorter), the layout ``EmbeddingsAlreadyPackagedAsTriplets``
    expects.

    Raises
    ------
    TypeError
        Non-integer labels; ``num_triplets`` / ``triplets_per_batch`` not an int.
    ValueError
        ``labels`` not 1-D or with fewer than 2 distinct classes; ``num_triplets < 1``.

    Source: pytorch-metric-learning ``samplers/fixed_set_of_triplets.py``.
    """

    def __init__(
        self, labels: ArrayLike, num_triplets: int, seed: Seed = 0, *, triplets_per_batch: int = 1
    ) -> None:
        if labels is not None and np.size(labels) == 0:
            raise ValueError("labels must not be empty (at least 2 distinct classes are needed)")
        labels = check_labels(labels, "labels")
        self.num_triplets = check_int(num_triplets, "num_triplets", minimum=1)
        self.triplets_per_batch = check_int(triplets_per_batch, "triplets_per_batch", minimum=1)
        uniq, first = np.unique(labels, return_index=True)
        if uniq.shape[0] < 2:
            raise ValueError(f"labels must contain at least 2 distinct classes, got {uniq.shape[0]}")
        order = np.argsort(first, kind="stable")
        self.labels_to_indices = {
            int(uniq[c]): np.flatnonzero(labels == uniq[c]).astype(np.int64) for c in order
        }
        self.rng = as_generator(seed)
        self.create_fixed_set_of_triplets()

    def create_fixed_set_of_triplets(self) -> None:
        """Draw ``fixed_set_of_triplets`` ((num_triplets, 3) int64) from the generator."""
        label_list = np.array(list(self.labels_to_indices), dtype=np.int64)
        out = np.empty((self.num_triplets, 3), dtype=np.int64)
        for i in range(self.num_triplets):
            la, ln = self.rng.choice(label_list, size=2, replace=False)
            a, p = safe_random_choice(self.rng, self.labels_to_indices[int(la)], 2)
            n = self.rng.choice(self.labels_to_indices[int(ln)])
            out[i] = (a, p, n)
        self.fixed_set_of_triplets = out

    def __len__(self) -> int:
        return math.ceil(self.num_triplets / self.triplets_per_batch)

    def indices(self) -> Int64Array:
        """Shuffle the triplets and return them flattened (PML's iteration, 3 * num_triplets)."""
        self.rng.shuffle(self.fixed_set_of_triplets, axis=0)
        return self.fixed_set_of_triplets.reshape(-1).copy()

    def __iter__(self) -> Iterator[Int64Array]:
        yield from split_batches(self.indices(), 3 * self.triplets_per_batch)

    def __repr__(self) -> str:
        return (
            f"FixedSetOfTriplets(num_triplets={self.num_triplets}, "
            f"triplets_per_batch={self.triplets_per_batch}, num_classes={len(self.labels_to_indices)})"
        )
