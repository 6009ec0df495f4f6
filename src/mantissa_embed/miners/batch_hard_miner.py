"""BatchHardMiner (pytorch-metric-learning; Hermans, Beyer & Leibe 2017)."""

from __future__ import annotations

import numpy as np

from .. import utils
from .base_miner import BaseMiner


class BatchHardMiner(BaseMiner):
    """For each anchor, its farthest positive and its closest negative.

    ``BatchHardMiner(distance=None, backend="mantissa")``: ``(a, p, n)`` int64, anchors ascending
    (those without a positive or a negative dropped), ties to the lowest index.
    Source: A. Hermans et al., "In Defense of the Triplet Loss for Person Re-Identification", 2017.
    """

    def mine(
        self, embeddings: np.ndarray, labels: np.ndarray, ref_emb: np.ndarray | None, ref_labels: np.ndarray
    ):
        mat = self._mat(embeddings, ref_emb)
        matches, diffs = utils.get_matches_and_diffs(labels, ref_labels)
        keep = matches.any(axis=1) & diffs.any(axis=1)
        a = np.nonzero(keep)[0].astype(np.int64)
        if len(a) == 0:
            return utils._empty(3)
        m, pos, neg = mat[a], matches[a], diffs[a]
        if self.distance.is_inverted:
            p = np.argmin(np.where(pos, m, np.inf), axis=1)
            n = np.argmax(np.where(neg, m, -np.inf), axis=1)
        else:
            p = np.argmax(np.where(pos, m, -np.inf), axis=1)
            n = np.argmin(np.where(neg, m, np.inf), axis=1)
        return a, p.astype(np.int64), n.astype(np.int64)
