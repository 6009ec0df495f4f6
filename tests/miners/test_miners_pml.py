"""Oracle: TripletMarginMiner, BatchHardMiner and PairMarginMiner return pytorch-metric-learning's
index sets (and order) on the same inputs. Decisions within float32 rounding of a threshold (or a
tie) may go either way; such elements are tolerated, judged on a float64 distance matrix."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import labelled_batch as _data, mat64 as _mat64
from mantissa_embed import distances, miners

torch = pytest.importorskip("torch")
pml_miners = pytest.importorskip("pytorch_metric_learning.miners")
pml_dist = pytest.importorskip("pytorch_metric_learning.distances")


TOL = 1e-5


def _run_pml(miner, x, y, r, ry):
    out = miner(
        torch.tensor(x),
        torch.tensor(y),
        None if r is None else torch.tensor(r),
        None if ry is None else torch.tensor(ry),
    )
    return tuple(t.numpy() for t in out)


common = dict(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 30),
    m=st.one_of(st.none(), st.integers(1, 20)),
    d=st.integers(2, 8),
    k=st.integers(1, 5),
    cosine=st.booleans(),
)


@settings(max_examples=50, deadline=None)
@given(
    kind=st.sampled_from(["all", "hard", "semihard", "easy"]),
    margin=st.sampled_from([0.0, 0.2, 0.5]),
    **common,
)
def test_triplet_margin_miner(kind, margin, seed, n, m, d, k, cosine):
    x, y, r, ry = _data(seed, n, m, d, k)
    ours = miners.TripletMarginMiner(
        margin=margin, type_of_triplets=kind, distance=distances.CosineSimilarity() if cosine else None
    )(x, y, r, ry)
    theirs = _run_pml(
        pml_miners.TripletMarginMiner(
            margin=margin, type_of_triplets=kind, distance=pml_dist.CosineSimilarity() if cosine else None
        ),
        x,
        y,
        r,
        ry,
    )
    a, b = set(zip(*(t.tolist() for t in ours))), set(zip(*(t.tolist() for t in theirs)))
    mat = _mat64(x, r, cosine)
    for t in a ^ b:  # only borderline triplets may differ
        tm = mat[t[0], t[1]] - mat[t[0], t[2]] if cosine else mat[t[0], t[2]] - mat[t[0], t[1]]
        assert min(abs(tm - margin), abs(tm)) < TOL, (t, tm)
    if a == b:
        assert all(np.array_equal(u, v) for u, v in zip(ours, theirs))  # same order too


@settings(max_examples=50, deadline=None)
@given(**common)
def test_batch_hard_miner(seed, n, m, d, k, cosine):
    x, y, r, ry = _data(seed, n, m, d, k)
    ours = miners.BatchHardMiner(distance=distances.CosineSimilarity() if cosine else None)(x, y, r, ry)
    theirs = _run_pml(
        pml_miners.BatchHardMiner(distance=pml_dist.CosineSimilarity() if cosine else None), x, y, r, ry
    )
    np.testing.assert_array_equal(ours[0], theirs[0])
    mat = _mat64(x, r, cosine)
    for i, (pa, pb, na, nb) in enumerate(zip(ours[1], theirs[1], ours[2], theirs[2])):
        a = ours[0][i]
        assert pa == pb or abs(mat[a, pa] - mat[a, pb]) < TOL  # a tie within rounding
        assert na == nb or abs(mat[a, na] - mat[a, nb]) < TOL


@settings(max_examples=50, deadline=None)
@given(pm=st.sampled_from([0.1, 0.2, 0.6]), nm=st.sampled_from([0.5, 0.8, 1.2]), **common)
def test_pair_margin_miner(pm, nm, seed, n, m, d, k, cosine):
    x, y, r, ry = _data(seed, n, m, d, k)
    ours = miners.PairMarginMiner(
        pos_margin=pm, neg_margin=nm, distance=distances.CosineSimilarity() if cosine else None
    )(x, y, r, ry)
    theirs = _run_pml(
        pml_miners.PairMarginMiner(
            pos_margin=pm, neg_margin=nm, distance=pml_dist.CosineSimilarity() if cosine else None
        ),
        x,
        y,
        r,
        ry,
    )
    mat = _mat64(x, r, cosine)
    for (i, j), thr in (((0, 1), pm), ((2, 3), nm)):
        a = set(zip(ours[i].tolist(), ours[j].tolist()))
        b = set(zip(theirs[i].tolist(), theirs[j].tolist()))
        for pair in a ^ b:
            assert abs(mat[pair] - thr) < TOL, (pair, mat[pair], thr)
