"""Proxy losses: PML names/defaults/weight shapes, init, parameter ownership, errors, empty batch."""

import math

import numpy as np
import pytest

from mantissa_embed import losses, optim
from mantissa_embed.distances import CosineSimilarity, DotProductSimilarity, LpDistance
from mantissa_embed.parameter import Parameter
from mantissa_embed.reducers import DivisorReducer, MeanReducer, SumReducer
from mantissa_embed.regularizers import LpRegularizer

C, D = 5, 6
SPECS = [  # class, weight attr, weight shape, defaults
    (losses.NormalizedSoftmaxLoss, "W", (D, C), {"temperature": 0.05}),
    (losses.ProxyNCALoss, "proxies", (C, D), {"softmax_scale": 1}),
    (losses.ProxyAnchorLoss, "proxies", (C, D), {"margin": 0.1, "alpha": 32}),
    (
        losses.SoftTripleLoss,
        "fc",
        (D, C * 10),
        {"centers_per_class": 10, "la": 20, "gamma": 10.0, "margin": 0.01},
    ),
    (losses.LargeMarginSoftmaxLoss, "W", (D, C), {"margin": 4, "scale": 1}),
    (losses.ArcFaceLoss, "W", (D, C), {"margin": math.radians(28.6), "scale": 64}),
    (
        losses.SubCenterArcFaceLoss,
        "W",
        (D, C * 3),
        {"margin": math.radians(28.6), "scale": 64, "sub_centers": 3},
    ),
    (losses.CosFaceLoss, "W", (D, C), {"margin": 0.35, "scale": 64}),
    (losses.SphereFaceLoss, "W", (D, C), {"margin": 4, "scale": 1}),
]
IDS = [s[0].__name__ for s in SPECS]


def _batch(n=8):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, D)).astype(np.float32), rng.integers(0, C, n)


@pytest.mark.parametrize("cls,attr,shape,defaults", SPECS, ids=IDS)
def test_defaults_and_weight_shape(cls, attr, shape, defaults):
    f = cls(C, D, seed=0)
    w = getattr(f, attr)
    assert isinstance(w, Parameter) and w.shape == shape and w.data.dtype == np.float32
    assert f.parameters() == [w]
    for k, v in defaults.items():
        assert getattr(f, k) == pytest.approx(v), k
    assert f.num_classes == C and f.weight_regularizer is None and f.weight_reg_weight == 1
    assert cls.__name__ in losses.__all__


def test_default_distances_and_reducers():
    assert type(losses.NormalizedSoftmaxLoss(C, D).distance) is DotProductSimilarity
    assert type(losses.ProxyNCALoss(C, D).distance) is LpDistance
    assert losses.ProxyNCALoss(C, D).distance.power == 2
    assert type(losses.ProxyAnchorLoss(C, D).reducer) is DivisorReducer
    assert type(losses.ProxyAnchorLoss(C, D).distance) is CosineSimilarity
    assert type(losses.SoftTripleLoss(C, D).distance) is CosineSimilarity
    assert type(losses.ArcFaceLoss(C, D).reducer) is MeanReducer


def test_init_distributions():
    big = 400
    w = losses.ProxyAnchorLoss(big, 50, seed=1).proxies.data  # kaiming_normal fan_out: std sqrt(2 / C)
    assert np.std(w) == pytest.approx(math.sqrt(2.0 / big), rel=0.05)
    w = losses.SoftTripleLoss(big, 50, centers_per_class=2, seed=1).fc.data  # U(+-1/sqrt(K))
    b = 1 / math.sqrt(2 * big)
    assert np.abs(w).max() <= b and np.abs(w).max() > 0.95 * b
    w = losses.NormalizedSoftmaxLoss(big, 50, seed=1).W.data  # N(0, 1)
    assert np.std(w) == pytest.approx(1.0, rel=0.05)
    a = losses.ArcFaceLoss(C, D, seed=np.random.default_rng(3)).W.data
    np.testing.assert_array_equal(a, losses.ArcFaceLoss(C, D, seed=3).W.data)
    custom = losses.CosFaceLoss(C, D, weight_init_func=lambda shape, rng: np.ones(shape))
    np.testing.assert_array_equal(custom.W.data, 1.0)


