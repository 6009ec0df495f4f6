"""UniformHistogramMiner (pytorch-metric-learning)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import utils
from .._validation import as_generator, check_int
from .base_miner import BaseMiner

if TYPE_CHECKING:
    from .._typing import Seed


class UniformHistogramMiner(BaseMiner):
    """Pairs drawn so that their distances spread uniformly over the observed range.

    ``UniformHistogramMiner(num_bins=100, pos_per_bin=10, neg_per_bin=10, seed=None,
    distance=None, backend="mantissa")``: the positive-pair distances are cut into ``num_bins``
    equal-width bins (``[s, e)``, the last ``[s, e]``) and ``pos_per_bin`` pairs drawn with
    replacement from each non-empty bin, ordered by bin; likewise the negatives. Returns
    ``(a1, p, a2, n)`` int64. ``seed``: int, Generator or None (created once).

    Raises ``TypeError`` / ``ValueError`` for counts that are not ints >= 1 or bad call inputs.
    Source: pytorch-metric-learning ``miners/uniform_histogram_miner.py``.
    """

    def __init__(self, num_bins=100, pos_per_bin=10, neg_per_bin=10, seed: Seed = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.num_bins = check_int(num_bins, "num_bins", minimum=1)
        self.pos_per_bin = check_int(pos_per_bin, "pos_per_bin", minimum=1)
        self.neg_per_bin = check_int(neg_per_bin, "neg_per_bin", minimum=1)
        self.rng = as_generator(seed)

    def get_bins(self, pairs):
        """``num_bins + 1`` float32 edges from ``min(pairs)`` to ``max(pairs)``."""
        return np.linspace(pairs.min(), pairs.max(), self.num_bins + 1, dtype=np.float64).astype(np.float32)

    def _bin_of(self, values):
        bins = self.get_bins(values)
        b = np.searchsorted(bins, values, side="right") - 1
        return np.clip(b, 0, self.num_bins - 1)

    def _uniform(self, values, anchors, others, per_bin):
        b = self._bin_of(values)
        if self.num_bins <= np.iinfo(np.uint16).max:
            b = b.astype(np.uint16)  # numpy's stable sort is a radix sort for 16-bit keys
        order = np.argsort(b, kind="stable")
        used, starts, counts = np.unique(b[order], return_index=True, return_counts=True)
        u = self.rng.random((len(used), per_bin))
        pick = np.minimum((u * counts[:, None]).astype(np.int64), counts[:, None] - 1)
        idx = order[(starts[:, None] + pick).ravel()]
        return anchors[idx], others[idx]

    def mine(
        self, embeddings: np.ndarray, labels: np.ndarray, ref_emb: np.ndarray | None, ref_labels: np.ndarray
    ):
        a1, p, a2, n = utils.get_all_pairs_indices(labels, ref_labels)
        if len(a1) == 0 and len(a2) == 0:
            return a1, p, a2, n
        mat = self._mat(embeddings, ref_emb)
        if len(a1):
            a1, p = self._uniform(mat[a1, p], a1, p, self.pos_per_bin)
        if len(a2):
            a2, n = self._uniform(mat[a2, n], a2, n, self.neg_per_bin)
        return a1, p, a2, n

    def __repr__(self) -> str:
        return (
            f"UniformHistogramMiner(num_bins={self.num_bins}, pos_per_bin={self.pos_per_bin}, "
            f"neg_per_bin={self.neg_per_bin}, distance={self.distance!r})"
        )
