"""MultiSimilarityMiner (pytorch-metric-learning; Wang et al. 2019)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import utils
from .._validation import check_float
from ..distances import CosineSimilarity
from .base_miner import BaseMiner

if TYPE_CHECKING:
    from ..distances import BaseDistance


class MultiSimilarityMiner(BaseMiner):
    """The pair mining of the Multi-Similarity loss.

    ``MultiSimilarityMiner(epsilon=0.1, distance=None, backend="mantissa")``, default distance
    ``CosineSimilarity()``: positive ``(a, p)`` kept when ``s_ap - epsilon < max_n s_an``, negative
    ``(a, n)`` when ``s_an + epsilon > min_p s_ap`` (mirrored for a distance). Returns
    ``(a1, p, a2, n)`` int64 in row-major order (PML orders by distance; same index set).

    Raises ``TypeError`` / ``ValueError`` for a non-finite ``epsilon`` or bad call inputs.
    Source: X. Wang et al., "Multi-Similarity Loss with General Pair Weighting for Deep Metric
    Learning", CVPR 2019.
    """

    def __init__(
        self, epsilon: float = 0.1, distance: BaseDistance | None = None, backend: str = "mantissa", **kwargs
    ) -> None:
        if distance is None:
            distance = CosineSimilarity(backend=backend)
        super().__init__(distance=distance, backend=backend, **kwargs)
        self.epsilon = check_float(epsilon, "epsilon")

    def mine(
        self, embeddings: np.ndarray, labels: np.ndarray, ref_emb: np.ndarray | None, ref_labels: np.ndarray
    ):
        matches, diffs = utils.get_matches_and_diffs(labels, ref_labels)
        if not matches.any() or not diffs.any():
            return utils._empty(4)
        mat = self._mat(embeddings, ref_emb)
        eps = np.float32(self.epsilon)
        if self.distance.is_inverted:
            max_neg = np.where(diffs, mat, -np.inf).max(axis=1, keepdims=True)
            min_pos = np.where(matches, mat, np.inf).min(axis=1, keepdims=True)
            pos = matches & (mat - eps < max_neg)
            neg = diffs & (mat + eps > min_pos)
        else:
            min_neg = np.where(diffs, mat, np.inf).min(axis=1, keepdims=True)
            max_pos = np.where(matches, mat, -np.inf).max(axis=1, keepdims=True)
            pos = matches & (mat + eps > min_neg)
            neg = diffs & (mat - eps < max_pos)
        a1, p = np.nonzero(pos)
        a2, n = np.nonzero(neg)
        return a1, p, a2, n

    def __repr__(self) -> str:
        return f"MultiSimilarityMiner(epsilon={self.epsilon}, distance={self.distance!r})"
