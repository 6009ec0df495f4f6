"""Proxy / classifier losses vs pytorch-metric-learning 2.9.0 (value, embedding and weight gradients).

Our weights are copied into PML's loss; PML runs in float64 on the same float32 inputs; torch
autograd gives the reference gradients. Tolerance: 1e-4 relative.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

torch = pytest.importorskip("torch")
pml_losses = pytest.importorskip("pytorch_metric_learning.losses")
pml_miners = pytest.importorskip("pytorch_metric_learning.miners")

from mantissa_embed import losses  # noqa: E402
from mantissa_embed.regularizers import LpRegularizer  # noqa: E402

# (our class, PML factory(C, D), PML weight attribute, transpose ours -> PML, kwargs)
CASES = {
    "P2SGrad": (losses.P2SGradLoss, lambda C, D, **k: pml_losses.P2SGradLoss(D, C), "weight", True, {}),
    "NormalizedSoftmax": (
        losses.NormalizedSoftmaxLoss,
        lambda C, D, **k: pml_losses.NormalizedSoftmaxLoss(C, D, **k),
        "W",
        False,
        {"temperature": 0.1},
    ),
    "ProxyNCA": (
        losses.ProxyNCALoss,
        lambda C, D, **k: pml_losses.ProxyNCALoss(C, D, **k),
        "proxies",
        False,
        {},
    ),
    "ProxyAnchor": (
        losses.ProxyAnchorLoss,
        lambda C, D, **k: pml_losses.ProxyAnchorLoss(C, D, **k),
        "proxies",
        False,
        {},
    ),
    "SoftTriple": (
        losses.SoftTripleLoss,
        lambda C, D, **k: pml_losses.SoftTripleLoss(C, D, **k),
        "fc",
        False,
        {"centers_per_class": 3},
    ),
    "LargeMarginSoftmax": (
        losses.LargeMarginSoftmaxLoss,
        lambda C, D, **k: pml_losses.LargeMarginSoftmaxLoss(C, D, **k),
        "W",
        False,
        {},
    ),
    "ArcFace": (losses.ArcFaceLoss, lambda C, D, **k: pml_losses.ArcFaceLoss(C, D, **k), "W", False, {}),
    "SubCenterArcFace": (
        losses.SubCenterArcFaceLoss,
        lambda C, D, **k: pml_losses.SubCenterArcFaceLoss(num_classes=C, embedding_size=D, **k),
        "W",
        False,
        {"sub_centers": 2},
    ),
    "CosFace": (losses.CosFaceLoss, lambda C, D, **k: pml_losses.CosFaceLoss(C, D, **k), "W", False, {}),
    "SphereFace": (
        losses.SphereFaceLoss,
        lambda C, D, **k: pml_losses.SphereFaceLoss(C, D, **k),
        "W",
        False,
        {},
    ),
}


def _run_pml(pml, attr, W, x, y, indices_tuple=None):
    t_w = torch.tensor(W, dtype=torch.float64, requires_grad=True)
    setattr(pml, attr, torch.nn.Parameter(t_w))
    pml = pml.double()
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    ty = torch.tensor(y)
    it = None if indices_tuple is None else tuple(torch.tensor(a) for a in indices_tuple)
    loss = pml(tx, ty, it) if it is not None else pml(tx, ty)
    loss.backward()
    w = getattr(pml, attr)
    return float(loss), tx.grad.numpy(), w.grad.numpy()


def _close(a, b, rtol=1e-4):
    scale = max(np.abs(b).max(initial=0.0), 1e-6)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)


def _check(name, n, d, c, seed, extra=None, use_miner=False):
    ours_cls, pml_fn, attr, transposed, kw = CASES[name]
    kw = dict(kw, **(extra or {}))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = rng.integers(0, c, n)
    ours = ours_cls(c, d, seed=seed + 1, **{k: v for k, v in kw.items() if k != "weight_regularizer_pml"})
    W = ours.parameters()[0].data.astype(np.float64).copy()
    it = None
    if use_miner:
        it = (rng.integers(0, n, 5), rng.integers(0, n, 5), rng.integers(0, n, 5))
    out = ours(x, y, indices_tuple=it) if it is not None else ours(x, y)
    pkw = {k: v for k, v in kw.items() if k not in ("weight_regularizer", "weight_regularizer_pml")}
    if "weight_regularizer_pml" in kw:
        pkw["weight_regularizer"] = kw["weight_regularizer_pml"]
    pml = pml_fn(c, d, **pkw)
    ploss, pdx, pdw = _run_pml(pml, attr, W.T if transposed else W, x, y, it)
    assert out.loss == pytest.approx(ploss, rel=1e-4, abs=1e-6)
    _close(out.grad, pdx)
    dw = ours.parameters()[0].grad
    _close(dw.T if transposed else dw, pdw)


@pytest.mark.parametrize("name", list(CASES))
@settings(max_examples=6, deadline=None)
@given(n=st.integers(1, 12), d=st.integers(2, 8), c=st.integers(2, 6), seed=st.integers(0, 2**31))
def test_value_and_gradients_match_pml(name, n, d, c, seed):
    _check(name, n, d, c, seed)


@pytest.mark.parametrize("name", [k for k in CASES if k != "P2SGrad"])
def test_with_indices_tuple_matches_pml(name):
    _check(name, 10, 5, 4, 7, use_miner=True)


@pytest.mark.parametrize("name", [k for k in CASES if k != "P2SGrad"])
def test_with_weight_regularizer_matches_pml(name):
    from pytorch_metric_learning.regularizers import LpRegularizer as PLp

    _check(
        name,
        9,
        5,
        4,
        3,
        extra={
            "weight_regularizer": LpRegularizer(),
            "weight_reg_weight": 0.3,
            "weight_regularizer_pml": PLp(),
        },
    )


def test_nondefault_options_match_pml():
    from pytorch_metric_learning.distances import LpDistance as PLpD

    from mantissa_embed.distances import LpDistance

    ours = losses.ProxyAnchorLoss(4, 5, margin=0.2, alpha=16, distance=LpDistance(), seed=5)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 5)).astype(np.float32)
    y = rng.integers(0, 4, 8)
    out = ours(x, y)
    pml = pml_losses.ProxyAnchorLoss(4, 5, margin=0.2, alpha=16, distance=PLpD())
    ploss, pdx, pdw = _run_pml(pml, "proxies", ours.proxies.data.astype(np.float64), x, y)
    assert out.loss == pytest.approx(ploss, rel=1e-4)
    _close(out.grad, pdx)
    _close(ours.proxies.grad, pdw)
    ours = losses.LargeMarginSoftmaxLoss(4, 5, margin=3, scale=2.0, seed=1)
    out = ours(x, y)
    pml = pml_losses.LargeMarginSoftmaxLoss(4, 5, margin=3, scale=2.0)
    ploss, pdx, pdw = _run_pml(pml, "W", ours.W.data.astype(np.float64), x, y)
    assert out.loss == pytest.approx(ploss, rel=1e-4)
    _close(out.grad, pdx)
    _close(ours.W.grad, pdw)


def test_get_logits_match_pml():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((7, 6)).astype(np.float32)
    for name, (cls, fn, attr, transposed, kw) in CASES.items():
        ours = cls(5, 6, seed=1, **kw)
        if not hasattr(ours, "get_logits"):
            continue
        pml = fn(5, 6, **kw)
        setattr(pml, attr, torch.nn.Parameter(torch.tensor(ours.parameters()[0].data, dtype=torch.float64)))
        pml = pml.double()
        ref = pml.get_logits(torch.tensor(x, dtype=torch.float64)).detach().numpy()
        _close(ours.get_logits(x), ref, rtol=1e-5)


def test_cross_entropy_matches_torch():
    rng = np.random.default_rng(3)
    z = (rng.standard_normal((11, 7)) * 5).astype(np.float32)
    y = rng.integers(0, 7, 11)
    out = losses.CrossEntropyLoss()(z, y)
    tz = torch.tensor(z, dtype=torch.float64, requires_grad=True)
    ref = torch.nn.functional.cross_entropy(tz, torch.tensor(y))
    ref.backward()
    assert out.loss == pytest.approx(float(ref), rel=1e-6)
    _close(out.grad, tz.grad.numpy(), rtol=1e-5)


def test_reducers_match_pml():
    from pytorch_metric_learning import reducers as pr

    from mantissa_embed.reducers import MeanReducer, MultipleReducers, SumReducer

    rng = np.random.default_rng(6)
    x = rng.standard_normal((10, 5)).astype(np.float32)
    y = rng.integers(0, 4, 10)
    ours = losses.ProxyAnchorLoss(
        4, 5, seed=1, reducer=MultipleReducers({"pos_loss": MeanReducer()}, default_reducer=SumReducer())
    )
    out = ours(x, y)
    pml = pml_losses.ProxyAnchorLoss(
        4, 5, reducer=pr.MultipleReducers({"pos_loss": pr.MeanReducer()}, default_reducer=pr.SumReducer())
    )
    ploss, pdx, pdw = _run_pml(pml, "proxies", ours.proxies.data.astype(np.float64), x, y)
    assert out.loss == pytest.approx(ploss, rel=1e-4)
    _close(out.grad, pdx)
    _close(ours.proxies.grad, pdw)
    ours = losses.ArcFaceLoss(4, 5, seed=2, reducer=SumReducer())
    out = ours(x, y)
    pml = pml_losses.ArcFaceLoss(4, 5, reducer=pr.SumReducer())
    ploss, pdx, pdw = _run_pml(pml, "W", ours.W.data.astype(np.float64), x, y)
    assert out.loss == pytest.approx(ploss, rel=1e-4)
    _close(out.grad, pdx)
    _close(ours.W.grad, pdw)
