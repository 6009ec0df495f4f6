"""UniformHistogramMiner: valid pairs, exactly per_bin draws from every non-empty distance bin
(bins recomputed in float64; values on a bin edge tolerated), reproducible under a seed; errors."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import labelled_batch as _batch, mat64 as _mat64
from mantissa_embed.distances import CosineSimilarity
from mantissa_embed.miners import UniformHistogramMiner

TOL = 1e-5


def _check_half(vals_all, got_vals, per_bin, num_bins):
    """got_vals: distances of the drawn pairs; vals_all: of all candidate pairs."""
    lo, hi = vals_all.min(), vals_all.max()
    edges = np.linspace(lo, hi, num_bins + 1)
    if np.min(np.abs(vals_all[:, None] - edges[None, 1:-1]), initial=np.inf) < TOL:
        return  # a value on an edge: its bin depends on rounding

    def bin_of(v):
        return np.clip(np.searchsorted(edges, v, side="right") - 1, 0, num_bins - 1)

    want = np.unique(bin_of(vals_all))
    b, c = np.unique(bin_of(got_vals), return_counts=True)
    assert np.array_equal(b, want)
    assert np.all(c == per_bin)
    assert np.all(np.diff(bin_of(got_vals)) >= 0)  # ordered by bin


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 14),
    m=st.one_of(st.none(), st.integers(0, 12)),
    d=st.integers(2, 5),
    k=st.integers(1, 4),
    cosine=st.booleans(),
    nb=st.sampled_from([1, 3, 10]),
    ppb=st.integers(1, 4),
    npb=st.integers(1, 4),
)
def test_definition(seed, n, m, d, k, cosine, nb, ppb, npb):
    x, y, r, ry = _batch(seed, n, m, d, k)
    same = r is None
    ry_ = y if same else ry
    miner = UniformHistogramMiner(
        num_bins=nb,
        pos_per_bin=ppb,
        neg_per_bin=npb,
        seed=seed,
        distance=CosineSimilarity() if cosine else None,
    )
    a1, p, a2, nn = miner(x, y, r, ry)
    assert all(t.dtype == np.int64 for t in (a1, p, a2, nn))
    assert np.all(ry_[p] == y[a1]) and np.all(ry_[nn] != y[a2])
    if same:
        assert np.all(a1 != p)
    mat = _mat64(x, r, cosine)
    pos = y[:, None] == ry_[None, :]
    if same:
        np.fill_diagonal(pos, False)
    neg = y[:, None] != ry_[None, :]
    for mask, a, o, per in ((pos, a1, p, ppb), (neg, a2, nn, npb)):
        if not mask.any():
            assert len(a) == 0
            continue
        _check_half(mat[mask], mat[a, o], per, nb)
    again = UniformHistogramMiner(
        num_bins=nb,
        pos_per_bin=ppb,
        neg_per_bin=npb,
        seed=seed,
        distance=CosineSimilarity() if cosine else None,
    )(x, y, r, ry)
    assert all(np.array_equal(u, v) for u, v in zip((a1, p, a2, nn), again))


def test_draws_are_uniform_within_a_bin():
    x, y, _, _ = _batch(5, 10, None, 4, 2)
    miner = UniformHistogramMiner(num_bins=1, pos_per_bin=4000, neg_per_bin=1, seed=0)
    a1, p, _, _ = miner(x, y)
    pairs = {(i, j) for i in range(10) for j in range(10) if i != j and y[i] == y[j]}
    got, counts = np.unique(np.stack([a1, p], 1), axis=0, return_counts=True)
    assert {tuple(g) for g in got.tolist()} == pairs
    assert np.abs(counts / 4000 - 1 / len(pairs)).max() < 0.02


def test_errors():
    for kw in ("num_bins", "pos_per_bin", "neg_per_bin"):
        with pytest.raises(ValueError, match=kw):
            UniformHistogramMiner(**{kw: 0})
        with pytest.raises(TypeError, match=kw):
            UniformHistogramMiner(**{kw: 2.5})
