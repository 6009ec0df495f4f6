"""TripletMarginMiner (pytorch-metric-learning)."""

from __future__ import annotations

import numpy as np

from .. import utils
from .._validation import check_float
from ..backend import get_backend
from .base_miner import BaseMiner

TYPES_OF_TRIPLETS = ("all", "hard", "semihard", "easy")


class TripletMarginMiner(BaseMiner):
    """Triplets selected by their margin ``m = d_an - d_ap`` (similarity: ``s_ap - s_an``).

    ``TripletMarginMiner(margin=0.2, type_of_triplets="all", distance=None, backend="mantissa")``:
    ``"all"`` keeps ``m <= margin``, ``"hard"`` ``m <= 0``, ``"semihard"`` ``0 < m <= margin``,
    ``"easy"`` ``m > margin``; ``m`` in float32, as PML. Returns ``(a, p, n)`` int64 sorted by
    (a, p, n), selected in C; memory: the output plus the (N, M) matrix.

    Raises ``ValueError`` for an unknown ``type_of_triplets`` or bad call inputs.
    Source: pytorch-metric-learning ``miners/triplet_margin_miner.py``.
    """

    def __init__(self, margin: float = 0.2, type_of_triplets: str = "all", **kwargs) -> None:
        super().__init__(**kwargs)
        self.margin = check_float(margin, "margin")
        if type_of_triplets not in TYPES_OF_TRIPLETS:
            raise ValueError(f"type_of_triplets must be one of {TYPES_OF_TRIPLETS}, got {type_of_triplets!r}")
        self.type_of_triplets = type_of_triplets

    def mine(
        self, embeddings: np.ndarray, labels: np.ndarray, ref_emb: np.ndarray | None, ref_labels: np.ndarray
    ):
        mat = self._mat(embeddings, ref_emb)
        lab, ref, same = utils._resolve(labels, ref_labels)
        return get_backend(self.backend).triplet_margin_mine(
            mat, lab, ref, same, self.type_of_triplets, self.margin, self.distance.is_inverted
        )

    def __repr__(self) -> str:
        return (
            f"TripletMarginMiner(margin={self.margin}, type_of_triplets={self.type_of_triplets!r}, "
            f"distance={self.distance!r})"
        )
