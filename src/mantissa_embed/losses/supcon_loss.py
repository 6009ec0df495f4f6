"""SupConLoss (Khosla et al. 2020), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numpy as np

from .._validation import check_float
from ..distances import CosineSimilarity
from ..reducers import AvgNonZeroReducer
from .generic_pair_loss import GenericPairLoss


class SupConLoss(GenericPairLoss):
    """Supervised contrastive loss.

    ``SupConLoss(temperature=0.1, distance=None, reducer=None, ...)``: ``l_i = -mean_{p in P(i)} log
    softmax_{j in P(i) u N(i)}(s_ij / T)[p]`` (default CosineSimilarity; ``s = -d`` for a distance),
    0 without positives; default AvgNonZeroReducer over the anchors.

    Raises ``TypeError`` / ``ValueError`` for a non-numeric or non-positive temperature, or a pair
    both positive and negative.
    Source: P. Khosla et al., "Supervised Contrastive Learning", NeurIPS 2020.
    """

    def __init__(self, temperature: float = 0.1, **kwargs) -> None:
        self.temperature = check_float(temperature, "temperature", 0, strict=True)
        super().__init__(**kwargs)

    def get_default_distance(self):
        return CosineSimilarity(backend=self.backend)

    def get_default_reducer(self):
        return AvgNonZeroReducer()

    def pair_loss_all(self, mat, batch):
        def unreduced(lvec):  # one loss per anchor row
            return (lvec, np.arange(batch.N), "element", lambda dl: np.asarray(dl, dtype=np.float32))

        return self._softmax_all(self.engine.supcon_all, mat, batch, unreduced)

    def pair_loss(self, mat, pairs, batch):
        a1, p, a2, n = pairs
        pos = np.zeros(mat.shape, dtype=bool)
        neg = np.zeros(mat.shape, dtype=bool)
        pos[a1, p] = True
        neg[a2, n] = True
        if np.any(pos & neg):
            raise ValueError("indices_tuple: each pair must be either positive or negative, not both")
        if not pos.any() or not neg.any():
            return {"loss": 0.0}, np.zeros(mat.shape, dtype=np.float32)
        c = (1.0 if self.distance.is_inverted else -1.0) / self.temperature
        z = c * mat.astype(np.float64)
        keep = pos | neg
        npos = pos.sum(axis=1)
        has = npos > 0
        zk = np.where(keep, z, -np.inf)
        mx = zk.max(axis=1)
        mx = np.where(np.isfinite(mx), mx, 0.0)
        e = np.exp(zk - mx[:, None])
        S = e.sum(axis=1)
        with np.errstate(divide="ignore"):
            lse = mx + np.log(np.where(S > 0, S, 1.0))
        mean_pos = (z * pos).sum(axis=1) / np.maximum(npos, 1)
        losses = np.where(has, lse - mean_pos, 0.0)
        value, dl = self._reduce_generic(losses.astype(np.float32), np.arange(batch.N), "element", batch)
        g = np.where(has, np.asarray(dl, dtype=np.float64), 0.0)
        sm = e / np.where(S > 0, S, 1.0)[:, None]
        dmat = g[:, None] * (sm - pos / np.maximum(npos, 1)[:, None]) * c
        self.stats = {"num_pos_pairs": int(pos.sum()), "num_neg_pairs": int(neg.sum())}
        return {"loss": value}, dmat.astype(np.float32)

    def __repr__(self) -> str:
        return (
            f"SupConLoss(temperature={self.temperature}, distance={self.distance!r}, "
            f"reducer={self.reducer!r})"
        )
