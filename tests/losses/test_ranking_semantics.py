"""Ranking losses: zero loss and zero gradient (never NaN) without a valid pair, N=0, state of
DynamicSoftMarginLoss, ManifoldLoss's proxies and seeded meta-classes, reducer plumbing."""

import numpy as np
import pytest

from mantissa_embed import losses, reducers
from mantissa_embed.parameter import Parameter

RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 3)).astype(np.float32)

LABELLED = {
    "FastAPLoss": lambda: losses.FastAPLoss(),
    "HistogramLoss": lambda: losses.HistogramLoss(),
    "RankedListLoss": lambda: losses.RankedListLoss(margin=0.4, Tn=1.0),
    "PNPLoss": lambda: losses.PNPLoss(),
    "ThresholdConsistentMarginLoss": lambda: losses.ThresholdConsistentMarginLoss(),
    "DynamicSoftMarginLoss": lambda: losses.DynamicSoftMarginLoss(),
}


@pytest.mark.parametrize("name", sorted(LABELLED))
@pytest.mark.parametrize("case", ["empty", "single", "distinct", "one_class"])
def test_no_valid_pair(name, case):
    x = {"empty": X[:0], "single": X[:1]}.get(case, X)
    y = {"distinct": np.arange(6), "one_class": np.zeros(6, np.int64)}.get(case, np.zeros(len(x), np.int64))
    out = LABELLED[name]()(x, y)
    assert np.isfinite(out.loss) and np.all(np.isfinite(out.grad)) and out.grad.shape == x.shape
    if name in ("RankedListLoss", "ThresholdConsistentMarginLoss") and case in ("distinct", "one_class"):
        return  # these losses use the pairs of one kind alone
    if name == "FastAPLoss" and case == "one_class":
        # only positives: AP = 1 up to rounding
        assert abs(out.loss) < 1e-6 and np.abs(out.grad).max() < 1e-6
        return
    assert out.loss == 0.0
    assert not out.grad.any()


def test_terms_and_loss():
    y = np.array([0, 0, 1, 1, 2, 2])
    for name, make in LABELLED.items():
        out = make()(X, y)
        assert set(out.terms) == {"loss"} and out.terms["loss"] == pytest.approx(out.loss), name
        assert out.loss > 0, name


def test_reducer_scales_gradient():
    y = np.array([0, 0, 1, 1, 2, 2])
    a = losses.FastAPLoss()(X, y)
    b = losses.FastAPLoss(reducer=reducers.SumReducer())(X, y)
    assert b.loss == pytest.approx(6 * a.loss, rel=1e-6)
    np.testing.assert_allclose(b.grad, 6 * a.grad, rtol=1e-5, atol=1e-7)


def test_dynamic_soft_margin_state():
    y = np.array([0, 0, 1, 1, 2, 2])
    loss = losses.DynamicSoftMarginLoss(momentum=0.5)
    assert loss.hist_.shape == (10,) and not loss.hist_.any()
    loss(X, y)
    h1 = loss.hist_.copy()
    assert h1.sum() == pytest.approx(1.0)
    loss(X[::-1].copy(), y)
    assert loss.hist_.sum() == pytest.approx(1.0)
    loss(X[:1], y[:1])  # no triplet: histogram unchanged
    h2 = loss.hist_.copy()
    loss(X, np.arange(6))
    np.testing.assert_array_equal(loss.hist_, h2)


def test_manifold_proxies_and_seed():
    a = losses.ManifoldLoss(3, K=3, seed=7)
    b = losses.ManifoldLoss(3, K=3, seed=7)
    assert len(a.parameters()) == 1 and isinstance(a.parameters()[0], Parameter)
    assert a.proxies.shape == (3, 3)
    np.testing.assert_array_equal(a.proxies.data, b.proxies.data)
    oa, ob = a(X), b(X)  # meta-classes drawn from the same seed
    assert oa.loss == ob.loss and np.isfinite(oa.loss)
    np.testing.assert_array_equal(oa.grad, ob.grad)
    assert a.proxies.grad.any()
    mc = a._meta_classes(6)
    assert sorted(set(mc.tolist())) == [0, 1, 2]
    a.proxies.zero_grad()
    out = a(X[:0])
    assert out.loss == 0.0 and not a.proxies.grad.any()
