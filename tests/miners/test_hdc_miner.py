"""HDCMiner: keeps ceil(filter_percentage * count) of each pair kind, the hardest ones, drawn
from the batch's pairs or from a given candidate tuple; errors."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import labelled_batch as _batch, mat64 as _mat64
from mantissa_embed.distances import CosineSimilarity
from mantissa_embed.miners import HDCMiner, TripletMarginMiner

TOL = 1e-5


def _check_half(mat, anchors, others, cand, fp, hardest_large):
    """The kept pairs are ceil(fp * |cand|) members of cand, and none left out is harder."""
    k = math.ceil(fp * len(cand))
    assert len(anchors) == k
    kept = list(zip(anchors.tolist(), others.tolist()))
    rest = list(cand)
    for pr in kept:
        rest.remove(pr)  # also proves kept is a sub-multiset of cand
    if kept and rest:
        kv = np.array([mat[i, j] for i, j in kept])
        rv = np.array([mat[i, j] for i, j in rest])
        if hardest_large:
            assert kv.min() >= rv.max() - TOL
        else:
            assert kv.max() <= rv.min() + TOL
        # hardest first
        assert np.all(np.diff(kv) <= TOL) if hardest_large else np.all(np.diff(kv) >= -TOL)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 14),
    m=st.one_of(st.none(), st.integers(0, 12)),
    d=st.integers(1, 5),
    k=st.integers(1, 4),
    cosine=st.booleans(),
    fp=st.sampled_from([0.0, 0.25, 0.5, 1.0]),
)
def test_all_pairs(seed, n, m, d, k, cosine, fp):
    x, y, r, ry = _batch(seed, n, m, d, k)
    same = r is None
    ry_ = y if same else ry
    a1, p, a2, nn = HDCMiner(filter_percentage=fp, distance=CosineSimilarity() if cosine else None)(
        x, y, r, ry
    )
    assert np.all(ry_[p] == y[a1]) and np.all(ry_[nn] != y[a2])
    if same:
        assert np.all(a1 != p)
    mat = _mat64(x, r, cosine)
    pos = [(i, j) for i in range(len(y)) for j in range(len(ry_)) if ry_[j] == y[i] and not (same and i == j)]
    neg = [(i, j) for i in range(len(y)) for j in range(len(ry_)) if ry_[j] != y[i]]
    _check_half(mat, a1, p, pos, fp, hardest_large=not cosine)
    _check_half(mat, a2, nn, neg, fp, hardest_large=cosine)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 12),
    k=st.integers(1, 3),
    fp=st.sampled_from([0.3, 0.5]),
    as_pairs=st.booleans(),
)
def test_candidates_are_filtered(seed, n, k, fp, as_pairs):
    x, y, _, _ = _batch(seed, n, None, 3, k)
    a, p, nn = TripletMarginMiner(margin=0.5)(x, y)
    cand = (a, p, a, nn) if as_pairs else (a, p, nn)
    miner = HDCMiner(filter_percentage=fp)
    out = miner(x, y, indices_tuple=cand)
    mat = _mat64(x, None, False)
    _check_half(mat, out[0], out[1], list(zip(a.tolist(), p.tolist())), fp, True)
    _check_half(mat, out[2], out[3], list(zip(a.tolist(), nn.tolist())), fp, False)
    # PML's stateful form gives the same, until reset_idx
    miner.set_idx_externally(cand, y)
    assert all(np.array_equal(u, v) for u, v in zip(miner(x, y), out))
    miner.reset_idx()
    assert len(miner(x, y)[0]) == math.ceil(fp * int((y[:, None] == y[None]).sum() - n))


def test_errors():
    with pytest.raises(ValueError, match="filter_percentage"):
        HDCMiner(filter_percentage=1.5)
    with pytest.raises(ValueError, match="filter_percentage"):
        HDCMiner(filter_percentage=-0.1)
    x = np.zeros((4, 2), np.float32) + np.arange(8, dtype=np.float32).reshape(4, 2)
    y = np.array([0, 0, 1, 1])
    with pytest.raises(ValueError, match="indices_tuple"):
        HDCMiner()(x, y, indices_tuple=(np.array([0]), np.array([9]), np.array([2])))
    with pytest.raises(TypeError, match="indices_tuple"):
        HDCMiner()(x, y, indices_tuple=(np.array([0.0]), np.array([1.0]), np.array([2.0])))
