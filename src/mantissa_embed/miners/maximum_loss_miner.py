"""MaximumLossMiner (pytorch-metric-learning 0.9's subset-batch miner)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .._typing import ArrayLike
from .._validation import as_generator, check_array, check_int, check_labels
from .base_miner import BaseMiner

if TYPE_CHECKING:
    from .._typing import Seed


class MaximumLossMiner(BaseMiner):
    """The random subset of the batch on which a loss is largest.

    ``MaximumLossMiner(loss, miner=None, num_trials=5, output_batch_size=None, seed=None,
    backend="mantissa")``: ``num_trials`` times, draw ``output_batch_size`` distinct rows (default
    half the batch, rounded up), mine them with ``miner`` if given and evaluate the loss; return
    the subset with the largest loss (the first on ties) as one sorted 1-D int64 array of row
    indices, not an index tuple. ``stats``: ``min_loss``, ``avg_loss``, ``max_loss``. The loss's
    parameter gradients are left as they were.

    Raises ``TypeError`` (``loss`` not callable, ``miner`` neither None nor callable, bad ints) or
    ``ValueError`` (``num_trials < 1``, ``output_batch_size`` < 1 or larger than the batch,
    ``ref_emb`` given, bad call inputs).
    Source: pytorch-metric-learning 0.9 ``miners/maximum_loss_miner.py`` (removed after 0.9).
    """

    def __init__(
        self,
        loss: Callable[..., Any],
        miner: Callable[..., Any] | None = None,
        num_trials=5,
        output_batch_size=None,
        seed: Seed = None,
        backend: str = "mantissa",
    ) -> None:
        super().__init__(backend=backend)
        if not callable(loss):
            raise TypeError(f"loss must be a callable loss object, got {type(loss).__name__}")
        if miner is not None and not callable(miner):
            raise TypeError(f"miner must be None or a miner, got {type(miner).__name__}")
        self.loss, self.miner = loss, miner
        self.num_trials = check_int(num_trials, "num_trials", minimum=1)
        self.output_batch_size = (
            None
            if output_batch_size is None
            else check_int(output_batch_size, "output_batch_size", minimum=1)
        )
        self.rng = as_generator(seed)

    def __call__(
        self,
        embeddings: ArrayLike,
        labels: ArrayLike,
        ref_emb: ArrayLike | None = None,
        ref_labels: ArrayLike | None = None,
    ):
        if ref_emb is not None or ref_labels is not None:
            raise ValueError(
                "MaximumLossMiner selects rows of the batch; ref_emb / ref_labels are not supported"
            )
        emb = check_array(embeddings, "embeddings", ndim=2)
        lab = check_labels(labels, "labels", n=emb.shape[0])
        N = emb.shape[0]
        k = (N + 1) // 2 if self.output_batch_size is None else self.output_batch_size
        if k > N or k < 1:
            raise ValueError(f"output_batch_size must be in [1, {N}] (the batch size), got {k}")
        params = self.loss.parameters() if hasattr(self.loss, "parameters") else []
        saved = [p.grad.copy() for p in params]
        losses, subsets = [], []
        try:
            for _ in range(self.num_trials):
                idx = np.sort(self.rng.choice(N, size=k, replace=False)).astype(np.int64)
                e, y = np.ascontiguousarray(emb[idx]), lab[idx]
                it = None if self.miner is None else self.miner(e, y)
                losses.append(float(self.loss(e, y, it)))
                subsets.append(idx)
        finally:
            for p, g in zip(params, saved):
                p.grad[...] = g
        best = int(np.argmax(losses))
        self.stats = dict(
            min_loss=float(np.min(losses)), avg_loss=float(np.mean(losses)), max_loss=losses[best]
        )
        return subsets[best]

    forward = __call__

    def __repr__(self) -> str:
        return (
            f"MaximumLossMiner(loss={self.loss!r}, miner={self.miner!r}, num_trials={self.num_trials}, "
            f"output_batch_size={self.output_batch_size})"
        )
