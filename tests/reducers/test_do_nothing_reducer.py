"""DoNothingReducer: standalone contract, and inside losses (per-element losses in out.unreduced, loss =
their sum, grad = its gradient), checked against an independent float64 computation."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import losses, reducers

H = 1e-6


def _nd(x):
    x = x.astype(np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _contrastive_losses(x, y):
    """(pos per-pair losses, neg per-pair losses) of ContrastiveLoss(0, 1), PML's pair order."""
    q = _nd(x)
    d = np.linalg.norm(q[:, None] - q[None], axis=2)
    same = y[:, None] == y[None]
    pos = same & ~np.eye(len(y), dtype=bool)
    return np.maximum(d[pos], 0), np.maximum(1 - d[~same], 0)


def test_standalone():
    r = reducers.DoNothingReducer()
    d = {"loss": {"losses": np.array([1.0, 2.0]), "indices": np.arange(2), "reduction_type": "element"}}
    assert r(d) is d and r(d, None, None) is d
    value, g = r(np.array([1.0, 2.0, 0.5]))
    assert value == 3.5 and g.tolist() == [1.0, 1.0, 1.0]
    assert r(0) == (0.0, None)
    assert repr(r) == "DoNothingReducer()"


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(0, 9), d=st.integers(2, 4))
def test_inside_contrastive(seed, n, d):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = rng.integers(0, 3, n)
    out = losses.ContrastiveLoss(reducer=reducers.DoNothingReducer())(x, y)
    pos, neg = _contrastive_losses(x, y)
    assert set(out.unreduced) == {"pos_loss", "neg_loss"}
    for name, want in (("pos_loss", pos), ("neg_loss", neg)):
        info = out.unreduced[name]
        if np.ndim(info["losses"]) == 0:
            assert info["losses"] == 0 and info["reduction_type"] == "already_reduced"
            assert want.sum() == 0 or len(want) <= 1
        else:
            np.testing.assert_allclose(info["losses"], want, rtol=1e-5, atol=1e-6)
            assert info["reduction_type"] == name.replace("loss", "pair")
            assert len(info["indices"]) == 2
        assert out.terms[name] == pytest.approx(float(np.sum(info["losses"])), abs=1e-12)
    assert out.loss == pytest.approx(sum(out.terms.values()))

    if n >= 2 and (len(pos) > 1 or len(neg) > 1):
        # the gradient is that of the plain sum of the per-pair losses
        def f(z):
            p, ng = _contrastive_losses(z, y)
            return p.sum() + ng.sum()

        assert out.loss == pytest.approx(f(x.astype(np.float64)), rel=1e-5, abs=1e-6)
        q = _nd(x)
        dd = np.linalg.norm(q[:, None] - q[None], axis=2) + np.eye(n)
        if np.abs(dd - 1).min() > 1e-3 and dd.min() > 1e-3:  # off the hinge and the sqrt kink
            g = np.zeros(x.shape)
            xx = x.astype(np.float64)
            for idx in np.ndindex(x.shape):
                xp, xm = xx.copy(), xx.copy()
                xp[idx] += H
                xm[idx] -= H
                g[idx] = (f(xp) - f(xm)) / (2 * H)
            np.testing.assert_allclose(out.grad, g, rtol=2e-3, atol=2e-3 * max(1, np.abs(g).max()))


def test_no_unreduced_without_do_nothing():
    x = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    assert losses.ContrastiveLoss()(x, np.arange(6) % 2).unreduced is None


def test_inside_multiple_reducers_only_its_sub_losses():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((10, 3)).astype(np.float32)
    y = rng.integers(0, 3, 10)
    r = reducers.MultipleReducers(
        {"margin_loss": reducers.DoNothingReducer()}, default_reducer=reducers.SumReducer()
    )
    out = losses.MarginLoss(learn_beta=True, nu=0.1, reducer=r)(x, y)
    assert set(out.unreduced) == {"margin_loss"}
    assert out.unreduced["margin_loss"]["reduction_type"] == "triplet"
    assert out.terms["margin_loss"] == pytest.approx(out.unreduced["margin_loss"]["losses"].sum())
    assert out.terms["beta_reg_loss"] == pytest.approx(0.1 * 1.2)
    # zero loss: the sub-loss is reported as PML's zero_loss
    out = losses.MarginLoss(reducer=reducers.DoNothingReducer())(x, np.zeros(10, np.int64))
    assert out.loss == 0.0 and not out.grad.any()
    assert out.unreduced == {
        n: {"losses": 0, "indices": None, "reduction_type": "already_reduced"}
        for n in ("margin_loss", "beta_reg_loss")
    }
