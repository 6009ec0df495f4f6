"""DistanceWeightedMiner (pytorch-metric-learning; Wu et al. 2017)."""
from __future__ import annotations

import numpy as np

from .. import utils
from .._validation import as_generator, check_float
from .angular_miner import _require_unit_euclidean
from .base_miner import BaseMiner


class DistanceWeightedMiner(BaseMiner):
    """Random triplets whose negatives are drawn with weight inverse to the density of distances
    between points on the unit sphere (distance-weighted sampling).

    ``DistanceWeightedMiner(cutoff=0.5, nonzero_loss_cutoff=1.4, seed=None, distance=None,
    backend="mantissa")``. With ``d`` the embedding dimension and ``D = max(dist, cutoff)``
    (Euclidean distance of L2-normalized embeddings)::

        log w(a, n) = (2 - d) log D - (d - 3) / 2 * log(1 - D^2 / 4)

    shifted by the largest finite log-weight of the batch and exponentiated; weights of
    same-label pairs (including ``(a, a)``), of pairs with ``D >= nonzero_loss_cutoff``, and
    non-finite ones are 0. Every anchor then gets as many triplets as its label has reference
    members (PML's ``get_random_triplet_indices``): a uniform positive (never itself) and a
    negative drawn with probability ``w(a, n) / sum_n w(a, n)``; anchors whose weights are all
    0 are dropped.

    ``seed``: int, ``numpy.random.Generator`` or None; the generator is created once, so
    successive calls draw different triplets and two miners built with the same int seed draw
    the same ones. The draws differ from PML's (torch RNG); their distribution is the same.
    The distance must be ``LpDistance(p=2, power=1, normalize_embeddings=True)``.

    Returns ``(a, p, n)`` int64.

    Reference: C.-Y. Wu, R. Manmatha, A. J. Smola, P. Krähenbühl, "Sampling Matters in Deep
    Embedding Learning", ICCV 2017; pytorch-metric-learning ``miners/distance_weighted_miner.py``.

    Raises
    ------
    ValueError
        Another distance; non-finite cutoffs; bad call inputs (see :class:`BaseMiner`).
    """

    def __init__(self, cutoff=0.5, nonzero_loss_cutoff=1.4, seed=None, **kwargs):
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
            logw = (2.0 - d) * np.log(mat) - ((d - 3) / 2) * np.log(1.0 - 0.25 * mat ** 2)
        bad = ~np.isfinite(logw)
        same = labels[:, None] == rlab[None, :]
        logw = np.where(same, 0.0, logw)  # PML multiplies by the mask (max includes these 0s)
        if bad.all():
            return np.zeros_like(mat)
        with np.errstate(over="ignore"):
            w = np.exp(logw - logw[~bad].max())
        w[same | bad | (mat >= self.nonzero_loss_cutoff)] = 0.0
        return w

    def mine(self, embeddings, labels, ref_emb, ref_labels):
        if embeddings.shape[0] == 0 or (ref_emb is not None and ref_emb.shape[0] == 0):
            return utils._empty(3)
        w = self._weights(embeddings, labels, ref_emb, ref_labels)
        if not w.any():
            return utils._empty(3)
        return utils.get_random_triplet_indices(labels, ref_labels, weights=w, seed=self.rng)

    def __repr__(self):
        return (f"DistanceWeightedMiner(cutoff={self.cutoff}, nonzero_loss_cutoff={self.nonzero_loss_cutoff}, "
                f"distance={self.distance!r})")
