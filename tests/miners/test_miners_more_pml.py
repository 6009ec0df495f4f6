"""Oracle: MultiSimilarityMiner, HDCMiner, AngularMiner, BatchEasyHardMiner and
EmbeddingsAlreadyPackagedAsTriplets return pytorch-metric-learning's index sets on the same
inputs; for the random DistanceWeightedMiner the sampling weights match PML's, and
UniformHistogramMiner fills the same bins. Decisions within float32 rounding of a threshold (or a tie) may go either way; such
elements are tolerated, judged on a float64 distance matrix."""

import math

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


def _pairs(t, i):
    return set(zip(t[i].tolist(), t[i + 1].tolist()))


common = dict(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 24),
    m=st.one_of(st.none(), st.integers(1, 16)),
    d=st.integers(2, 8),
    k=st.integers(1, 5),
    cosine=st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(eps=st.sampled_from([0.0, 0.1, 0.5]), **common)
def test_multi_similarity_miner(eps, seed, n, m, d, k, cosine):
    x, y, r, ry = _data(seed, n, m, d, k)
    ours = miners.MultiSimilarityMiner(epsilon=eps, distance=None if cosine else distances.LpDistance())(
        x, y, r, ry
    )
    theirs = _run_pml(
        pml_miners.MultiSimilarityMiner(epsilon=eps, distance=None if cosine else pml_dist.LpDistance()),
        x,
        y,
        r,
        ry,
    )
    mat = _mat64(x, r, cosine)
    ry_ = y if r is None else ry
    for half in (0, 2):
        a, b = _pairs(ours, half), _pairs(theirs, half)
        for i, j in a ^ b:  # only borderline pairs may differ: compare with the threshold
            row = mat[i]
            pos = (ry_ == y[i]) & ((np.arange(len(ry_)) != i) if r is None else True)
            neg = ry_ != y[i]
            if half == 0:
                thr = (row[neg].max() + eps) if cosine else (row[neg].min() - eps)
            else:
                thr = (row[pos].min() - eps) if cosine else (row[pos].max() + eps)
            assert abs(row[j] - thr) < TOL, (half, i, j)


@settings(max_examples=60, deadline=None)
@given(fp=st.sampled_from([0.0, 0.1, 0.5, 1.0]), **common)
def test_hdc_miner(fp, seed, n, m, d, k, cosine):
    x, y, r, ry = _data(seed, n, m, d, k)
    dist = distances.CosineSimilarity() if cosine else None
    ours = miners.HDCMiner(filter_percentage=fp, distance=dist)(x, y, r, ry)
    theirs = _run_pml(
        pml_miners.HDCMiner(filter_percentage=fp, distance=pml_dist.CosineSimilarity() if cosine else None),
        x,
        y,
        r,
        ry,
    )
    mat = _mat64(x, r, cosine)
    for half in (0, 2):
        assert len(ours[half]) == len(theirs[half])
        a, b = _pairs(ours, half), _pairs(theirs, half)
        if a != b:  # a tie at the cut (within float32 rounding) may swap members
            va = sorted(mat[i, j] for i, j in a)
            vb = sorted(mat[i, j] for i, j in b)
            np.testing.assert_allclose(va, vb, atol=TOL)


@settings(max_examples=30, deadline=None)
@given(fp=st.sampled_from([0.2, 0.5]), seed=st.integers(0, 2**31), n=st.integers(2, 16), k=st.integers(1, 4))
def test_hdc_miner_with_candidates(fp, seed, n, k):
    x, y, _, _ = _data(seed, n, None, 4, k)
    all_t = miners.TripletMarginMiner(margin=0.5)(x, y)
    tm = pml_miners.TripletMarginMiner(margin=0.5)
    theirs_t = _run_pml(tm, x, y, None, None)
    ours = miners.HDCMiner(filter_percentage=fp)(x, y, indices_tuple=all_t)
    pm = pml_miners.HDCMiner(filter_percentage=fp)
    pm.set_idx_externally(tuple(torch.tensor(t) for t in theirs_t), torch.tensor(y))
    theirs = _run_pml(pm, x, y, None, None)
    mat = _mat64(x, None, False)
    for half in (0, 2):
        assert len(ours[half]) == len(theirs[half])
        va = sorted(mat[i, j] for i, j in zip(ours[half], ours[half + 1]))
        vb = sorted(mat[i, j] for i, j in zip(theirs[half], theirs[half + 1]))
        np.testing.assert_allclose(va, vb, atol=TOL)


