"""HDCMiner (pytorch-metric-learning; Yuan, Yang & Zhang 2017)."""

from __future__ import annotations

import math

import numpy as np

from .. import utils
from .._typing import ArrayLike, IndicesTuple
from .._validation import check_float
from .base_miner import BaseMiner


class HDCMiner(BaseMiner):
    """The hardest ``filter_percentage`` of the positive pairs and of the negative pairs.

    ``HDCMiner(filter_percentage=0.5, distance=None, backend="mantissa")``; called as
    ``miner(embeddings, labels, ref_emb=None, ref_labels=None, indices_tuple=None)``. Of the P
    positive candidates the ``ceil(filter_percentage * P)`` farthest, of the Q negatives the
    ``ceil(filter_percentage * Q)`` closest, each half hardest first (ties: candidate order).
    Candidates: all pairs, or those of ``indices_tuple`` (or of ``set_idx_externally`` until
    ``reset_idx``); triplets count as pairs ``(a, p, a, n)``. Returns ``(a1, p, a2, n)`` int64.

    Raises ``ValueError`` for ``filter_percentage`` outside [0, 1] or a bad ``indices_tuple``,
    ``TypeError`` for wrong types, and as ``BaseMiner`` for bad call inputs.
    Source: Y. Yuan et al., "Hard-Aware Deeply Cascaded Embedding", ICCV 2017.
    """

    def __init__(self, filter_percentage: float = 0.5, **kwargs) -> None:
        super().__init__(**kwargs)
        fp = check_float(filter_percentage, "filter_percentage", minimum=0.0)
        if fp > 1:
            raise ValueError(f"filter_percentage must be in [0, 1], got {fp}")
        self.filter_percentage = fp
        self.reset_idx()

    def set_idx_externally(self, external_indices_tuple, labels: ArrayLike | None = None) -> None:
        """Use these pairs (or triplets) as the candidates of the next calls (PML's method)."""
        self._external = external_indices_tuple
        self.was_set_externally = True

    def reset_idx(self) -> None:
        """Go back to all pairs of the batch as candidates."""
        self._external = None
        self.was_set_externally = False

    def __call__(
        self,
        embeddings: ArrayLike,
        labels: ArrayLike,
        ref_emb: ArrayLike | None = None,
        ref_labels: ArrayLike | None = None,
        indices_tuple: IndicesTuple | None = None,
    ):
        self._call_tuple = indices_tuple
        try:
            return super().__call__(embeddings, labels, ref_emb, ref_labels)
        finally:
            self._call_tuple = None

    forward = __call__

    def mine(
        self, embeddings: np.ndarray, labels: np.ndarray, ref_emb: np.ndarray | None, ref_labels: np.ndarray
    ):
        cand = self._call_tuple if self._call_tuple is not None else self._external
        N = embeddings.shape[0]
        M = N if ref_emb is None else ref_emb.shape[0]
        if cand is None:
            a1, p, a2, n = utils.get_all_pairs_indices(labels, ref_labels)
        else:
            a1, p, a2, n = utils.convert_to_pairs(utils.check_indices_tuple(cand, N, M), labels, ref_labels)
        mat = self._mat(embeddings, ref_emb)
        inv = self.distance.is_inverted
        a1, p = self._filter(mat, a1, p, largest=not inv)
        a2, n = self._filter(mat, a2, n, largest=inv)
        return a1, p, a2, n

    def _filter(self, mat, anchor, other, largest):
        if len(anchor) == 0:
            return anchor, other
        vals = mat[anchor, other]
        k = int(math.ceil(self.filter_percentage * len(vals)))
        order = np.argsort(-vals if largest else vals, kind="stable")[:k]
        return anchor[order], other[order]

    def __repr__(self) -> str:
        return f"HDCMiner(filter_percentage={self.filter_percentage}, distance={self.distance!r})"
