"""Mined triplets and pairs are valid and complete: positives share the anchor's label, negatives
do not, no self pairs, and the hard / semihard / easy / margin definitions hold against an
independent float64 distance matrix (hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import labelled_batch as _batch, mat64 as _mat64
from mantissa_embed.distances import CosineSimilarity
from mantissa_embed.miners import BatchHardMiner, PairMarginMiner, TripletMarginMiner

TOL = 1e-5  # float32 distances may fall on either side of a threshold within this


def _brute_triplets(y, ry, same):
    return {
        (a, p, n)
        for a in range(len(y))
        for p in range(len(ry))
        for n in range(len(ry))
        if ry[p] == y[a] and ry[n] != y[a] and not (same and p == a)
    }


def _assert_valid_triplets(t, y, ry, same):
    a, p, n = t
    assert all(arr.dtype == np.int64 for arr in t)
    assert np.all(ry[p] == y[a]) and np.all(ry[n] != y[a])
    if same:
        assert np.all(a != p)


batches = dict(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 12),
    m=st.one_of(st.none(), st.integers(0, 12)),
    d=st.integers(1, 5),
    k=st.integers(1, 4),
    cosine=st.booleans(),
)


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(["all", "hard", "semihard", "easy"]),
    margin=st.sampled_from([0.0, 0.2, 0.7]),
    **batches,
)
def test_triplet_margin_miner(kind, margin, seed, n, m, d, k, cosine):
    x, y, r, ry = _batch(seed, n, m, d, k)
    same = r is None
    ry_ = y if same else ry
    miner = TripletMarginMiner(
        margin=margin, type_of_triplets=kind, distance=CosineSimilarity() if cosine else None
    )
    t = miner(x, y, r, ry)
    _assert_valid_triplets(t, y, ry_, same)
    mat = _mat64(x, r, cosine)
    got = set(zip(*(a.tolist() for a in t)))
    assert len(got) == len(t[0])  # no duplicates
    assert list(zip(*t)) == sorted(zip(*t))  # PML's (a, p, n) order

    def tm(a, p, nn):
        return mat[a, p] - mat[a, nn] if cosine else mat[a, nn] - mat[a, p]

    def wanted(v, tol):
        if kind == "easy":
            return v > margin + tol
        ok = v <= margin - tol
        if kind == "hard":
            ok &= v <= -tol
        elif kind == "semihard":
            ok &= v > tol
        return ok

    for trip in _brute_triplets(y, ry_, same):
        v = tm(*trip)
        if wanted(v, TOL):
            assert trip in got, (trip, v)
        elif not wanted(v, -TOL):
            assert trip not in got, (trip, v)


@settings(max_examples=40, deadline=None)
@given(**batches)
def test_batch_hard_miner(seed, n, m, d, k, cosine):
    x, y, r, ry = _batch(seed, n, m, d, k)
    same = r is None
    ry_ = y if same else ry
    a, p, nn = BatchHardMiner(distance=CosineSimilarity() if cosine else None)(x, y, r, ry)
    _assert_valid_triplets((a, p, nn), y, ry_, same)
    mat = _mat64(x, r, cosine)
    M = len(ry_)
    expect = [
        i
        for i in range(len(y))
        if any(ry_[j] == y[i] and not (same and j == i) for j in range(M)) and np.any(ry_ != y[i])
    ]
    assert a.tolist() == expect
    for i, pi, ni in zip(a, p, nn):
        pos = [j for j in range(M) if ry_[j] == y[i] and not (same and j == i)]
        neg = [j for j in range(M) if ry_[j] != y[i]]
        hard_p = min(mat[i, pos]) if cosine else max(mat[i, pos])
        hard_n = max(mat[i, neg]) if cosine else min(mat[i, neg])
        assert mat[i, pi] == pytest.approx(hard_p, abs=TOL)
        assert mat[i, ni] == pytest.approx(hard_n, abs=TOL)


@settings(max_examples=40, deadline=None)
@given(pm=st.sampled_from([0.0, 0.2, 0.9]), nm=st.sampled_from([0.3, 0.8, 1.5]), **batches)
def test_pair_margin_miner(pm, nm, seed, n, m, d, k, cosine):
    x, y, r, ry = _batch(seed, n, m, d, k)
    same = r is None
    ry_ = y if same else ry
    a1, p, a2, nn = PairMarginMiner(
        pos_margin=pm, neg_margin=nm, distance=CosineSimilarity() if cosine else None
    )(x, y, r, ry)
    assert np.all(ry_[p] == y[a1]) and np.all(ry_[nn] != y[a2])
    if same:
        assert np.all(a1 != p)
    mat = _mat64(x, r, cosine)
    got_p, got_n = set(zip(a1.tolist(), p.tolist())), set(zip(a2.tolist(), nn.tolist()))
    for i in range(len(y)):
        for j in range(len(ry_)):
            if same and i == j:
                continue
            v = mat[i, j]
            if ry_[j] == y[i]:
                hit, edge = (v < pm, abs(v - pm) < TOL) if cosine else (v > pm, abs(v - pm) < TOL)
                assert edge or ((i, j) in got_p) == hit
            else:
                hit, edge = (v > nm, abs(v - nm) < TOL) if cosine else (v < nm, abs(v - nm) < TOL)
                assert edge or ((i, j) in got_n) == hit


def test_miner_errors():
    x = np.zeros((4, 2), np.float32)
    y = np.array([0, 0, 1, 1])
    m = TripletMarginMiner()
    with pytest.raises(ValueError, match="type_of_triplets"):
        TripletMarginMiner(type_of_triplets="medium")
    with pytest.raises(ValueError, match="embeddings"):
        m(np.full((4, 2), np.nan, np.float32), y)
    with pytest.raises(TypeError, match="labels"):
        m(x, y.astype(float))
    with pytest.raises(TypeError, match="labels"):
        m(x, None)
    with pytest.raises(ValueError, match="labels must have length 4"):
        m(x, y[:3])
    with pytest.raises(ValueError, match="ref_labels is required"):
        m(x, y, ref_emb=x)
    with pytest.raises(ValueError, match="ref_labels was given without ref_emb"):
        m(x, y, ref_labels=y.copy())
    with pytest.raises(TypeError, match="distance"):
        BatchHardMiner(distance=3)
    with pytest.raises(ValueError, match="backend"):
        PairMarginMiner(backend="cuda")


def test_empty_and_backends():
    for miner in (TripletMarginMiner(), BatchHardMiner(), PairMarginMiner()):
        out = miner(np.zeros((0, 3), np.float32), np.zeros(0, int))
        assert all(len(t) == 0 and t.dtype == np.int64 for t in out)
    x, y, _, _ = _batch(4, 30, None, 6, 3)
    for cls in (TripletMarginMiner, BatchHardMiner, PairMarginMiner):
        a, b = cls(backend="mantissa")(x, y), cls(backend="numpy")(x, y)
        assert all(np.array_equal(u, v) for u, v in zip(a, b))


@pytest.mark.parametrize("miner", [BatchHardMiner(), TripletMarginMiner(), PairMarginMiner()])
def test_zero_column_embeddings_are_rejected(miner):
    # the losses reject (N, 0) embeddings; the miners must not mine "triplets" from them
    with pytest.raises(ValueError, match=r"at least one column"):
        miner(np.zeros((4, 0), np.float32), np.array([0, 0, 1, 1]))