@settings(max_examples=40, deadline=None)
@given(
    angle=st.sampled_from([0, 20, 40]),
    seed=st.integers(0, 2**31),
    n=st.integers(1, 14),
    m=st.one_of(st.none(), st.integers(1, 10)),
    d=st.integers(2, 6),
    k=st.integers(1, 4),
)
def test_angular_miner(angle, seed, n, m, d, k):
    x, y, r, ry = _data(seed, n, m, d, k)
    ours = miners.AngularMiner(angle=angle)(x, y, r, ry)
    theirs = _run_pml(pml_miners.AngularMiner(angle=angle), x, y, r, ry)
    a, b = set(zip(*(t.tolist() for t in ours))), set(zip(*(t.tolist() for t in theirs)))
    ref = (x if r is None else r).astype(np.float64)
    x64 = x.astype(np.float64)
    for i, j, q in a ^ b:
        ang = math.atan(
            np.linalg.norm(x64[i] - ref[j]) / (2 * np.linalg.norm(ref[q] - (x64[i] + ref[j]) / 2))
        )
        assert abs(ang - math.radians(angle)) < 1e-4, (i, j, q)
    assert list(zip(*ours)) == sorted(zip(*ours))


STRATS = ["easy", "hard", "semihard", "all"]
valid_pairs = [
    (p, q) for p in STRATS for q in STRATS if not (p == q == "semihard") and {p, q} != {"all", "semihard"}
]


@settings(max_examples=80, deadline=None)
@given(strat=st.sampled_from(valid_pairs), ranges=st.sampled_from([None, "pos", "neg"]), **common)
def test_batch_easy_hard_miner(strat, ranges, seed, n, m, d, k, cosine):
    x, y, r, ry = _data(seed, n, m, d, k)
    ps, ns = strat
    rng_ = (0.3, 1.2) if not cosine else (-0.5, 0.7)
    kw = dict(
        pos_strategy=ps,
        neg_strategy=ns,
        allowed_pos_range=rng_ if ranges == "pos" else None,
        allowed_neg_range=rng_ if ranges == "neg" else None,
    )
    ours = miners.BatchEasyHardMiner(distance=distances.CosineSimilarity() if cosine else None, **kw)(
        x, y, r, ry
    )
    theirs = _run_pml(
        pml_miners.BatchEasyHardMiner(distance=pml_dist.CosineSimilarity() if cosine else None, **kw),
        x,
        y,
        r,
        ry,
    )
    mat = _mat64(x, r, cosine)
    for half in (0, 2):
        a, b = _pairs(ours, half), _pairs(theirs, half)
        if a == b:
            continue
        # same anchors apart from borderline ones; a differing choice must be a (near) tie
        da, db = dict(a), dict(b)
        for i in set(da) | set(db):
            if i in da and i in db:
                assert abs(mat[i, da[i]] - mat[i, db[i]]) < TOL, (half, i)
            else:
                j = da.get(i, db.get(i))
                row = mat[i]
                near = np.abs(row - row[j]) < TOL
                near[j] = False
                lo_hi = np.array(rng_)
                assert near.any() or np.min(np.abs(row[j] - lo_hi)) < TOL, (half, i)


@pytest.mark.parametrize("n", [3, 12])  # PML fails at N=0; ours returns empty arrays
def test_embeddings_already_packaged_as_triplets(n):
    x = np.random.default_rng(0).standard_normal((n, 4)).astype(np.float32)
    y = np.arange(n)
    ours = miners.EmbeddingsAlreadyPackagedAsTriplets()(x, y)
    theirs = _run_pml(pml_miners.EmbeddingsAlreadyPackagedAsTriplets(), x, y, None, None)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o, t)


