"""PairMarginMiner (pytorch-metric-learning)."""

from __future__ import annotations

import numpy as np

from .. import utils
from .._validation import check_float
from .base_miner import BaseMiner


class PairMarginMiner(BaseMiner):
    """Positive pairs farther than ``pos_margin`` and negative pairs closer than ``neg_margin``.

    ``PairMarginMiner(pos_margin=0.2, neg_margin=0.8, distance=None, backend="mantissa")``:
    with a distance, positives with ``d > pos_margin`` and negatives with ``d < neg_margin``;
    with a similarity, ``s < pos_margin`` and ``s > neg_margin``. Returns ``(a1, p, a2, n)``
    int64, row-major order. Source: pytorch-metric-learning ``miners/pair_margin_miner.py``.
    """

    def __init__(self, pos_margin: float = 0.2, neg_margin: float = 0.8, **kwargs) -> None:
        super().__init__(**kwargs)
        self.pos_margin = check_float(pos_margin, "pos_margin")
        self.neg_margin = check_float(neg_margin, "neg_margin")

    def mine(
        self, embeddings: np.ndarray, labels: np.ndarray, ref_emb: np.ndarray | None, ref_labels: np.ndarray
    ):
        mat = self._mat(embeddings, ref_emb)
        matches, diffs = utils.get_matches_and_diffs(labels, ref_labels)
        pm, nm = np.float32(self.pos_margin), np.float32(self.neg_margin)
        if self.distance.is_inverted:
            pos, neg = matches & (mat < pm), diffs & (mat > nm)
        else:
            pos, neg = matches & (mat > pm), diffs & (mat < nm)
        a1, p = np.nonzero(pos)
        a2, n = np.nonzero(neg)
        return tuple(x.astype(np.int64) for x in (a1, p, a2, n))

    def __repr__(self) -> str:
        return (
            f"PairMarginMiner(pos_margin={self.pos_margin}, neg_margin={self.neg_margin}, "
            f"distance={self.distance!r})"
        )
