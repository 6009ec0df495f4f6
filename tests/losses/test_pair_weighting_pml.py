"""Oracle: MultiSimilarityLoss, CircleLoss, LiftedStructureLoss, GeneralizedLiftedStructureLoss and
SignalToNoiseRatioContrastiveLoss equal pytorch-metric-learning's, value and gradient (torch
autograd on the same inputs), rtol 1e-4: all pairs, mined pairs / triplets, ref_emb, several
distances and reducers, non-default parameters."""

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
    "cos": (lambda: distances.CosineSimilarity(), lambda: pml_dist.CosineSimilarity()),
}
REDUCERS = {
    "avg": (reducers.AvgNonZeroReducer, pml_red.AvgNonZeroReducer),
    "mean": (reducers.MeanReducer, pml_red.MeanReducer),
    "sum": (reducers.SumReducer, pml_red.SumReducer),
}


def _mat64(kind, x, r):
    x = x.astype(np.float64)
    r = x if r is None else r.astype(np.float64)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    r = r / np.linalg.norm(r, axis=1, keepdims=True)
    if kind == "cos":
        return x @ r.T
    if kind == "snr":
        return np.var(x[:, None] - r[None], axis=2, ddof=1) / np.var(x, axis=1, ddof=1)[:, None]
    d = np.linalg.norm(x[:, None] - r[None], axis=2)
    return d**2 if kind == "lp_sq" else d


def _mined(seed, y, ry, kind):
    """None (all pairs), a random half of the pairs, or a random third of the triplets."""
    if kind == "all":
        return None
    keep = np.random.default_rng(seed)
    if kind == "pairs":
        a1, p, a2, n = utils.get_all_pairs_indices(y, ry)
        k1, k2 = keep.random(len(a1)) < 0.5, keep.random(len(a2)) < 0.5
        return a1[k1], p[k1], a2[k2], n[k2]
    a, p, n = utils.get_all_triplets_indices(y, ry)
    k = keep.random(len(a)) < 0.3
    return a[k], p[k], n[k]


def _pairs(y, ry, it):
    if it is None:
        return utils.get_all_pairs_indices(y, ry)
    return (it[0], it[1], it[0], it[2]) if len(it) == 3 else it


common = dict(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 24),
    m=st.one_of(st.none(), st.integers(2, 16)),
    d=st.integers(2, 10),
    k=st.integers(2, 5),
    red=st.sampled_from(sorted(REDUCERS)),
    mined=st.sampled_from(["all", "pairs", "triplets"]),
)


@settings(max_examples=40, deadline=None)
@given(
    dist=st.sampled_from(sorted(DISTANCES)),
    params=st.sampled_from([(2, 50, 0.5), (1, 10, 0.2), (3, 40, 0.8)]),
    **common,
)
def test_multi_similarity(dist, params, seed, n, m, d, k, red, mined):
    x, y, r, ry = _data(seed, n, m, d, k)
    it = _mined(seed, y, ry, mined)
    alpha, beta, base = params
    if dist != "cos":
        base = 1.0 - base  # a distance threshold on the Euclidean scale
    ours = losses.MultiSimilarityLoss(
        alpha, beta, base, distance=DISTANCES[dist][0](), reducer=REDUCERS[red][0]()
    )
    theirs = pml_losses.MultiSimilarityLoss(
        alpha, beta, base, distance=DISTANCES[dist][1](), reducer=REDUCERS[red][1]()
    )
    compare(ours(x, y, it, r, ry), pml_call(theirs, x, y, r, ry, it))


@settings(max_examples=40, deadline=None)
@given(params=st.sampled_from([(0.4, 80), (0.25, 256), (0.25, 128), (0.1, 16)]), **common)
def test_circle(params, seed, n, m, d, k, red, mined):
    x, y, r, ry = _data(seed, n, m, d, k)
    it = _mined(seed, y, ry, mined)
    mm, gamma = params
    ours = losses.CircleLoss(m=mm, gamma=gamma, reducer=REDUCERS[red][0]())
    theirs = pml_losses.CircleLoss(m=mm, gamma=gamma, reducer=REDUCERS[red][1]())
    compare(ours(x, y, it, r, ry), pml_call(theirs, x, y, r, ry, it))


