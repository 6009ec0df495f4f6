"""TripletMarginMiner (pytorch-metric-learning)."""
from __future__ import annotations

import numpy as np

from .. import utils
from .._validation import check_float
from .base_miner import BaseMiner

TYPES_OF_TRIPLETS = ("all", "hard", "semihard", "easy")


class TripletMarginMiner(BaseMiner):
    """Triplets selected by their margin ``m = d_an - d_ap`` (similarity: ``s_ap - s_an``).

    ``TripletMarginMiner(margin=0.2, type_of_triplets="all", distance=None, backend="mantissa")``

    - ``"all"``: triplets that violate the margin, ``m <= margin``;
    - ``"hard"``: violating ones whose negative is at least as close as the positive, ``m <= 0``;
    - ``"semihard"``: violating ones whose negative is farther than the positive, ``0 < m <= margin``;
    - ``"easy"``: the others, ``m > margin``.

    Returns ``(a, p, n)`` int64, in PML's (anchor, positive, negative) order. Enumerated on the
    distance matrix in tiles of positive pairs (vectorized numpy, no N x M x M mask).
    Source: pytorch-metric-learning ``miners/triplet_margin_miner.py``.

    Raises
    ------
    ValueError
        Unknown ``type_of_triplets``; bad call inputs (see :class:`BaseMiner`).
    """

    def __init__(self, margin=0.2, type_of_triplets="all", **kwargs):
        super().__init__(**kwargs)
        self.margin = check_float(margin, "margin")
        if type_of_triplets not in TYPES_OF_TRIPLETS:
            raise ValueError(f"type_of_triplets must be one of {TYPES_OF_TRIPLETS}, got {type_of_triplets!r}")
        self.type_of_triplets = type_of_triplets

    def mine(self, embeddings, labels, ref_emb, ref_labels):
        mat = self._mat(embeddings, ref_emb)
        matches, diffs = utils.get_matches_and_diffs(labels, ref_labels)
        a1, p = np.nonzero(matches)
        margin = np.float32(self.margin)
        inverted = self.distance.is_inverted
        kind = self.type_of_triplets

        def keep(ac, pc):
            ap = mat[ac, pc][:, None]
            an = mat[ac]
            tm = (ap - an) if inverted else (an - ap)
            if kind == "easy":
                return tm > margin
            cond = tm <= margin
            if kind == "hard":
                cond &= tm <= 0
            elif kind == "semihard":
                cond &= tm > 0
            return cond

        return utils._triplets_from_pos_pairs(a1.astype(np.int64), p.astype(np.int64), diffs, keep)

    def __repr__(self):
        return (f"TripletMarginMiner(margin={self.margin}, type_of_triplets={self.type_of_triplets!r}, "
                f"distance={self.distance!r})")
