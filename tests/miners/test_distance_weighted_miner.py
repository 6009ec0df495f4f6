"""DistanceWeightedMiner: valid triplets, negatives only where the sampling weight is positive,
the weights follow the paper's formula (independent float64 computation), the empirical negative
frequencies follow the weights, reproducible under a seed; distance requirement."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import labelled_batch as _batch
from mantissa_embed.distances import CosineSimilarity, LpDistance
from mantissa_embed.miners import DistanceWeightedMiner


def _weights64(x, y, r, ry, cutoff, nz):
    """Sampling weights of Wu et al. 2017, section 4 (PML's variant), in float64."""

    def nrm(z):
        z = z.astype(np.float64)
        return z / np.linalg.norm(z, axis=1, keepdims=True)

    q = nrm(x)
    rr = q if r is None else nrm(r)
    ry_ = y if r is None else ry
    dist = np.maximum(np.linalg.norm(q[:, None] - rr[None], axis=2), cutoff)
    d = x.shape[1]
    w = np.zeros_like(dist)
    with np.errstate(all="ignore"):
        logw = (2.0 - d) * np.log(dist) - ((d - 3) / 2) * np.log(1.0 - 0.25 * dist**2)
    ok = np.isfinite(logw)
    neg = y[:, None] != ry_[None, :]
    ref_max = max(np.max(np.where(ok & neg, logw, -np.inf)), 0.0 if (ok & ~neg).any() else -np.inf)
    w[ok & neg] = np.exp(logw[ok & neg] - ref_max)
    w[dist >= nz] = 0
    return w, dist


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 14),
    m=st.one_of(st.none(), st.integers(0, 12)),
    d=st.integers(1, 6),
    k=st.integers(1, 4),
    cutoff=st.sampled_from([0.0, 0.5]),
    nz=st.sampled_from([1.4, 2.5]),
)
def test_valid_and_supported(seed, n, m, d, k, cutoff, nz):
    x, y, r, ry = _batch(seed, n, m, d, k)
    same = r is None
    ry_ = y if same else ry
    miner = DistanceWeightedMiner(cutoff=cutoff, nonzero_loss_cutoff=nz, seed=seed)
    a, p, nn = miner(x, y, r, ry)
    assert all(t.dtype == np.int64 for t in (a, p, nn))
    assert np.all(ry_[p] == y[a]) and np.all(ry_[nn] != y[a])
    if same:
        assert np.all(a != p)
    if len(a):
        w, dist = _weights64(x, y, r, ry, cutoff, nz)
        assert np.all(w[a, nn] > 0)
        got = miner._weights(x, y, r, ry)
        # near-antipodal pairs (1 - D^2/4 -> 0) amplify the float32 rounding of D: looser there
        far = dist > 1.9
        np.testing.assert_allclose((got / got.max())[~far], (w / w.max())[~far], rtol=1e-3, atol=1e-6)
        np.testing.assert_allclose((got / got.max())[far], (w / w.max())[far], rtol=0.05, atol=1e-4)
    # reproducible: a fresh miner with the same seed draws the same triplets
    again = DistanceWeightedMiner(cutoff=cutoff, nonzero_loss_cutoff=nz, seed=seed)(x, y, r, ry)
    assert all(np.array_equal(u, v) for u, v in zip((a, p, nn), again))


def test_negative_frequencies_follow_weights():
    x, y, _, _ = _batch(7, 12, None, 4, 3)
    miner = DistanceWeightedMiner(cutoff=0.5, nonzero_loss_cutoff=2.5, seed=np.random.default_rng(1))
    w, _ = _weights64(x, y, None, None, 0.5, 2.5)
    counts = np.zeros_like(w)
    for _ in range(300):
        a, _, nn = miner(x, y)
        np.add.at(counts, (a, nn), 1)
    anchors = np.nonzero(counts.sum(1))[0]
    for i in anchors:
        emp = counts[i] / counts[i].sum()
        want = w[i] / w[i].sum()
        assert np.abs(emp - want).max() < 0.06


def test_distance_requirement_and_errors():
    for bad in (CosineSimilarity(), LpDistance(power=2), LpDistance(normalize_embeddings=False)):
        with pytest.raises(ValueError, match="LpDistance"):
            DistanceWeightedMiner(distance=bad)
    with pytest.raises(ValueError, match="cutoff"):
        DistanceWeightedMiner(cutoff=float("inf"))
    with pytest.raises(ValueError, match="seed"):
        DistanceWeightedMiner(seed=-1)
