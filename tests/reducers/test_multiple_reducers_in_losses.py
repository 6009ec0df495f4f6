"""MultipleReducers as a loss's reducer: each sub-loss reduced by the reducer of its name (PML's
semantics), checked against an independent numpy reduction of brute-force per-pair losses."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import losses, reducers
from mantissa_embed.losses.base_metric_loss_function import BaseMetricLossFunction


def _pairs(x, y):
    q = x.astype(np.float64)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    d = np.linalg.norm(q[:, None] - q[None], axis=2)
    same = y[:, None] == y[None]
    return d[same & ~np.eye(len(y), dtype=bool)], d[~same]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(3, 12), nested=st.booleans())
def test_contrastive_per_sub_loss(seed, n, nested):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = rng.integers(0, 3, n)
    neg_red = reducers.ThresholdReducer(low=0.1)
    if nested:
        neg_red = reducers.MultipleReducers({"neg_loss": neg_red})
    r = reducers.MultipleReducers(
        {"pos_loss": reducers.SumReducer(), "neg_loss": neg_red}, default_reducer=reducers.MeanReducer()
    )
    out = losses.ContrastiveLoss(pos_margin=0.2, neg_margin=0.9, reducer=r)(x, y)
    dp, dn = _pairs(x, y)
    pos = np.maximum(dp - 0.2, 0).sum()
    nl = np.maximum(0.9 - dn, 0)
    keep = nl > 0.1
    neg = nl[keep].mean() if keep.any() else 0.0
    if len(dp) <= 1 and len(dn) <= 1:
        pos = neg = 0.0
    assert out.terms["pos_loss"] == pytest.approx(pos, rel=1e-5, abs=1e-6)
    assert out.terms["neg_loss"] == pytest.approx(neg, rel=1e-5, abs=1e-6)


def test_default_reducer_for_unnamed_sub_losses():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((12, 4)).astype(np.float32)
    y = rng.integers(0, 3, 12)
    r = reducers.MultipleReducers({"neg_loss": reducers.SumReducer()}, default_reducer=reducers.SumReducer())
    a = losses.IntraPairVarianceLoss(reducer=r)(x, y)
    b = losses.IntraPairVarianceLoss(reducer=reducers.SumReducer())(x, y)
    assert a.loss == pytest.approx(b.loss)
    np.testing.assert_allclose(a.grad, b.grad, rtol=1e-6, atol=1e-7)


def test_divisor_reaches_a_divisor_reducer_inside_multiple_reducers():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((10, 3)).astype(np.float32)
    y = rng.integers(0, 3, 10)
    r = reducers.MultipleReducers({"margin_loss": reducers.DivisorReducer()})
    a = losses.MarginLoss(reducer=r)(x, y)
    b = losses.MarginLoss()(x, y)
    assert a.loss == pytest.approx(b.loss, rel=1e-6)
    np.testing.assert_allclose(a.grad, b.grad, rtol=1e-5, atol=1e-7)


def test_sub_loss_name_must_be_known():
    class Two(BaseMetricLossFunction):
        def _sub_loss_names(self):
            return ["a", "b"]

        def compute_loss(self, batch):
            v, _ = self._reduce_generic(np.ones(3), np.arange(3), "element", batch)
            return {"a": v, "b": 0.0}, *self._zero_grads(batch)

    x = np.zeros((3, 2), np.float32) + 1
    with pytest.raises(ValueError, match="loss_name"):
        Two(reducer=reducers.MultipleReducers({"a": reducers.SumReducer()}))(x, np.arange(3))
    assert Two(reducer=reducers.SumReducer())(x, np.arange(3)).loss == 3.0  # a plain reducer needs no name
