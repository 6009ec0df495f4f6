"""AngularMiner (pytorch-metric-learning; Wang et al. 2017)."""

from __future__ import annotations

import numpy as np

from .. import utils
from .._validation import check_float
from ..backend import get_backend
from ..distances import LpDistance
from .base_miner import BaseMiner


def _require_unit_euclidean(miner):
    d = miner.distance
    if not (type(d) is LpDistance and d.p == 2 and d.power == 1 and d.normalize_embeddings):
        raise ValueError(
            f"{type(miner).__name__} requires distance=LpDistance(p=2, power=1, "
            f"normalize_embeddings=True), got {d!r}"
        )


class AngularMiner(BaseMiner):
    """Triplets whose angle at the negative exceeds ``angle`` degrees.

    ``AngularMiner(angle=20, distance=None, backend="mantissa")``: ``(a, p, n)`` int64 sorted by
    (a, p, n), kept when ``arctan(||x_a - x_p|| / (2 ||x_n - (x_a + x_p) / 2||)) > radians(angle)``
    on the embeddings as given (eps 1e-6, as PML). ``stats``: ``average_angle``, ``min_angle``,
    ``max_angle`` in degrees. Details: docs/miners.md.

    Raises ``ValueError`` for a distance other than ``LpDistance(p=2, power=1,
    normalize_embeddings=True)``, a non-finite ``angle`` or bad call inputs (``BaseMiner``).
    Source: J. Wang et al., "Deep Metric Learning with Angular Loss", ICCV 2017.
    """

    def __init__(self, angle=20, **kwargs) -> None:
        super().__init__(**kwargs)
        _require_unit_euclidean(self)
        self.angle_degrees = check_float(angle, "angle")
        self.angle = float(np.radians(self.angle_degrees))

    def mine(
        self, embeddings: np.ndarray, labels: np.ndarray, ref_emb: np.ndarray | None, ref_labels: np.ndarray
    ):
        lab, ref_lab, same = utils._resolve(labels, ref_labels)
        ref = embeddings if ref_emb is None else ref_emb
        a, p, n, st = get_backend(self.backend).angular_mine(embeddings, ref, lab, ref_lab, same, self.angle)
        if st[0] > 0:
            fin = st[1] > 0
            self._angle_stats = dict(
                average_angle=float(st[2] / st[1]) if fin else float("nan"),
                min_angle=float(st[3]) if fin else float("nan"),
                max_angle=float(st[4]) if fin else float("nan"),
            )
        else:
            self._angle_stats = {}
        return a, p, n

    def output_assertion(self, output) -> None:
        super().output_assertion(output)
        self.stats.update(getattr(self, "_angle_stats", {}))

    def __repr__(self) -> str:
        return f"AngularMiner(angle={self.angle_degrees}, distance={self.distance!r})"
