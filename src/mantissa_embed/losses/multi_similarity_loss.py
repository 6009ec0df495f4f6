"""MultiSimilarityLoss, and ``_MatPairLoss``, the base of the losses with one term per anchor row."""

from __future__ import annotations

import numpy as np

from .._validation import check_float
from ..distances import CosineSimilarity
from .generic_pair_loss import GenericPairLoss


class _MatPairLoss(GenericPairLoss):
    """A GenericPairLoss with one loss per anchor row (PML's ``mat_based_loss``), reduced as
    "element" over the N anchors. Subclasses set ``_kind`` (the engine's row kind) and ``_params()``.
    """

    _kind: str | None = None

    def _params(self):
        raise NotImplementedError

    def _reduce_rows(self, losses, dmat, batch):
        idx = np.arange(batch.N, dtype=np.int64)
        value, dl = self._reduce_generic(losses, idx, "element", batch)
        dl = np.ascontiguousarray(dl, dtype=np.float32)
        self.engine.pairw_rows_backward(dl, dmat)
        return {"loss": value}, dmat

    def pair_loss_all(self, mat, batch):
        losses, dmat = self.engine.pairw_rows_forward(
            self._kind,
            mat,
            batch.labels,
            batch.ref_labels,
            params=self._params(),
            exclude_self=batch.same,
            inverted=self.distance.is_inverted,
        )
        return self._reduce_rows(losses, dmat, batch)

    def pair_loss(self, mat, pairs, batch):
        a1, p, a2, n = pairs
        pos = np.zeros(mat.shape, dtype=np.bool_)
        neg = np.zeros(mat.shape, dtype=np.bool_)
        pos[a1, p] = True
        neg[a2, n] = True
        if np.any(pos & neg):
            raise ValueError(
                "indices_tuple: a pair is both positive and negative "
                "(each pair must be either positive or negative)"
            )
        losses, dmat = self.engine.pairw_rows_forward(
            self._kind,
            mat,
            pos_mask=pos,
            neg_mask=neg,
            params=self._params(),
            inverted=self.distance.is_inverted,
        )
        return self._reduce_rows(losses, dmat, batch)


class MultiSimilarityLoss(_MatPairLoss):
    """Multi-similarity loss.

    ``MultiSimilarityLoss(alpha=2, beta=50, base=0.5, distance=None, reducer=None, ...)``:
    ``L_i = log(1 + sum_P exp(-alpha (s_ij - base))) / alpha + log(1 + sum_N exp(beta (s_ij -
    base))) / beta`` (``base - d`` for a distance), reduced over the N anchors (default MeanReducer).

    Raises ``TypeError`` / ``ValueError`` for bad parameters (``alpha``, ``beta`` > 0) or a pair both
    positive and negative.
    Source: X. Wang et al., "Multi-Similarity Loss with General Pair Weighting for Deep Metric
    Learning", CVPR 2019.
    """

    _kind = "multi_similarity"

    def __init__(self, alpha: float = 2, beta: float = 50, base: float = 0.5, **kwargs) -> None:
        self.alpha = check_float(alpha, "alpha", minimum=0.0, strict=True)
        self.beta = check_float(beta, "beta", minimum=0.0, strict=True)
        self.base = check_float(base, "base")
        super().__init__(**kwargs)

    def get_default_distance(self):
        return CosineSimilarity(backend=self.backend)

    def _params(self):
        return (self.alpha, self.beta, self.base)

    def __repr__(self) -> str:
        return (
            f"MultiSimilarityLoss(alpha={self.alpha}, beta={self.beta}, base={self.base}, "
            f"distance={self.distance!r}, reducer={self.reducer!r})"
        )
