"""AngularLoss (Wang et al. 2017), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numpy as np

from .. import utils
from .._validation import check_float
from ..distances import LpDistance
from .base_metric_loss_function import BaseMetricLossFunction


def _flat_add(rows, cols, vals, shape):
    """Dense (R, C) float64 array with ``vals`` summed at ``(rows, cols)``."""
    R, C = shape
    return np.bincount(rows * C + cols, weights=vals, minlength=R * C).reshape(R, C)


class AngularLoss(BaseMetricLossFunction):
    """Angular loss over (anchor, positive) pairs against every negative of the anchor.

    ``AngularLoss(alpha=40, distance=None, reducer=None, ...)``, ``alpha`` in degrees in (0, 90);
    ``loss(a, p) = log(1 + sum_n exp(4 t (a + p) . x_n - 2 (1 + t) a . p))``, ``t = tan(alpha)^2``,
    reduced over the pairs (default MeanReducer). The distance must be the default
    ``LpDistance(p=2, power=1, normalize_embeddings=True)``; labels are required.

    Raises ``ValueError`` for ``alpha`` outside (0, 90), another LpDistance, missing labels;
    ``TypeError`` for a distance that is not an LpDistance.
    Source: J. Wang et al., "Deep Metric Learning with Angular Loss", ICCV 2017.
    """

    def __init__(self, alpha: float = 40, **kwargs) -> None:
        self.alpha_degrees = check_float(alpha, "alpha")
        if not 0 < self.alpha_degrees < 90:
            raise ValueError(f"alpha must be an angle in degrees in (0, 90), got {alpha}")
        self.alpha = float(np.radians(self.alpha_degrees))
        super().__init__(**kwargs)
        d = self.distance
        if not isinstance(d, LpDistance):
            raise TypeError(
                "AngularLoss requires distance=LpDistance(p=2, power=1, normalize_embeddings=True), "
                f"got {type(d).__name__}"
            )
        if not (d.p == 2 and d.power == 1 and d.normalize_embeddings):
            raise ValueError(
                "AngularLoss requires distance=LpDistance(p=2, power=1, normalize_embeddings=True)"
            )

    def compute_loss(self, batch):
        if batch.labels is None:
            raise ValueError("AngularLoss requires labels (its negatives come from the labels)")
        if batch.ref_labels is None:
            raise ValueError("AngularLoss requires ref_labels with ref_emb")
        ref_labels = None if batch.same else batch.ref_labels
        a1, p, a2, _ = utils.convert_to_pairs(batch.indices_tuple, batch.labels, ref_labels)
        if len(a1) == 0 or len(a2) == 0:
            return self.zero_losses(batch)
        eng = self.engine
        E = batch.emb
        R = E if batch.ref is None else batch.ref
        Eh, En = eng.l2_normalize_forward(E)
        Rh, Rn = (Eh, En) if batch.ref is None else eng.l2_normalize_forward(R)
        t = float(np.tan(self.alpha) ** 2)
        k1, k2 = np.float32(4 * t), 2 * (1 + t)
        A = eng.sgemm(Eh, R, trans_b=True, alpha=float(k1))
        B = eng.sgemm(Rh, R, trans_b=True, alpha=float(k1))
        c = (k2 * np.einsum("ij,ij->i", Eh[a1].astype(np.float64), Rh[p])).astype(np.float32)
        losses = eng.angular_loss_forward(A, B, c, a1, p, batch.labels, batch.ref_labels)
        value, dl = self._reduce_generic(losses, (a1, p), "pos_pair", batch)
        dA, dB, dc = eng.angular_loss_backward(
            A, B, c, a1, p, batch.labels, batch.ref_labels, losses, np.asarray(dl, dtype=np.float32)
        )
        N, M = A.shape
        C = _flat_add(a1, p, dc.astype(np.float64) * k2, (N, M)).astype(np.float32)
        k1 = float(k1)
        # A = k1 Eh R^T, B = k1 Rh R^T, c = k2 rowdot(Eh[a1], Rh[p]) (scattered into C)
        dEh = eng.sgemm(dA, R, alpha=k1)
        eng.sgemm(C, Rh, dEh, beta=1.0)
        dRh = eng.sgemm(dB, R, alpha=k1)
        eng.sgemm(C, Eh, dRh, trans_a=True, beta=1.0)
        dR = eng.sgemm(dA, Eh, trans_a=True, alpha=k1)
        eng.sgemm(dB, Rh, dR, trans_a=True, alpha=k1, beta=1.0)
        dE = eng.l2_normalize_backward(dEh, Eh, En)
        dR += eng.l2_normalize_backward(dRh, Rh, Rn)
        if batch.ref is None:
            return {"loss": value}, dE + dR, None
        return {"loss": value}, dE, dR

    def __repr__(self) -> str:
        return f"AngularLoss(alpha={self.alpha_degrees}, reducer={self.reducer!r})"
