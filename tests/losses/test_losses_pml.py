"""Oracle: ContrastiveLoss and TripletMarginLoss equal pytorch-metric-learning's, value and
gradient (torch autograd on the same inputs), rtol 1e-4."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

torch = pytest.importorskip("torch")
pml_losses = pytest.importorskip("pytorch_metric_learning.losses")
pml_dist = pytest.importorskip("pytorch_metric_learning.distances")
pml_red = pytest.importorskip("pytorch_metric_learning.reducers")
pml_miners = pytest.importorskip("pytorch_metric_learning.miners")

from _helpers import labelled_batch as _data  # noqa: E402
from _pml_oracle import compare, pml_call  # noqa: E402
from mantissa_embed import distances, losses, reducers, utils  # noqa: E402

KINK = 1e-5  # examples with a hinge within this of its kink are skipped (float32 may decide either way)

DISTANCES = {
    "lp": (lambda: distances.LpDistance(), lambda: pml_dist.LpDistance()),
    "lp_sq": (lambda: distances.LpDistance(power=2), lambda: pml_dist.LpDistance(power=2)),
    "lp_raw": (
        lambda: distances.LpDistance(normalize_embeddings=False),
        lambda: pml_dist.LpDistance(normalize_embeddings=False),
    ),
    "cos": (lambda: distances.CosineSimilarity(), lambda: pml_dist.CosineSimilarity()),
    "dot": (
        lambda: distances.DotProductSimilarity(normalize_embeddings=False),
        lambda: pml_dist.DotProductSimilarity(normalize_embeddings=False),
    ),
}
REDUCERS = {
    "avg": (reducers.AvgNonZeroReducer, pml_red.AvgNonZeroReducer),
    "mean": (reducers.MeanReducer, pml_red.MeanReducer),
}


def _mat64(kind, x, r):
    x = x.astype(np.float64)
    r = x if r is None else r.astype(np.float64)
    if kind != "lp_raw" and kind != "dot":
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        r = r / np.linalg.norm(r, axis=1, keepdims=True)
    if kind in ("cos", "dot"):
        return x @ r.T
    d = np.linalg.norm(x[:, None] - r[None], axis=2)
    return d**2 if kind == "lp_sq" else d


common = dict(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 32),
    m=st.one_of(st.none(), st.integers(2, 20)),
    d=st.integers(2, 12),
    k=st.integers(2, 5),
    dist=st.sampled_from(sorted(DISTANCES)),
    red=st.sampled_from(sorted(REDUCERS)),
)


@settings(max_examples=60, deadline=None)
@given(pm=st.sampled_from([0.0, 0.3]), nm=st.sampled_from([0.5, 1.0, 1.3]), mined=st.booleans(), **common)
def test_contrastive(pm, nm, mined, seed, n, m, d, k, dist, red):
    x, y, r, ry = _data(seed, n, m, d, k)
    inv = dist in ("cos", "dot")
    if inv:
        pm, nm = 1 - pm, nm - 0.7
    mat = _mat64(dist, x, r)
    it = None
    if mined:
        it = utils.get_all_pairs_indices(y, ry)
        keep = np.random.default_rng(seed).random(len(it[0])) < 0.5
        it = (it[0][keep], it[1][keep], it[2], it[3])
    a1, p, a2, nn = utils.get_all_pairs_indices(y, ry) if it is None else it
    v = np.concatenate([mat[a1, p] - pm, nm - mat[a2, nn]])
    assume(len(v) == 0 or np.abs(v).min() > KINK)
    ours = losses.ContrastiveLoss(
        pos_margin=pm, neg_margin=nm, distance=DISTANCES[dist][0](), reducer=REDUCERS[red][0]()
    )
    theirs = pml_losses.ContrastiveLoss(
        pos_margin=pm, neg_margin=nm, distance=DISTANCES[dist][1](), reducer=REDUCERS[red][1]()
    )
    compare(ours(x, y, it, r, ry), pml_call(theirs, x, y, r, ry, it))


@settings(max_examples=60, deadline=None)
@given(
    margin=st.sampled_from([0.05, 0.2, 0.5]),
    swap=st.booleans(),
    smooth=st.booleans(),
    mined=st.booleans(),
    **common,
)
def test_triplet(margin, swap, smooth, mined, seed, n, m, d, k, dist, red):
    x, y, r, ry = _data(seed, n, m, d, k)
    if swap:
        r = ry = None
    mat = _mat64(dist, x, r)
    inv = dist in ("cos", "dot")
    a, p, nn = utils.get_all_triplets_indices(y, ry)
    it = None
    if mined:
        keep = np.random.default_rng(seed).random(len(a)) < 0.3
        a, p, nn = it = (a[keep], p[keep], nn[keep])
    an = mat[a, nn]
    if swap:
        pn = mat[p, nn]
        assume(len(a) == 0 or np.abs(an - pn).min() > KINK)
        an = np.maximum(an, pn) if inv else np.minimum(an, pn)
    v = ((an - mat[a, p]) if inv else (mat[a, p] - an)) + margin
    assume(smooth or len(v) == 0 or np.abs(v).min() > KINK)
    kw = dict(margin=margin, swap=swap, smooth_loss=smooth)
    ours = losses.TripletMarginLoss(distance=DISTANCES[dist][0](), reducer=REDUCERS[red][0](), **kw)
    theirs = pml_losses.TripletMarginLoss(distance=DISTANCES[dist][1](), reducer=REDUCERS[red][1](), **kw)
    compare(ours(x, y, it, r, ry), pml_call(theirs, x, y, r, ry, it))


@pytest.mark.parametrize("miner", ["semihard", "hard", "batch_hard", "pair_margin"])
@pytest.mark.parametrize("loss", ["triplet", "contrastive"])
def test_with_pml_miner_tuples_and_no_labels(miner, loss):
    """Index tuples from PML's miners, passed with labels=None."""
    x, y, _, _ = _data(7, 48, None, 16, 4)
    xt, yt = torch.tensor(x), torch.tensor(y)
    m = {
        "semihard": lambda: pml_miners.TripletMarginMiner(margin=0.3, type_of_triplets="semihard"),
        "hard": lambda: pml_miners.TripletMarginMiner(margin=0.3, type_of_triplets="hard"),
        "batch_hard": pml_miners.BatchHardMiner,
        "pair_margin": pml_miners.PairMarginMiner,
    }[miner]()
    it = tuple(t.numpy() for t in m(xt, yt))
    if loss == "triplet":
        ours, theirs = losses.TripletMarginLoss(margin=0.1), pml_losses.TripletMarginLoss(margin=0.1)
    else:
        ours, theirs = losses.ContrastiveLoss(neg_margin=0.9), pml_losses.ContrastiveLoss(neg_margin=0.9)
    compare(ours(x, None, indices_tuple=it), pml_call(theirs, x, None, it=it))


