"""Losses with each reducer vs pytorch-metric-learning (value and gradient, float64 oracle)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

torch = pytest.importorskip("torch")
pml_losses = pytest.importorskip("pytorch_metric_learning.losses")
pml_red = pytest.importorskip("pytorch_metric_learning.reducers")
pml_miners = pytest.importorskip("pytorch_metric_learning.miners")

from mantissa_embed import losses, reducers  # noqa: E402

K = 4
W = np.array([0.5, 1.0, 2.0, 1.5])
PAIRS = {
    "sum": (lambda: reducers.SumReducer(), lambda: pml_red.SumReducer()),
    "thr_low": (lambda: reducers.ThresholdReducer(low=0.1), lambda: pml_red.ThresholdReducer(low=0.1)),
    "thr_both": (
        lambda: reducers.ThresholdReducer(low=0.05, high=0.6),
        lambda: pml_red.ThresholdReducer(low=0.05, high=0.6),
    ),
    "thr_high": (lambda: reducers.ThresholdReducer(high=0.5), lambda: pml_red.ThresholdReducer(high=0.5)),
    "class_weighted": (
        lambda: reducers.ClassWeightedReducer(W),
        lambda: pml_red.ClassWeightedReducer(torch.tensor(W)),
    ),
    "per_anchor": (lambda: reducers.PerAnchorReducer(), lambda: pml_red.PerAnchorReducer()),
    "per_anchor_thr": (
        lambda: reducers.PerAnchorReducer(reducers.ThresholdReducer(low=0.2)),
        lambda: pml_red.PerAnchorReducer(pml_red.ThresholdReducer(low=0.2)),
    ),
}


def _pml(loss, x, y, it=None):
    xt = torch.tensor(x.astype(np.float64), requires_grad=True)
    out = loss(xt, torch.tensor(y), indices_tuple=None if it is None else tuple(torch.tensor(t) for t in it))
    if out.requires_grad:
        out.backward()
    g = np.zeros(x.shape) if xt.grad is None else xt.grad.numpy()
    return out.item(), g


def _check(ours, theirs):
    loss, g = theirs
    assert ours.loss == pytest.approx(loss, rel=1e-4, abs=1e-6)
    np.testing.assert_allclose(ours.grad, g, rtol=1e-4, atol=1e-4 * max(np.abs(g).max(initial=0), 1e-3))


def _data(seed, n, d):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)).astype(np.float32), rng.integers(0, K, n)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 24),
    d=st.integers(2, 8),
    red=st.sampled_from(sorted(PAIRS)),
    mined=st.booleans(),
)
def test_contrastive_with_reducer(seed, n, d, red, mined):
    x, y = _data(seed, n, d)
    it = None
    if mined:
        it = tuple(t.numpy() for t in pml_miners.PairMarginMiner(0.2, 0.8)(torch.tensor(x), torch.tensor(y)))
    ours = losses.ContrastiveLoss(pos_margin=0.1, neg_margin=0.9, reducer=PAIRS[red][0]())(x, y, it)
    theirs = _pml(
        pml_losses.ContrastiveLoss(pos_margin=0.1, neg_margin=0.9, reducer=PAIRS[red][1]()), x, y, it
    )
    _check(ours, theirs)


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 20),
    d=st.integers(2, 8),
    red=st.sampled_from(["sum", "thr_low", "thr_both", "thr_high", "class_weighted"]),
    mined=st.booleans(),
)
def test_triplet_with_reducer(seed, n, d, red, mined):
    x, y = _data(seed, n, d)
    it = None
    if mined:
        it = tuple(t.numpy() for t in pml_miners.TripletMarginMiner(0.3)(torch.tensor(x), torch.tensor(y)))
    ours = losses.TripletMarginLoss(margin=0.3, reducer=PAIRS[red][0]())(x, y, it)
    theirs = _pml(pml_losses.TripletMarginLoss(margin=0.3, reducer=PAIRS[red][1]()), x, y, it)
    _check(ours, theirs)


def test_per_anchor_triplet_not_supported_like_pml():
    x, y = _data(0, 8, 4)
    with pytest.raises(NotImplementedError):
        losses.TripletMarginLoss(reducer=reducers.PerAnchorReducer())(x, y)
    with pytest.raises(NotImplementedError):
        _pml(pml_losses.TripletMarginLoss(reducer=pml_red.PerAnchorReducer()), x, y)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31), n1=st.integers(1, 12), n2=st.integers(1, 12))
def test_multiple_reducers_loss_dict(seed, n1, n2):
    rng = np.random.default_rng(seed)
    a, b, c = rng.uniform(-0.5, 2, n1), rng.uniform(-0.5, 2, n2), rng.uniform(0, 2, n1)
    lab = rng.integers(0, K, 12)
    ia, ib = rng.integers(0, 12, n1), rng.integers(0, 12, n2)

    def make(lib, t):
        return {
            "pos_loss": {"losses": t(a), "indices": (t(ia), t(ia)), "reduction_type": "pos_pair"},
            "neg_loss": {"losses": t(b), "indices": (t(ib), t(ib)), "reduction_type": "neg_pair"},
            "other": {"losses": t(c), "indices": t(ia), "reduction_type": "element"},
        }

    ours = reducers.MultipleReducers(
        {"pos_loss": reducers.ThresholdReducer(low=0.3), "neg_loss": reducers.ClassWeightedReducer(W)},
        default_reducer=reducers.SumReducer(),
    )
    value, grads = ours(make(None, lambda v: v), np.zeros((12, 2)), lab)
    tens = {}

    def t(v):
        if v.dtype.kind == "f":
            x = torch.tensor(v, requires_grad=True)
            tens[id(v)] = x
            return x
        return torch.tensor(v)

    theirs = pml_red.MultipleReducers(
        {
            "pos_loss": pml_red.ThresholdReducer(low=0.3),
            "neg_loss": pml_red.ClassWeightedReducer(torch.tensor(W)),
        },
        default_reducer=pml_red.SumReducer(),
    )
    out = theirs(make(None, t), torch.zeros(12, 2, dtype=torch.float64), torch.tensor(lab))
    out.backward()
    assert value == pytest.approx(out.item(), rel=1e-10, abs=1e-12)
    for name, v in (("pos_loss", a), ("neg_loss", b), ("other", c)):
        gt = tens[id(v)].grad
        np.testing.assert_allclose(grads[name], np.zeros(len(v)) if gt is None else gt.numpy(), atol=1e-12)
