"""WeightedSampler: indices drawn with probabilities proportional to weights."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from .._typing import ArrayLike, Int64Array, Seed
from .._validation import as_generator, check_array, check_bool, check_int
from ._common import split_batches


class WeightedSampler:
    """Indices drawn with probability proportional to ``weights``.

    The numpy counterpart of ``torch.utils.data.WeightedRandomSampler`` (same arguments;
    ``generator`` is a ``numpy.random.Generator``, an int seed or None for fresh entropy). Each
    iteration draws ``num_samples`` indices in ``[0, len(weights))``, with replacement or (like
    torch's ``multinomial``) without; a zero-weight index is never drawn. They are yielded as
    int64 batches of ``batch_size`` (the last may be shorter), or as one batch when it is None.

    Parameters
    ----------
    weights : (N,) array_like of float
        Non-negative, finite, not all zero (need not sum to 1).
    num_samples : int >= 1
    replacement : bool, default True
    generator : numpy.random.Generator, int or None, default None
    batch_size : int >= 1 or None, keyword-only, default None

    Raises
    ------
    TypeError
        Non-numeric weights; ``num_samples`` / ``batch_size`` not an int; ``replacement`` not a bool.
    ValueError
        ``weights`` not 1-D, empty, negative, NaN/Inf or all zero; ``num_samples < 1``;
        ``replacement=False`` with more samples than positive weights.

    Source: ``torch.utils.data.WeightedRandomSampler`` (PyTorch).
    """

    def __init__(
        self,
        weights: ArrayLike,
        num_samples: int,
        replacement: bool = True,
        generator: Seed = None,
        *,
        batch_size: int | None = None,
    ) -> None:
        w = check_array(weights, "weights", ndim=1, dtype=np.float64)
        if w.shape[0] == 0:
            raise ValueError("weights must not be empty")
        if (w < 0).any():
            raise ValueError("weights must be non-negative")
        check_bool(replacement, "replacement")
        self.num_samples = check_int(num_samples, "num_samples", minimum=1)
        self.batch_size = None if batch_size is None else check_int(batch_size, "batch_size", minimum=1)
        self.replacement = bool(replacement)
        self.weights = w
        self.support = np.flatnonzero(w > 0).astype(np.int64)
        if self.support.shape[0] == 0:
            raise ValueError("weights must have at least one positive entry")
        if not self.replacement and self.num_samples > self.support.shape[0]:
            raise ValueError(
                f"num_samples ({self.num_samples}) must be <= the number of positive weights "
                f"({self.support.shape[0]}) when replacement=False"
            )
        p = w[self.support]
        p = p / p.max()  # first bring the weights to (0, 1]: their sum cannot overflow
        self._p = p / p.sum()
        self.generator = as_generator(generator, "generator")

    def __len__(self) -> int:
        return 1 if self.batch_size is None else math.ceil(self.num_samples / self.batch_size)

    def indices(self) -> Int64Array:
        """One draw of ``num_samples`` indices (int64), not split into batches."""
        k = self._draw()
        return self.support[k]

    def _draw(self):
        return self.generator.choice(
            self.support.shape[0], size=self.num_samples, replace=self.replacement, p=self._p
        )

    def __iter__(self) -> Iterator[Int64Array]:
        yield from split_batches(self.indices(), self.batch_size)

    def __repr__(self) -> str:
        return (
            f"WeightedSampler(num_samples={self.num_samples}, replacement={self.replacement}, "
            f"batch_size={self.batch_size}, n={self.weights.shape[0]})"
        )