def test_zero_loss_cases_match():
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    for y in (np.zeros(5, np.int64), np.arange(5)):
        compare(losses.TripletMarginLoss()(x, y), pml_call(pml_losses.TripletMarginLoss(), x, y))
    it = (np.array([0]), np.array([1]), np.array([0]), np.array([2]))
    compare(losses.ContrastiveLoss()(x, None, it), pml_call(pml_losses.ContrastiveLoss(), x, None, it=it))


def test_random_triplets_per_anchor_is_a_valid_estimate():
    """triplets_per_anchor=k: PML draws with torch's RNG, so compare the average over draws."""
    x, y, _, _ = _data(3, 40, None, 8, 4)
    ours = losses.TripletMarginLoss(margin=0.2, triplets_per_anchor=4, reducer=reducers.MeanReducer(), seed=0)
    full = losses.TripletMarginLoss(margin=0.2, reducer=reducers.MeanReducer())(x, y).loss
    est = np.mean([ours(x, y).loss for _ in range(200)])
    torch.manual_seed(0)
    theirs = pml_losses.TripletMarginLoss(margin=0.2, triplets_per_anchor=4, reducer=pml_red.MeanReducer())
    est_pml = np.mean([theirs(torch.tensor(x), torch.tensor(y)).item() for _ in range(200)])
    assert est == pytest.approx(full, rel=0.05) and est_pml == pytest.approx(full, rel=0.05)
