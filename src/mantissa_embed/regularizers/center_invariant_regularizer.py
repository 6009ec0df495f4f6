"""CenterInvariantRegularizer (pytorch-metric-learning)."""

from __future__ import annotations

import numpy as np

from ..distances import LpDistance
from .base_regularizer import BaseRegularizer, _lp_norm


class CenterInvariantRegularizer(BaseRegularizer):
    """Make the class weight vectors' squared norms equal: ``(||w_i||^2 - mean_k ||w_k||^2)^2 / 4``.

    The distance must be ``LpDistance(normalize_embeddings=False, power=1)`` (``ValueError``
    otherwise, as PML asserts).
    Source: Y. Wu et al., "Deep Face Recognition with Center Invariant Loss", ACM MM workshops 2017.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        d = self.distance
        if type(d) is not LpDistance or d.power != 1 or d.normalize_embeddings:
            raise ValueError(
                "CenterInvariantRegularizer requires distance=LpDistance(normalize_embeddings=False, "
                f"power=1), got {d!r}"
            )

    def get_default_distance(self):
        return LpDistance(power=1, normalize_embeddings=False)

    def compute_loss(self, w):
        nrm, nback = _lp_norm(w, float(self.distance.p))
        sq = nrm**2
        dev = sq - sq.mean()

        def backward(dl):
            g = dl * dev / 2.0
            dsq = g - g.mean()
            return nback(dsq * 2.0 * nrm)

        return dev**2 / 4.0, np.arange(w.shape[0]), "element", backward, None