@settings(max_examples=40, deadline=None)
@given(nb=st.sampled_from([1, 4, 20]), ppb=st.integers(1, 3), npb=st.integers(1, 3), **common)
def test_uniform_histogram_miner_bins(nb, ppb, npb, seed, n, m, d, k, cosine):
    """Random miner: the draws differ, but both draw per_bin pairs from the same non-empty bins,
    so the half lengths agree (unless a distance lies on a bin edge) and the drawn pairs are
    candidates of the same bins."""
    x, y, r, ry = _data(seed, n, m, d, k)
    kw = dict(num_bins=nb, pos_per_bin=ppb, neg_per_bin=npb)
    ours = miners.UniformHistogramMiner(
        seed=seed, distance=distances.CosineSimilarity() if cosine else None, **kw
    )(x, y, r, ry)
    theirs = _run_pml(
        pml_miners.UniformHistogramMiner(distance=pml_dist.CosineSimilarity() if cosine else None, **kw),
        x,
        y,
        r,
        ry,
    )
    mat = _mat64(x, r, cosine)
    ry_ = y if r is None else ry
    for half in (0, 2):
        if len(ours[half]) == len(theirs[half]):
            continue
        mask = (y[:, None] == ry_[None, :]) if half == 0 else (y[:, None] != ry_[None, :])
        if r is None and half == 0:
            np.fill_diagonal(mask, False)
        v = mat[mask]
        edges = np.linspace(v.min(), v.max(), nb + 1)[1:-1]
        assert np.min(np.abs(v[:, None] - edges[None]), initial=np.inf) < TOL, half


@settings(max_examples=40, deadline=None)
@given(
    cutoff=st.sampled_from([0.0, 0.5]),
    nz=st.sampled_from([1.4, 3.0]),
    seed=st.integers(0, 2**31),
    n=st.integers(2, 16),
    m=st.one_of(st.none(), st.integers(1, 12)),
    d=st.integers(2, 8),
    k=st.integers(1, 4),
)
def test_distance_weighted_miner_weights(cutoff, nz, seed, n, m, d, k):
    """PML's sampling weights (captured where it hands them to get_random_triplet_indices) equal
    ours after row normalization."""
    import pytorch_metric_learning.miners.distance_weighted_miner as dwm

    x, y, r, ry = _data(seed, n, m, d, k)
    captured = {}
    real = dwm.lmu.get_random_triplet_indices

    def spy(labels, ref_labels=None, t_per_anchor=None, weights=None):
        captured["w"] = weights.numpy().astype(np.float64)
        return real(labels, ref_labels=ref_labels, t_per_anchor=t_per_anchor, weights=weights)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dwm.lmu, "get_random_triplet_indices", spy)
        try:
            # float64 on PML's side: its float32 log(1 - d^2/4) loses digits near d = 2, where
            # ours (float64 inside) does not
            _run_pml(
                pml_miners.DistanceWeightedMiner(cutoff=cutoff, nonzero_loss_cutoff=nz),
                x.astype(np.float64),
                y,
                None if r is None else r.astype(np.float64),
                ry,
            )
        except RuntimeError:  # PML fails when no log-weight is finite (max of an empty tensor)
            return
    ours = miners.DistanceWeightedMiner(cutoff=cutoff, nonzero_loss_cutoff=nz, seed=0)
    w = ours._weights(x, y, r, ry)
    tot = w.sum(axis=1, keepdims=True)
    theirs = captured["w"]
    ok = tot[:, 0] > 0
    # atol: for near-antipodal pairs (d -> 2) the weight (1 - d^2/4)^((D-3)/2) amplifies the float32
    # rounding of d itself (our distances come from the float32 engine; d may even clamp at 2 and give
    # weight 0); those probabilities are tiny, hence an absolute tolerance of 5e-4 on probabilities
    np.testing.assert_allclose(w[ok] / tot[ok], theirs[ok], rtol=2e-3, atol=5e-4)
    assert np.all(~np.isfinite(theirs[~ok]) | (theirs[~ok] == 0))
