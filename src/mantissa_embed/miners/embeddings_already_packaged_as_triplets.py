"""EmbeddingsAlreadyPackagedAsTriplets (pytorch-metric-learning)."""

from __future__ import annotations

import numpy as np

from .base_miner import BaseMiner


class EmbeddingsAlreadyPackagedAsTriplets(BaseMiner):
    """The batch laid out as consecutive (anchor, positive, negative) rows.

    ``EmbeddingsAlreadyPackagedAsTriplets(distance=None, backend="mantissa")`` returns
    ``(arange(0, N, 3), arange(1, N, 3), arange(2, N, 3))`` int64; labels are validated, not used.

    Raises ``ValueError`` when N is not a multiple of 3, when ``ref_emb`` is given, or for bad call
    inputs (``BaseMiner``).
    Source: pytorch-metric-learning ``miners/embeddings_already_packaged_as_triplets.py``.
    """

    def mine(
        self, embeddings: np.ndarray, labels: np.ndarray, ref_emb: np.ndarray | None, ref_labels: np.ndarray
    ):
        if ref_emb is not None:
            raise ValueError(
                "EmbeddingsAlreadyPackagedAsTriplets does not take ref_emb: "
                "the triplets index the batch itself"
            )
        N = embeddings.shape[0]
        if N % 3:
            raise ValueError(
                f"embeddings must have a multiple of 3 rows (anchor, positive, negative), got {N}"
            )
        return (
            np.arange(0, N, 3, dtype=np.int64),
            np.arange(1, N, 3, dtype=np.int64),
            np.arange(2, N, 3, dtype=np.int64),
        )

    def __repr__(self) -> str:
        return "EmbeddingsAlreadyPackagedAsTriplets()"
