"""MultiSimilarityMiner (pytorch-metric-learning; Wang et al. 2019)."""
from __future__ import annotations

import numpy as np

from .. import utils
from .._validation import check_float
from ..distances import CosineSimilarity
from .base_miner import BaseMiner


class MultiSimilarityMiner(BaseMiner):
    """Pair mining of the Multi-Similarity loss: positives harder than the easiest negative,
    negatives harder than the easiest positive, each by a margin ``epsilon``.

    ``MultiSimilarityMiner(epsilon=0.1, distance=None, backend="mantissa")``; the default
    distance is ``CosineSimilarity()`` (as PML). With a similarity ``s``, for each anchor ``a``:

    - positive ``(a, p)`` kept when ``s_ap - epsilon < max_n s_an``;
    - negative ``(a, n)`` kept when ``s_an + epsilon > min_p s_ap``.

    With a distance ``d``: ``d_ap + epsilon > min_n d_an`` and ``d_an - epsilon < max_p d_ap``.
    An anchor without any negative keeps no positive, and one without any positive keeps no
    negative. If the batch has no positive pair or no negative pair, everything is empty.

    Returns ``(a1, p, a2, n)`` int64 in row-major (anchor, index) order (PML lists each
    anchor's pairs in order of their distance; the index set is the same).

    Reference: X. Wang, X. Han, W. Huang, D. Dong, M. R. Scott, "Multi-Similarity Loss with
    General Pair Weighting for Deep Metric Learning", CVPR 2019; pytorch-metric-learning
    ``miners/multi_similarity_miner.py``.

    Raises
    ------
    TypeError / ValueError
        ``epsilon`` not a finite number; bad call inputs (see :class:`BaseMiner`).
    """

    def __init__(self, epsilon=0.1, distance=None, backend="mantissa", **kwargs):
        if distance is None:
            distance = CosineSimilarity(backend=backend)
        super().__init__(distance=distance, backend=backend, **kwargs)
        self.epsilon = check_float(epsilon, "epsilon")

    def mine(self, embeddings, labels, ref_emb, ref_labels):
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

    def __repr__(self):
        return f"MultiSimilarityMiner(epsilon={self.epsilon}, distance={self.distance!r})"
