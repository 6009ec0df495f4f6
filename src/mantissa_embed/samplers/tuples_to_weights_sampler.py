"""TuplesToWeightsSampler: sample the rows a miner picks, proportionally to how often."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

from .. import utils
from .._typing import Int64Array, Seed
from .._validation import as_generator, check_array, check_int, check_labels
from .weighted_sampler import WeightedSampler


class TuplesToWeightsSampler:
    """Sample the rows that a miner picks, proportionally to how often it picks them.

    pytorch-metric-learning's sampler; PML's ``tester_kwargs`` become ``embed_batch_size``.
    Each iteration draws ``subset_size`` distinct rows (all when None), embeds them with
    ``model`` in chunks of ``embed_batch_size``, mines them (``miner(embeddings, labels)``) and
    weights each row by ``count / max count`` of its occurrences in the mined tuple
    (``mantissa_embed.utils.convert_to_weights``; an empty tuple gives the subset uniform
    weights, rows outside it 0). ``self.weights`` ((N,) float32) and ``self.subset_indices``
    keep the last draw. Then ``len(subset)`` indices are drawn with replacement from those
    weights and yielded in batches of ``batch_size`` (None: one batch). The model is only
    called, never put in a mode.

    Parameters
    ----------
    model : callable
        ``(n, ...) float32 -> (n, D)`` embeddings.
    miner : callable
        ``miner(embeddings, labels) -> index tuple``.
    dataset : tuple (X, labels)
        ``X`` (N, ...) float array, ``labels`` (N,) integer array.
    subset_size : int >= 1 or None, default None
        Rows embedded per iteration (at most N).
    batch_size : int >= 1 or None, keyword-only, default None
    seed : int, numpy.random.Generator or None, keyword-only, default 0
    embed_batch_size : int >= 1, keyword-only, default 256

    Raises
    ------
    TypeError
        ``model`` / ``miner`` not callable; ``dataset`` not an ``(X, labels)`` pair; bad types.
    ValueError
        Empty dataset, labels of the wrong length, ``subset_size`` > N; a model output that is
        not (n, D) or not finite; a miner output that is not a valid index tuple of the subset.

    Source: pytorch-metric-learning ``samplers/tuples_to_weights_sampler.py``.
    """

    def __init__(
        self,
        model: Callable[..., Any],
        miner: Callable[..., Any],
        dataset: Any,
        subset_size: int | None = None,
        *,
        batch_size: int | None = None,
        seed: Seed = 0,
        embed_batch_size: int = 256,
    ) -> None:
        if not callable(model):
            raise TypeError(f"model must be callable (X -> embeddings), got {type(model).__name__}")
        if not callable(miner):
            raise TypeError(f"miner must be callable (a miner), got {type(miner).__name__}")
        if not isinstance(dataset, (tuple, list)) or len(dataset) != 2:
            raise TypeError("dataset must be a pair (X, labels)")
        X = check_array(dataset[0], "dataset[0] (X)")
        if X.ndim < 2 or X.shape[0] == 0:
            raise ValueError(f"dataset[0] (X) must have shape (N, ...) with N >= 1, got {X.shape}")
        y = check_labels(dataset[1], "dataset[1] (labels)", n=X.shape[0])
        self.model, self.miner, self.X, self.labels = model, miner, X, y
        n = X.shape[0]
        self.subset_size = None if subset_size is None else check_int(subset_size, "subset_size", minimum=1)
        if self.subset_size is not None and self.subset_size > n:
            raise ValueError(f"subset_size ({self.subset_size}) must be <= the dataset size ({n})")
        self.batch_size = None if batch_size is None else check_int(batch_size, "batch_size", minimum=1)
        self.embed_batch_size = check_int(embed_batch_size, "embed_batch_size", minimum=1)
        self.rng = as_generator(seed)
        self.weights: np.ndarray | None = None
        self.subset_indices: np.ndarray | None = None

    @property
    def num_samples(self):
        """Indices per iteration (PML's ``len``): ``subset_size`` or N."""
        return self.subset_size or self.X.shape[0]

    def __len__(self) -> int:
        return 1 if self.batch_size is None else math.ceil(self.num_samples / self.batch_size)

    def _embed(self, X):
        outs = []
        for i in range(0, X.shape[0], self.embed_batch_size):
            e = check_array(
                self.model(X[i : i + self.embed_batch_size]), "model(X) (the embeddings)", finite=False
            )
            if e.ndim != 2 or e.shape[0] != min(self.embed_batch_size, X.shape[0] - i):
                raise ValueError(f"model must return (n, D) embeddings, got shape {e.shape}")
            if not np.isfinite(e).all():
                raise ValueError("model returned NaN or Inf embeddings")
            outs.append(e.copy())
        return np.concatenate(outs)

    def compute_weights(self) -> np.ndarray:
        """Steps 1-3: draw the subset, embed, mine; set and return ``self.weights`` (N,)."""
        n = self.X.shape[0]
        if self.subset_size is None:
            idx = np.arange(n, dtype=np.int64)
        else:
            idx = self.rng.choice(n, size=self.subset_size, replace=False).astype(np.int64)
        emb = self._embed(self.X[idx])
        lab = self.labels[idx]
        tuples = self.miner(emb, lab)
        if tuples is not None:
            tuples = utils.check_indices_tuple(tuples, len(idx), len(idx), name="miner output")
        empty = tuples is None or all(len(t) == 0 for t in tuples)
        w_sub = np.asarray(utils.convert_to_weights(None if empty else tuples, lab), dtype=np.float32)
        if empty:
            w_sub = np.ones(len(idx), dtype=np.float32)  # uniform within the subset
        weights = np.zeros(n, dtype=np.float32)
        weights[idx] = w_sub
        self.weights, self.subset_indices = weights, idx
        return weights

    def __iter__(self) -> Iterator[Int64Array]:
        weights = self.compute_weights()
        yield from WeightedSampler(
            weights, self.num_samples, replacement=True, generator=self.rng, batch_size=self.batch_size
        )

    def __repr__(self) -> str:
        return (
            f"TuplesToWeightsSampler(miner={self.miner!r}, subset_size={self.subset_size}, "
            f"batch_size={self.batch_size})"
        )
