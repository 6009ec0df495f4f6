"""Regularizers vs pytorch-metric-learning: value and gradient, alone and inside a loss (float64 oracle)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

torch = pytest.importorskip("torch")
pml_reg = pytest.importorskip("pytorch_metric_learning.regularizers")
pml_losses = pytest.importorskip("pytorch_metric_learning.losses")
pml_red = pytest.importorskip("pytorch_metric_learning.reducers")

from mantissa_embed import (  # noqa: E402
    losses,
    reducers,
    regularizers as R,  # noqa: E402
)


def _pml(reg, x):
    xt = torch.tensor(x.astype(np.float64), requires_grad=True)
    out = reg(xt)
    out.backward()
    return out.item(), xt.grad.numpy()


def _check(ours, theirs):
    v, g = theirs
    assert ours.loss == pytest.approx(v, rel=1e-5, abs=1e-6)
    np.testing.assert_allclose(ours.grad, g, rtol=1e-4, atol=1e-5 * max(np.abs(g).max(initial=0), 1e-3))


def _x(seed, n, d):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


CASES = {
    "lp": (lambda: R.LpRegularizer(), lambda: pml_reg.LpRegularizer()),
    "lp1_pow2": (lambda: R.LpRegularizer(p=1, power=2), lambda: pml_reg.LpRegularizer(p=1, power=2)),
    "lp3_sum": (
        lambda: R.LpRegularizer(p=3, reducer=reducers.SumReducer()),
        lambda: pml_reg.LpRegularizer(p=3, reducer=pml_red.SumReducer()),
    ),
    "lpinf": (lambda: R.LpRegularizer(p=float("inf")), lambda: pml_reg.LpRegularizer(p=float("inf"))),
    "zero_mean": (lambda: R.ZeroMeanRegularizer(), lambda: pml_reg.ZeroMeanRegularizer()),
    "center_invariant": (
        lambda: R.CenterInvariantRegularizer(),
        lambda: pml_reg.CenterInvariantRegularizer(),
    ),
    "regular_face": (lambda: R.RegularFaceRegularizer(), lambda: pml_reg.RegularFaceRegularizer()),
}


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31), n=st.integers(2, 12), d=st.integers(2, 8), case=st.sampled_from(sorted(CASES))
)
def test_regularizer(seed, n, d, case):
    x = _x(seed, n, d)
    _check(CASES[case][0]()(x), _pml(CASES[case][1](), x))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), c=st.integers(1, 5), t=st.integers(2, 4), d=st.integers(2, 8))
def test_sparse_centers(seed, c, t, d):
    x = _x(seed, c * t, d)
    _check(R.SparseCentersRegularizer(c, t)(x), _pml(pml_reg.SparseCentersRegularizer(c, t), x))


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 16),
    d=st.integers(2, 8),
    w=st.sampled_from([1.0, 0.3]),
    case=st.sampled_from(["lp", "zero_mean", "center_invariant"]),
    loss=st.sampled_from(["contrastive", "triplet"]),
)
def test_inside_a_loss(seed, n, d, w, case, loss):
    x = _x(seed, n, d)
    y = np.random.default_rng(seed + 1).integers(0, 3, n)
    cls = {
        "contrastive": (losses.ContrastiveLoss, pml_losses.ContrastiveLoss),
        "triplet": (losses.TripletMarginLoss, pml_losses.TripletMarginLoss),
    }[loss]
    ours = cls[0](embedding_regularizer=CASES[case][0](), embedding_reg_weight=w)(x, y)
    xt = torch.tensor(x.astype(np.float64), requires_grad=True)
    out = cls[1](embedding_regularizer=CASES[case][1](), embedding_reg_weight=w)(xt, torch.tensor(y))
    out.backward()
    _check(ours, (out.item(), xt.grad.numpy()))
    assert "embedding_reg_loss" in ours.terms
