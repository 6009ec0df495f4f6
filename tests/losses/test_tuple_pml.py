"""Angular / Margin / TupletMargin / IntraPairVariance / VICReg / MultipleLosses, DoNothingReducer and
MultipleReducers inside losses, against pytorch-metric-learning (value and gradient by torch
autograd in float64, within 1e-4 relative)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

torch = pytest.importorskip("torch")
pml = pytest.importorskip("pytorch_metric_learning")
from pytorch_metric_learning import distances as pd, losses as pl, miners as pm, reducers as pr  # noqa: E402

from mantissa_embed import distances, losses, miners, reducers  # noqa: E402

K = 3


def _data(seed, n, d, m=None, scale=1.0):
    rng = np.random.default_rng(seed)
    x = (scale * rng.standard_normal((n, d))).astype(np.float32)
    y = rng.integers(0, K, n)
    if m is None:
        return x, y, None, None
    return x, y, (scale * rng.standard_normal((m, d))).astype(np.float32), rng.integers(0, K, m)


def _t(a, grad=False):
    return (
        None
        if a is None
        else torch.tensor(a.astype(np.float64) if a.dtype.kind == "f" else a, requires_grad=grad)
    )


def _pml(loss, x, y, r=None, ry=None, it=None):
    xt, rt = _t(x, True), _t(r, True)
    out = loss(
        xt,
        _t(y),
        indices_tuple=None if it is None else tuple(torch.tensor(v) for v in it),
        ref_emb=rt,
        ref_labels=_t(ry),
    )
    if torch.is_tensor(out) and out.requires_grad:
        out.backward()
    g = np.zeros(x.shape) if xt.grad is None else xt.grad.numpy()
    rg = None if r is None else (np.zeros(r.shape) if rt.grad is None else rt.grad.numpy())
    return float(out), g, rg


def _close_grad(ours, theirs, scale=None):
    # atol: 1e-4 of the largest gradient entry (of the batch and the reference set together),
    # at least 1e-6: the float32 sums over O(N^2) pairs round at that level
    scale = max(np.abs(theirs).max(initial=0) if scale is None else scale, 1e-2)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4 * scale)


def _check(ours, theirs):
    loss, g, rg = theirs
    assert ours.loss == pytest.approx(loss, rel=1e-4, abs=1e-6)
    scale = max(np.abs(g).max(initial=0), 0 if rg is None else np.abs(rg).max(initial=0))
    _close_grad(ours.grad, g, scale)
    if rg is not None:
        _close_grad(ours.ref_grad, rg, scale)


def _mined(kind, x, y):
    xt, yt = torch.tensor(x), torch.tensor(y)
    if kind == "pairs":
        return tuple(v.numpy() for v in pm.PairMarginMiner(0.2, 0.8)(xt, yt))
    if kind == "triplets":
        return tuple(v.numpy() for v in pm.TripletMarginMiner(0.3)(xt, yt))
    return None


LOSSES = {
    "angular": (lambda: losses.AngularLoss(), lambda: pl.AngularLoss()),
    "angular30": (lambda: losses.AngularLoss(alpha=30), lambda: pl.AngularLoss(alpha=30)),
    "margin": (lambda: losses.MarginLoss(), lambda: pl.MarginLoss()),
    "margin_sim": (
        lambda: losses.MarginLoss(margin=0.1, beta=0.3, distance=distances.CosineSimilarity()),
        lambda: pl.MarginLoss(margin=0.1, beta=0.3, distance=pd.CosineSimilarity()),
    ),
    "margin_mean": (
        lambda: losses.MarginLoss(beta=0.9, reducer=reducers.MeanReducer()),
        lambda: pl.MarginLoss(beta=0.9, reducer=pr.MeanReducer()),
    ),
    "margin_thr": (
        lambda: losses.MarginLoss(beta=0.9, reducer=reducers.ThresholdReducer(low=0.1)),
        lambda: pl.MarginLoss(beta=0.9, reducer=pr.ThresholdReducer(low=0.1)),
    ),
    "tuplet": (lambda: losses.TupletMarginLoss(), lambda: pl.TupletMarginLoss()),
    "tuplet_small": (
        lambda: losses.TupletMarginLoss(margin=10, scale=8),
        lambda: pl.TupletMarginLoss(margin=10, scale=8),
    ),
    "ipv": (lambda: losses.IntraPairVarianceLoss(), lambda: pl.IntraPairVarianceLoss()),
    "ipv_lp": (
        lambda: losses.IntraPairVarianceLoss(pos_eps=0.05, neg_eps=0.1, distance=distances.LpDistance()),
        lambda: pl.IntraPairVarianceLoss(pos_eps=0.05, neg_eps=0.1, distance=pd.LpDistance()),
    ),
    "ipv_sum": (
        lambda: losses.IntraPairVarianceLoss(reducer=reducers.SumReducer()),
        lambda: pl.IntraPairVarianceLoss(reducer=pr.SumReducer()),
    ),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 20),
    d=st.integers(2, 8),
    mode=st.sampled_from(["all", "ref", "pairs", "triplets"]),
)
def test_loss_vs_pml(name, seed, n, d, mode):
    ours_f, theirs_f = LOSSES[name]
    x, y, r, ry = _data(seed, n, d, m=int(seed % 9) + 1 if mode == "ref" else None)
    it = _mined(mode, x, y) if n else None
    if n == 0 and mode in ("pairs", "triplets"):
        mode = "all"
    ours = ours_f()(x, y, it, ref_emb=r, ref_labels=ry)
    _check(ours, _pml(theirs_f(), x, y, r, ry, it))


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 20),
    d=st.integers(2, 6),
    nu=st.sampled_from([0.0, 0.2]),
    per_class=st.booleans(),
    mode=st.sampled_from(["all", "ref", "triplets"]),
    red=st.sampled_from(["divisor", "mean", "sum", "thr"]),
)
def test_margin_learn_beta_vs_pml(seed, n, d, nu, per_class, mode, red):
    x, y, r, ry = _data(seed, n, d, m=5 if mode == "ref" else None)
    it = _mined(mode, x, y)
    nc = K if per_class else None
    R = {
        "divisor": (lambda: None, lambda: None),
        "mean": (reducers.MeanReducer, pr.MeanReducer),
        "sum": (reducers.SumReducer, pr.SumReducer),
        "thr": (lambda: reducers.ThresholdReducer(low=0.05), lambda: pr.ThresholdReducer(low=0.05)),
    }[red]
    ours = losses.MarginLoss(nu=nu, learn_beta=True, num_classes=nc, reducer=R[0]())
    theirs = pl.MarginLoss(nu=nu, learn_beta=True, num_classes=nc, reducer=R[1]()).double()
    if per_class:
        b = np.array([0.8, 1.0, 1.3])
        ours.beta.data[...] = b
        with torch.no_grad():
            theirs.beta.copy_(torch.tensor(b))
    out = ours(x, y, it, ref_emb=r, ref_labels=ry)
    _check(out, _pml(theirs, x, y, r, ry, it))
    tg = np.zeros(ours.beta.shape) if theirs.beta.grad is None else theirs.beta.grad.numpy()
    np.testing.assert_allclose(ours.beta.grad, tg, rtol=1e-4, atol=1e-6)
    assert ours.parameters()[0] is ours.beta


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 24),
    d=st.integers(1, 8),
    ref=st.booleans(),
    scale=st.sampled_from([0.1, 1.0, 5.0]),
    params=st.sampled_from([(25, 25, 1, 1e-4), (1.0, 2.0, 0.5, 1e-2)]),
)
def test_vicreg_vs_pml(seed, n, d, ref, scale, params):
    if n == 1:
        n = 2  # PML gives NaN at N = 1 (unbiased variance); documented difference
    rng = np.random.default_rng(seed)
    x = (scale * rng.standard_normal((n, d))).astype(np.float32)
    r = (x + 0.3 * rng.standard_normal((n, d))).astype(np.float32) if ref else None
    lam, mu, v, eps = params
    ours = losses.VICRegLoss(lam, mu, v, eps)(x, ref_emb=r)
    theirs = pl.VICRegLoss(invariance_lambda=lam, variance_mu=mu, covariance_v=v, eps=eps)
    xt, rt = _t(x, True), _t(r, True)
    if n == 0:
        assert ours.loss == 0.0 and not ours.grad.any()
        return
    out = theirs(xt, ref_emb=rt)
    out.backward()
    assert ours.loss == pytest.approx(out.item(), rel=1e-4, abs=1e-6)
    _close_grad(ours.grad, xt.grad.numpy())
    if ref:
        _close_grad(ours.ref_grad, rt.grad.numpy())


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 16),
    d=st.integers(2, 6),
    as_dict=st.booleans(),
    with_miners=st.booleans(),
)
def test_multiple_losses_vs_pml(seed, n, d, as_dict, with_miners):
    x, y, _, _ = _data(seed, n, d)
    ol = [losses.TripletMarginLoss(margin=0.2), losses.ContrastiveLoss(), losses.MarginLoss()]
    tl = [pl.TripletMarginLoss(margin=0.2), pl.ContrastiveLoss(), pl.MarginLoss()]
    w = [1.0, 0.5, 2.0]
    om = [miners.TripletMarginMiner(0.3), None, miners.PairMarginMiner(0.2, 0.8)] if with_miners else None
    tm = [pm.TripletMarginMiner(0.3), None, pm.PairMarginMiner(0.2, 0.8)] if with_miners else None
    if as_dict:
        keys = ["t", "c", "m"]
        ol, tl, w = dict(zip(keys, ol)), dict(zip(keys, tl)), dict(zip(keys, w))
        if with_miners:
            om, tm = {"t": om[0], "m": om[2]}, {"t": tm[0], "m": tm[2]}
    ours = losses.MultipleLosses(ol, miners=om, weights=w)(x, y)
    xt = _t(x, True)
    out = pl.MultipleLosses(tl, miners=tm, weights=w)(xt, _t(y))
    if out.requires_grad:
        out.backward()
    assert ours.loss == pytest.approx(out.item(), rel=1e-4, abs=1e-6)
    _close_grad(ours.grad, np.zeros(x.shape) if xt.grad is None else xt.grad.numpy())
    assert ours.loss == pytest.approx(sum(ours.terms.values()), rel=1e-9, abs=1e-12)


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 16),
    d=st.integers(2, 6),
    mined=st.booleans(),
    which=st.sampled_from(["contrastive", "ipv", "margin"]),
)
def test_multiple_reducers_inside_loss_vs_pml(seed, n, d, mined, which):
    x, y, _, _ = _data(seed, n, d)
    it = _mined("pairs", x, y) if mined else None
    if which == "contrastive":
        ours = losses.ContrastiveLoss(
            reducer=reducers.MultipleReducers(
                {"pos_loss": reducers.SumReducer(), "neg_loss": reducers.ThresholdReducer(low=0.1)},
                default_reducer=reducers.MeanReducer(),
            )
        )
        theirs = pl.ContrastiveLoss(
            reducer=pr.MultipleReducers(
                {"pos_loss": pr.SumReducer(), "neg_loss": pr.ThresholdReducer(low=0.1)},
                default_reducer=pr.MeanReducer(),
            )
        )
    elif which == "ipv":
        ours = losses.IntraPairVarianceLoss(
            reducer=reducers.MultipleReducers({"neg_loss": reducers.SumReducer()})
        )
        theirs = pl.IntraPairVarianceLoss(reducer=pr.MultipleReducers({"neg_loss": pr.SumReducer()}))
    else:
        ours = losses.MarginLoss(
            learn_beta=True,
            nu=0.1,
            reducer=reducers.MultipleReducers(
                {"margin_loss": reducers.DivisorReducer()}, default_reducer=reducers.SumReducer()
            ),
        )
        theirs = pl.MarginLoss(
            learn_beta=True,
            nu=0.1,
            reducer=pr.MultipleReducers(
                {"margin_loss": pr.DivisorReducer()}, default_reducer=pr.SumReducer()
            ),
        ).double()
    _check(ours(x, y, it), _pml(theirs, x, y, None, None, it))


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 12),
    d=st.integers(2, 6),
    which=st.sampled_from(["contrastive", "triplet", "angular", "margin", "tuplet", "ipv", "vicreg"]),
)
def test_do_nothing_reducer_vs_pml(seed, n, d, which):
    """PML returns the loss dict; ours returns its sum (and the gradient of the sum) plus the dict."""
    x, y, _, _ = _data(seed, n, d)
    make = {
        "contrastive": (losses.ContrastiveLoss, pl.ContrastiveLoss),
        "triplet": (losses.TripletMarginLoss, pl.TripletMarginLoss),
        "angular": (losses.AngularLoss, pl.AngularLoss),
        "margin": (losses.MarginLoss, pl.MarginLoss),
        "tuplet": (losses.TupletMarginLoss, pl.TupletMarginLoss),
        "ipv": (losses.IntraPairVarianceLoss, pl.IntraPairVarianceLoss),
        "vicreg": (losses.VICRegLoss, pl.VICRegLoss),
    }[which]
    if which == "vicreg" and n < 2:  # PML: NaN (unbiased variance of < 2 rows)
        x = np.vstack([x, np.ones((2 - n, d), np.float32)])
        n, y = 2, np.zeros(2, np.int64)
    ours = make[0](reducer=reducers.DoNothingReducer())
    theirs = make[1](reducer=pr.DoNothingReducer())
    xt = _t(x, True)
    if which == "vicreg":
        out, dic = ours(x), theirs(xt)
    else:
        out, dic = ours(x, y), theirs(xt, _t(y))
    assert set(out.unreduced) == set(dic)
    total = 0
    for name, info in dic.items():
        mine = out.unreduced[name]
        tl = info["losses"]
        if torch.is_tensor(tl):
            assert mine["reduction_type"] == info["reduction_type"]
            np.testing.assert_allclose(
                np.ravel(mine["losses"]), np.ravel(tl.detach().numpy()), rtol=1e-4, atol=1e-6
            )
            total = total + tl.sum()
        else:
            assert np.all(np.asarray(mine["losses"]) == 0)
        assert out.terms[name] == pytest.approx(float(np.sum(mine["losses"])), rel=1e-9, abs=1e-12)
    assert out.loss == pytest.approx(float(total), rel=1e-4, abs=1e-6)
    if torch.is_tensor(total) and total.requires_grad:
        total.backward()
    _close_grad(out.grad, np.zeros(x.shape) if xt.grad is None else xt.grad.numpy())