@settings(max_examples=40, deadline=None)
@given(
    dist=st.sampled_from(sorted(DISTANCES)),
    margins=st.sampled_from([(1.0, 0.0), (0.5, 0.2), (1.4, 0.1)]),
    **common,
)
def test_lifted_structure(dist, margins, seed, n, m, d, k, red, mined):
    x, y, r, ry = _data(seed, n, m, d, k)
    it = _mined(seed, y, ry, mined)
    nm, pm = margins
    if dist == "cos":
        nm, pm = nm - 0.7, 1 - pm
    ours = losses.LiftedStructureLoss(
        neg_margin=nm, pos_margin=pm, distance=DISTANCES[dist][0](), reducer=REDUCERS[red][0]()
    )
    theirs = pml_losses.LiftedStructureLoss(
        neg_margin=nm, pos_margin=pm, distance=DISTANCES[dist][1](), reducer=REDUCERS[red][1]()
    )
    compare(ours(x, y, it, r, ry), pml_call(theirs, x, y, r, ry, it))


@settings(max_examples=40, deadline=None)
@given(
    dist=st.sampled_from(sorted(DISTANCES)),
    margins=st.sampled_from([(1.0, 0.0), (0.5, 0.2), (3.0, 0.1)]),
    **common,
)
def test_generalized_lifted_structure(dist, margins, seed, n, m, d, k, red, mined):
    x, y, r, ry = _data(seed, n, m, d, k)
    it = _mined(seed, y, ry, mined)
    nm, pm = margins
    inv = dist == "cos"
    if inv:
        nm, pm = nm - 0.7, 1 - pm
    mat = _mat64(dist, x, r)
    a1, p, a2, nn = _pairs(y, ry, it)
    pos = np.zeros(mat.shape, bool)
    neg = np.zeros(mat.shape, bool)
    pos[a1, p] = True
    neg[a2, nn] = True
    sg = -1.0 if inv else 1.0

    def lse(v, mask):
        w = np.where(mask, v, -np.inf)
        mx = np.where(mask.any(1), w.max(1, initial=-np.inf), 0)
        s = np.exp(w - mx[:, None]).sum(1)
        return np.where(mask.any(1), mx + np.log(np.where(s > 0, s, 1)), 0)

    z = lse(sg * (mat - pm), pos) + lse(sg * (nm - mat), neg)
    assume(np.abs(z[(pos | neg).any(1)]).min(initial=1) > KINK)
    ours = losses.GeneralizedLiftedStructureLoss(
        neg_margin=nm, pos_margin=pm, distance=DISTANCES[dist][0](), reducer=REDUCERS[red][0]()
    )
    theirs = pml_losses.GeneralizedLiftedStructureLoss(
        neg_margin=nm, pos_margin=pm, distance=DISTANCES[dist][1](), reducer=REDUCERS[red][1]()
    )
    compare(ours(x, y, it, r, ry), pml_call(theirs, x, y, r, ry, it))


@settings(max_examples=40, deadline=None)
@given(margins=st.sampled_from([(0.0, 1.0), (0.2, 0.8), (0.5, 1.5)]), **common)
def test_snr_contrastive(margins, seed, n, m, d, k, red, mined):
    x, y, r, ry = _data(seed, n, m, d, k)
    xn = x.astype(np.float64) / np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True)
    # SNR divides by var(x_i): a nearly constant normalized row makes d huge and ill-conditioned
    assume(np.var(xn, axis=1, ddof=1).min() > 1e-2)
    it = _mined(seed, y, ry, mined)
    pm, nm = margins
    mat = _mat64("snr", x, r)
    a1, p, a2, nn = _pairs(y, ry, it)
    v = np.concatenate([mat[a1, p] - pm, nm - mat[a2, nn]])
    assume(len(v) == 0 or np.abs(v).min() > KINK)
    ours = losses.SignalToNoiseRatioContrastiveLoss(pos_margin=pm, neg_margin=nm, reducer=REDUCERS[red][0]())
    theirs = pml_losses.SignalToNoiseRatioContrastiveLoss(
        pos_margin=pm, neg_margin=nm, reducer=REDUCERS[red][1]()
    )
    compare(ours(x, y, it, r, ry), pml_call(theirs, x, y, r, ry, it))


