"""DistanceWeightedMiner (pytorch-metric-learning; Wu et al. 2017)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import utils
from .._validation import as_generator, check_float
from .angular_miner import _require_unit_euclidean
from .base_miner import BaseMiner

if TYPE_CHECKING:
    from .._typing import Seed


class DistanceWeightedMiner(BaseMiner):
    """Random triplets whose negatives are drawn inversely to the density of distances on the sphere.

    ``DistanceWeightedMiner(cutoff=0.5, nonzero_loss_cutoff=1.4, seed=None, distance=None,
    backend="mantissa")``: ``(a, p, n)`` int64. With ``d`` the embedding dimension and
    ``D = max(dist, cutoff)``, the negative is drawn with weight
    ``exp((2 - d) log D - (d - 3)/2 log(1 - D^2/4))`` (0 for same-label pairs, ``D >=
    nonzero_loss_cutoff`` and non-finite values); each anchor gets as many triplets as its label
    has reference members, with a uniform positive. ``seed``: int, Generator or None (created
    once). Details: docs/miners.md.

    Raises ``ValueError`` for a distance other than ``LpDistance(p=2, power=1,
    normalize_embeddings=True)``, non-finite cutoffs or bad call inputs (``BaseMiner``).
    Source: C.-Y. Wu et al., "Sampling Matters in Deep Embedding Learning", ICCV 2017.
    """

    def __init__(
        self, cutoff: float = 0.5, nonzero_loss_cutoff: float = 1.4, seed: Seed = None, **kwargs
    ) -> None:
        super().__init__(**kwargs)
        _require_unit_euclidean(self)
        self.cutoff = check_float(cutoff, "cutoff")
        self.nonzero_loss_cutoff = check_float(nonzero_loss_cutoff, "nonzero_loss_cutoff")
        self.rng = as_generator(seed)

    def _weights(self, embeddings, labels, ref_emb=None, ref_labels=None):
        """The (N, M) float64 sampling weights (unnormalized rows) of the validated inputs."""
        d = float(embeddings.shape[1])
        rlab = labels if ref_labels is None else ref_labels
        mat = np.maximum(self._mat(embeddings, ref_emb).astype(np.float64), self.cutoff)
        with np.errstate(divide="ignore", invalid="ignore"):
            logw = (2.0 - d) * np.log(mat) - ((d - 3) / 2) * np.log(1.0 - 0.25 * mat**2)
        bad = ~np.isfinite(logw)
        same = labels[:, None] == rlab[None, :]
        logw = np.where(same, 0.0, logw)  # PML multiplies by the mask (max includes these 0s)
        if bad.all():
            return np.zeros_like(mat)
        with np.errstate(over="ignore"):
            w = np.exp(logw - logw[~bad].max())
        w[same | bad | (mat >= self.nonzero_loss_cutoff)] = 0.0
        return w

    def mine(
        self, embeddings: np.ndarray, labels: np.ndarray, ref_emb: np.ndarray | None, ref_labels: np.ndarray
    ):
        if embeddings.shape[0] == 0 or (ref_emb is not None and ref_emb.shape[0] == 0):
            return utils._empty(3)
        w = self._weights(embeddings, labels, ref_emb, ref_labels)
        if not w.any():
            return utils._empty(3)
        return utils.get_random_triplet_indices(labels, ref_labels, weights=w, seed=self.rng)

    def __repr__(self) -> str:
        return (
            f"DistanceWeightedMiner(cutoff={self.cutoff}, nonzero_loss_cutoff={self.nonzero_loss_cutoff}, "
            f"distance={self.distance!r})"
        )
