"""Oracle: NTXentLoss, SupConLoss, NCALoss, NPairsLoss, InstanceLoss and SelfSupervisedLoss equal
pytorch-metric-learning's, value and gradient (torch autograd, PML run in float64 on the same
float32 inputs), rtol 1e-4: default and other distances (CosineSimilarity, LpDistance,
DotProductSimilarity), reducers, ref_emb, and indices_tuple (pairs and triplets)."""

import numpy as np
import pytest
from hypothesis import assume, example, given, settings, strategies as st

torch = pytest.importorskip("torch")
pml_losses = pytest.importorskip("pytorch_metric_learning.losses")
pml_dist = pytest.importorskip("pytorch_metric_learning.distances")
pml_red = pytest.importorskip("pytorch_metric_learning.reducers")

from _helpers import labelled_batch as _data  # noqa: E402
from _pml_oracle import compare, pml_call  # noqa: E402
from mantissa_embed import distances, losses, reducers  # noqa: E402

DISTANCES = {
    "default": (lambda: None, lambda: None),
    "cos": (lambda: distances.CosineSimilarity(), lambda: pml_dist.CosineSimilarity()),
    "lp": (lambda: distances.LpDistance(), lambda: pml_dist.LpDistance()),
    "lp_sq": (lambda: distances.LpDistance(power=2), lambda: pml_dist.LpDistance(power=2)),
    "dot": (lambda: distances.DotProductSimilarity(), lambda: pml_dist.DotProductSimilarity()),
}
REDUCERS = {
    "default": (lambda: None, lambda: None),
    "mean": (reducers.MeanReducer, pml_red.MeanReducer),
    "avg": (reducers.AvgNonZeroReducer, pml_red.AvgNonZeroReducer),
    "sum": (reducers.SumReducer, pml_red.SumReducer),
}


def _kw(dist, red):
    ours, theirs = {}, {}
    d0, d1 = DISTANCES[dist]
    r0, r1 = REDUCERS[red]
    if d0() is not None:
        ours["distance"], theirs["distance"] = d0(), d1()
    if r0() is not None:
        ours["reducer"], theirs["reducer"] = r0(), r1()
    return ours, theirs


def _compare(ours, theirs):
    loss, g, rg = theirs
    if np.isnan(loss):
        # PML's MeanReducer over no element (e.g. NCA without any same-label reference) gives
        # NaN; ours gives the documented 0 with a zero gradient
        assert ours.loss == 0.0 and not ours.grad.any()
        assert ours.ref_grad is None or not ours.ref_grad.any()
        return
    # float32 against PML's float64. Through the cosine backward of nearly parallel rows the
    # small entries cancel: on InstanceLoss(gamma=8), n=2, d=2 PML's own float32 gradient is
    # off by 3e-4 of the largest entry. So the absolute tolerance is 5e-4 of the largest
    # entry (at least 1e-6); the relative one stays 1e-4.
    compare(ours, theirs, grad_atol=lambda b: max(5e-4 * np.abs(b).max(initial=0), 1e-6))


def _random_tuple(seed, y, ry, kind):
    """A random subset of the label-valid pairs (a1, p, a2, n), or triplets (a, p, n)."""
    rng = np.random.default_rng(seed)
    same = ry is None
    ry = y if same else ry
    pos = y[:, None] == ry[None, :]
    if same:
        np.fill_diagonal(pos, False)
    a1, p = np.nonzero(pos)
    a2, n = np.nonzero(y[:, None] != ry[None, :])
    k1 = rng.random(len(a1)) < 0.6
    k2 = rng.random(len(a2)) < 0.6
    a1, p, a2, n = a1[k1], p[k1], a2[k2], n[k2]
    if kind == "pairs":
        return a1, p, a2, n
    if len(a1) == 0 or len(a2) == 0:
        return (np.zeros(0, np.int64),) * 3
    idx = rng.integers(0, len(a2), len(a1))
    keep = a2[idx] == a1
    # triplets: a negative of the same anchor where one was drawn
    t_n = np.array([n[rng.choice(np.flatnonzero(a2 == a))] if np.any(a2 == a) else -1 for a in a1], np.int64)
    ok = t_n >= 0
    del keep, idx
    return a1[ok], p[ok], t_n[ok]


common = dict(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 24),
    m=st.one_of(st.none(), st.integers(1, 16)),
    d=st.integers(2, 10),
    k=st.integers(1, 5),
    red=st.sampled_from(sorted(REDUCERS)),
)


