"""RandomHorizontalFlip: mirror each image left-right with probability p."""

from __future__ import annotations

import numpy as np

from .._validation import check_float
from .base import Transform


class RandomHorizontalFlip(Transform):
    """Flip each image horizontally (along W) with probability ``p`` (default 0.5), as
    torchvision's ``RandomHorizontalFlip``, batched: per call ``rng.random(N) < p`` chooses the
    flipped images. Raises ValueError naming ``p`` outside [0, 1], TypeError for a non-number."""

    def __init__(self, p: float = 0.5) -> None:
        self.p = check_float(p, "p", 0)
        if self.p > 1:
            raise ValueError(f"p must be in [0, 1], got {self.p}")

    def _apply(self, X, rng, out):
        flip = rng.random(X.shape[0]) < self.p
        np.copyto(out, X)
        np.copyto(out, X[:, :, :, ::-1], where=flip[:, None, None, None])
        return out

    def _config(self):
        return {"p": self.p}