NAMES = [
    "MultiSimilarityLoss",
    "CircleLoss",
    "LiftedStructureLoss",
    "GeneralizedLiftedStructureLoss",
    "SignalToNoiseRatioContrastiveLoss",
]


@pytest.mark.parametrize("name", NAMES)
def test_defaults_match(name):
    """Constructor defaults, default distance and default reducer are PML's."""
    import inspect

    ours, theirs = getattr(losses, name)(), getattr(pml_losses, name)()
    assert type(ours.distance).__name__ == type(theirs.distance).__name__
    if name == "SignalToNoiseRatioContrastiveLoss":
        # PML: MultipleReducers({pos_loss: AvgNonZero, neg_loss: AvgNonZero}), as ContrastiveLoss here
        assert type(ours.reducer).__name__ == "AvgNonZeroReducer"
    else:
        assert type(ours.reducer).__name__ == type(theirs.reducer).__name__
    for attr in ("alpha", "beta", "base", "m", "gamma", "pos_margin", "neg_margin"):
        if hasattr(theirs, attr):
            assert getattr(ours, attr) == getattr(theirs, attr), attr
    sig = inspect.signature(getattr(losses, name).__init__).parameters
    for p in ("alpha", "beta", "base", "m", "gamma", "pos_margin", "neg_margin"):
        if hasattr(theirs, p):
            assert p in sig


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("miner", ["multi_similarity", "pair_margin", "semihard"])
def test_with_pml_miner_tuples_and_no_labels(name, miner):
    x, y, _, _ = _data(11, 40, None, 16, 4)
    xt, yt = torch.tensor(x), torch.tensor(y)
    m = {
        "multi_similarity": lambda: pml_miners.MultiSimilarityMiner(epsilon=0.1),
        "pair_margin": pml_miners.PairMarginMiner,
        "semihard": lambda: pml_miners.TripletMarginMiner(margin=0.3, type_of_triplets="semihard"),
    }[miner]()
    it = tuple(t.numpy() for t in m(xt, yt))
    compare(
        getattr(losses, name)()(x, None, indices_tuple=it),
        pml_call(getattr(pml_losses, name)(), x, None, it=it),
    )


@pytest.mark.parametrize("name", NAMES)
def test_zero_loss_cases_match(name):
    x = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    for y in (np.zeros(6, np.int64), np.arange(6), np.array([0, 0, 1, 1, 2, 2])):
        compare(getattr(losses, name)()(x, y), pml_call(getattr(pml_losses, name)(), x, y))
    it = (np.array([0]), np.array([1]), np.array([0]), np.array([2]))
    compare(getattr(losses, name)()(x, None, it), pml_call(getattr(pml_losses, name)(), x, None, it=it))


# PerAnchorReducer on LiftedStructureLoss is not compared: PML's raises on its (K, 1) losses.
@pytest.mark.parametrize(
    "name,red",
    [
        (n, r)
        for n in NAMES[:4]
        for r in ("per_anchor", "threshold")
        if (n, r) != ("LiftedStructureLoss", "per_anchor")
    ],
)
@pytest.mark.parametrize("with_ref", [False, True])
def test_other_reducers(name, red, with_ref):
    """PerAnchorReducer and ThresholdReducer against PML's."""
    x, y, r, ry = _data(5, 20, 9 if with_ref else None, 6, 3)
    mk = {
        "per_anchor": (
            lambda: reducers.PerAnchorReducer(reducers.MeanReducer()),
            lambda: pml_red.PerAnchorReducer(pml_red.MeanReducer()),
        ),
        "threshold": (
            lambda: reducers.ThresholdReducer(low=0.05),
            lambda: pml_red.ThresholdReducer(low=0.05),
        ),
    }[red]
    compare(
        getattr(losses, name)(reducer=mk[0]())(x, y, ref_emb=r, ref_labels=ry),
        pml_call(getattr(pml_losses, name)(reducer=mk[1]()), x, y, r, ry),
    )