@pytest.mark.parametrize("name", ["NTXentLoss", "SupConLoss"])
@settings(max_examples=40, deadline=None)
@given(
    dist=st.sampled_from(["default", "cos", "lp", "dot"]),
    temp=st.sampled_from([0.07, 0.1, 0.5]),
    it=st.sampled_from([None, "pairs", "triplets"]),
    **common,
)
def test_pair_softmax_losses(name, dist, temp, it, seed, n, m, d, k, red):
    x, y, r, ry = _data(seed, n, m, d, k)
    if dist == "dot":
        x, r = x * 0.3, None if r is None else r * 0.3
    ko, kt = _kw(dist, red)
    ours = getattr(losses, name)(temperature=temp, **ko)
    theirs = getattr(pml_losses, name)(temperature=temp, **kt)
    tup = None if it is None else _random_tuple(seed, y, ry, it)
    _compare(ours(x, y, indices_tuple=tup, ref_emb=r, ref_labels=ry), pml_call(theirs, x, y, r, ry, tup))


@settings(max_examples=40, deadline=None)
@given(
    dist=st.sampled_from(["default", "cos", "lp"]),
    scale=st.sampled_from([1, 0.5, 4]),
    it=st.sampled_from([None, "pairs", "triplets"]),
    **common,
)
def test_nca(dist, scale, it, seed, n, m, d, k, red):
    x, y, r, ry = _data(seed, n, m, d, k)
    ko, kt = _kw(dist, red)
    tup = None if it is None else _random_tuple(seed, y, ry, it)
    ours = losses.NCALoss(softmax_scale=scale, **ko)(x, y, indices_tuple=tup, ref_emb=r, ref_labels=ry)
    _compare(ours, pml_call(pml_losses.NCALoss(softmax_scale=scale, **kt), x, y, r, ry, tup))


@settings(max_examples=40, deadline=None)
@given(
    dist=st.sampled_from(["default", "cos", "lp_sq"]),
    it=st.sampled_from([None, "pairs", "triplets"]),
    **{k_: v for k_, v in common.items() if k_ != "m"},
)
def test_npairs(dist, it, seed, n, d, k, red):
    x, y, _, _ = _data(seed, n, None, d, k)
    ko, kt = _kw(dist, red)
    tup = None if it is None else _random_tuple(seed, y, None, it)
    ours = losses.NPairsLoss(**ko)(x, y, indices_tuple=tup)
    _compare(ours, pml_call(pml_losses.NPairsLoss(**kt), x, y, it=tup))


@settings(max_examples=40, deadline=None)
@given(gamma=st.sampled_from([64, 8, 1]), **{k_: v for k_, v in common.items() if k_ != "m"})
def test_instance(gamma, seed, n, d, k, red):
    x, y, _, _ = _data(seed, n, None, d, k)
    y = y * 7 + 3  # labels need not be 0..C-1
    ko, kt = _kw("default", red)
    if red == "avg":
        # AvgNonZeroReducer counts the rows whose loss is > 0: a row whose true loss is below
        # float rounding (PML's float64 gives ~1e-15, float32 gives 0) may be counted either way
        rows = pml_losses.InstanceLoss(gamma=gamma, reducer=pml_red.DoNothingReducer())(
            torch.tensor(x.astype(np.float64)), torch.tensor(y)
        )["loss"]["losses"].numpy()
        assume(not np.any((rows > 0) & (rows < 1e-6)))
    ours = losses.InstanceLoss(gamma=gamma, **ko)(x, y)
    _compare(ours, pml_call(pml_losses.InstanceLoss(gamma=gamma, **kt), x, y))


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("inner", ["NTXentLoss", "SupConLoss", "NCALoss", "ContrastiveLoss"])
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 12), d=st.integers(2, 8))
@example(seed=0, n=2, d=2)  # SupCon: a loss of 1e-8 that float rounding must not turn into 0
def test_self_supervised(symmetric, inner, seed, n, d):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    v = (x + 0.5 * rng.standard_normal((n, d))).astype(np.float32)
    ours = losses.SelfSupervisedLoss(getattr(losses, inner)(), symmetric=symmetric)(x, v)
    theirs = pml_losses.SelfSupervisedLoss(getattr(pml_losses, inner)(), symmetric=symmetric)
    xt = torch.tensor(x.astype(np.float64), requires_grad=True)
    vt = torch.tensor(v.astype(np.float64), requires_grad=True)
    out = theirs(xt, vt)
    if out.requires_grad:
        out.backward()
    g = np.zeros(x.shape) if xt.grad is None else xt.grad.numpy()
    gv = np.zeros(v.shape) if vt.grad is None else vt.grad.numpy()
    _compare(ours, (out.item(), g, gv))
