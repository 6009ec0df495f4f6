"""TupletMarginLoss (Yu & Tao 2019), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numpy as np

from .. import utils
from .._validation import check_float
from ..distances import CosineSimilarity
from .generic_pair_loss import GenericPairLoss


def _group_logsumexp(groups, values, n):
    """(lse (n,) float64 over the values of each group, -inf for an empty group, softmax weights
    of each value within its group)."""
    mx = np.full(n, -np.inf)
    np.maximum.at(mx, groups, values)
    e = np.exp(values - mx[groups])
    s = np.bincount(groups, weights=e, minlength=n)
    with np.errstate(divide="ignore"):
        lse = mx + np.log(s)
    return lse, e / s[groups]


class TupletMarginLoss(GenericPairLoss):
    """Tuplet margin loss: each positive pair against all the negative pairs of its anchor.

    ``TupletMarginLoss(margin=5.73, scale=64, distance=None, reducer=None, ...)``: ``loss(a, p) =
    log(1 + sum_n exp(scale (cos theta_an - cos(theta_ap - margin))))``, ``margin`` in degrees
    (stored in radians); default MeanReducer over the positive pairs. Cosine similarity only.

    Raises ``TypeError`` for non-numeric ``margin`` / ``scale`` or another distance.
    Source: B. Yu, D. Tao, "Deep Metric Learning with Tuplet Margin Loss", ICCV 2019.
    """

    def __init__(self, margin: float = 5.73, scale: float = 64, **kwargs) -> None:
        self.margin_degrees = check_float(margin, "margin")
        self.margin = float(np.radians(self.margin_degrees))
        self.scale = check_float(scale, "scale")
        super().__init__(**kwargs)
        if not isinstance(self.distance, CosineSimilarity):
            raise TypeError(
                f"TupletMarginLoss requires distance=CosineSimilarity(), got {type(self.distance).__name__}"
            )

    def get_default_distance(self):
        return CosineSimilarity(backend=self.backend)

    def pair_loss_all(self, mat, batch):
        pairs = utils.get_all_pairs_indices(batch.labels, None if batch.same else batch.ref_labels)
        return self.pair_loss(mat, pairs, batch)

    def pair_loss(self, mat, pairs, batch):
        a1, p, a2, n = pairs
        N, M = mat.shape
        if len(a1) == 0 or len(a2) == 0:
            return {"loss": 0.0}, np.zeros(mat.shape, dtype=np.float32)
        s, m = self.scale, self.margin
        x = np.clip(mat[a1, p].astype(np.float64), -1.0, 1.0)
        theta = np.arccos(x)
        cpos = np.cos(theta - m)
        lse, soft = _group_logsumexp(a2, s * mat[a2, n].astype(np.float64), N)
        la = lse[a1]
        has = np.isfinite(la)
        z = np.where(has, la - s * cpos, 0.0)
        losses = np.where(has, np.logaddexp(0.0, z), 0.0)
        self.stats = {
            "avg_pos_angle": float(np.degrees(theta.mean())),
            "avg_neg_angle": float(np.degrees(np.arccos(np.clip(mat[a2, n], -1, 1)).mean())),
        }
        value, dl = self._reduce_generic(losses, (a1, p), "pos_pair", batch)
        dz = np.asarray(dl, dtype=np.float64) * np.where(has, 0.5 * (1.0 + np.tanh(0.5 * z)), 0.0)
        sin_t = np.sqrt(np.maximum(1.0 - x * x, 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            dcos = np.where(sin_t > 0, np.sin(theta - m) / sin_t, 0.0)
        dx = -s * dz * dcos
        dlse = np.bincount(a1, weights=dz, minlength=N)
        dneg = dlse[a2] * s * soft
        dmat = (
            np.bincount(a1 * M + p, weights=dx, minlength=N * M)
            + np.bincount(a2 * M + n, weights=dneg, minlength=N * M)
        ).reshape(N, M)
        return {"loss": value}, dmat.astype(np.float32)

    def __repr__(self) -> str:
        return f"TupletMarginLoss(margin={self.margin_degrees}, scale={self.scale}, reducer={self.reducer!r})"