@pytest.mark.parametrize("cls", [s[0] for s in SPECS] + [losses.P2SGradLoss], ids=IDS + ["P2SGradLoss"])
def test_optimizer_ownership(cls):
    x, y = _batch()
    f = cls(C, D, seed=2)
    w = f.parameters()[0]
    w0 = w.data.copy()
    # an optimizer that is not given the loss's weights leaves them unchanged
    other = Parameter(np.ones(3))
    opt = optim.SGD([other], lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        f(x, y)
        opt.step()
    np.testing.assert_allclose(w.data, w0, rtol=1e-6, atol=1e-7)
    assert np.abs(w.grad).sum() > 0  # the gradient was accumulated, just not applied
    # given them, it moves them
    opt = optim.SGD(f.parameters(), lr=0.01)
    opt.zero_grad()
    f(x, y)
    opt.step()
    assert not np.allclose(w.data, w0)


@pytest.mark.parametrize("cls", [s[0] for s in SPECS], ids=IDS)
def test_grad_accumulates(cls):
    x, y = _batch()
    f = cls(C, D, seed=2)
    f(x, y)
    g = f.parameters()[0].grad.copy()
    f(x, y)
    np.testing.assert_allclose(f.parameters()[0].grad, 2 * g, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("cls", [s[0] for s in SPECS], ids=IDS)
def test_errors(cls):
    x, y = _batch()
    f = cls(C, D, seed=0)
    with pytest.raises(ValueError, match="labels"):
        f(x)
    with pytest.raises(ValueError, match="num_classes"):
        f(x, np.full(len(y), C))
    with pytest.raises(ValueError, match="num_classes"):
        f(x, np.full(len(y), -1))
    with pytest.raises(ValueError, match="ref_emb"):
        f(x, y, ref_emb=x.copy())
    with pytest.raises(ValueError, match="embedding_size"):
        f(x[:, :3], y)
    with pytest.raises(ValueError):
        f(np.full_like(x, np.nan), y)
    with pytest.raises(TypeError):
        f(x, y.astype(float))
    with pytest.raises(ValueError):
        f(x, y, indices_tuple=(np.array([0]), np.array([99]), np.array([1])))
    with pytest.raises(TypeError):
        cls(C, D, weight_regularizer=3)
    with pytest.raises((TypeError, ValueError)):
        cls(0, D)
    with pytest.raises(TypeError):
        cls(C, D, distance="cosine")


def test_distance_restrictions():
    with pytest.raises(TypeError, match="CosineSimilarity"):
        losses.ArcFaceLoss(C, D, distance=LpDistance())
    with pytest.raises(ValueError, match="similarity"):
        losses.SoftTripleLoss(C, D, distance=LpDistance())
    with pytest.raises(ValueError):
        losses.NormalizedSoftmaxLoss(C, D, temperature=0)


@pytest.mark.parametrize("cls", [s[0] for s in SPECS], ids=IDS)
def test_empty_batch(cls):
    f = cls(C, D, seed=0, weight_regularizer=LpRegularizer())
    out = f(np.zeros((0, D), np.float32), np.zeros(0, np.int64))
    assert out.loss == 0.0 and out.grad.shape == (0, D)
    assert set(out.terms) == set(f.sub_loss_names())
    np.testing.assert_array_equal(f.parameters()[0].grad, 0.0)


def test_terms_and_regularizers():
    x, y = _batch()
    reg = LpRegularizer()
    f = losses.ProxyAnchorLoss(
        C,
        D,
        seed=0,
        weight_regularizer=reg,
        weight_reg_weight=0.5,
        embedding_regularizer=LpRegularizer(),
        embedding_reg_weight=0.25,
    )
    out = f(x, y)
    assert set(out.terms) == {"pos_loss", "neg_loss", "weight_reg_loss", "embedding_reg_loss"}
    assert out.terms["weight_reg_loss"] == pytest.approx(0.5 * reg(f.proxies.data).loss, rel=1e-6)
    assert out.loss == pytest.approx(sum(out.terms.values()))
    g = losses.NormalizedSoftmaxLoss(C, D, seed=0, reducer=SumReducer())
    h = losses.NormalizedSoftmaxLoss(C, D, seed=0)
    assert g(x, y).loss == pytest.approx(len(y) * h(x, y).loss, rel=1e-6)


def test_get_logits_and_subcenter_outliers():
    x, y = _batch()
    for cls, *_ in SPECS:
        f = cls(C, D, seed=0)
        z = f.get_logits(x)
        assert z.shape == (len(x), C) and z.dtype == np.float32
    sc = losses.SubCenterArcFaceLoss(C, D, seed=0)
    outliers, dom = sc.get_outliers(x, y, threshold=10)
    assert dom.shape == (D, C) and outliers.dtype == np.int64
    assert set(outliers.tolist()) <= set(range(len(x)))
    assert len(sc.get_outliers(x, y, threshold=179.0)[0]) == 0


def test_do_nothing_reducer_gives_unreduced_losses():
    from mantissa_embed.reducers import DoNothingReducer

    x, y = _batch()
    f = losses.ProxyAnchorLoss(C, D, seed=0, reducer=DoNothingReducer())
    out = f(x, y)
    assert set(out.unreduced) == {"pos_loss", "neg_loss"}
    assert out.unreduced["pos_loss"]["losses"].shape == (C,)
    total = sum(float(np.sum(v["losses"])) for v in out.unreduced.values())
    assert out.loss == pytest.approx(total, rel=1e-6)


def test_empty_batch_with_embedding_regularizer():
    f = losses.CosFaceLoss(C, D, seed=0, embedding_regularizer=LpRegularizer())
    out = f(np.zeros((0, D), np.float32), np.zeros(0, np.int64))
    assert out.loss == 0.0 and out.grad.shape == (0, D)
    assert set(out.terms) == {"loss", "embedding_reg_loss"}


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_kernel_wrappers_reject_bad_input(backend):
    from mantissa_embed.backend import get_backend

    eng = get_backend(backend)
    x = np.zeros((3, 4), np.float32)
    w = np.eye(2, 4, dtype=np.float32)
    with pytest.raises(TypeError, match="labels"):
        eng.p2sgrad_forward_backward(x, w, np.zeros(3, np.int32))
    with pytest.raises(ValueError, match="labels"):
        eng.p2sgrad_forward_backward(x, w, np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="w"):
        eng.p2sgrad_forward_backward(x, np.eye(2, 3, dtype=np.float32), np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="dx"):
        eng.p2sgrad_forward_backward(x, w, np.zeros(3, np.int64), dx=np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="labels"):
        eng.softmax_xent_forward_backward(x, np.array([0, 1, 4]))
    with pytest.raises(TypeError, match="dlogits"):
        eng.softmax_xent_forward_backward(x, np.zeros(3, np.int64), dlogits=np.zeros((3, 4)))


@pytest.mark.parametrize("cls", [losses.P2SGradLoss, losses.ArcFaceLoss, losses.ProxyAnchorLoss])
def test_weight_placement_float32(cls):
    """A weight replaced by a float64 / non-contiguous array is brought back to float32 C order."""
    x, y = _batch()
    f = cls(C, D, seed=0)
    p = f.parameters()[0]
    p.data = np.asfortranarray(p.data.astype(np.float64))
    out = f(x, y)
    assert p.data.dtype == np.float32 and p.data.flags.c_contiguous
    assert p.grad.dtype == np.float32 and p.grad.shape == p.data.shape
    assert np.isfinite(out.loss) and np.abs(p.grad).sum() > 0
