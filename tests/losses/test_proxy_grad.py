"""Proxy / classifier losses: finite differences in float64 for the embeddings and the weights."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import central_diff_inplace
from mantissa_embed import losses
from mantissa_embed.distances import DotProductSimilarity, LpDistance
from mantissa_embed.regularizers import LpRegularizer

FACTORIES = {
    "NormalizedSoftmax": lambda c, d, s: losses.NormalizedSoftmaxLoss(c, d, temperature=0.5, seed=s),
    "NormalizedSoftmaxLp": lambda c, d, s: losses.NormalizedSoftmaxLoss(
        c, d, temperature=0.5, seed=s, distance=LpDistance(power=2)
    ),
    "ProxyNCA": lambda c, d, s: losses.ProxyNCALoss(c, d, seed=s),
    "ProxyNCADot": lambda c, d, s: losses.ProxyNCALoss(
        c, d, seed=s, softmax_scale=2.0, distance=DotProductSimilarity(normalize_embeddings=False)
    ),
    "ProxyAnchor": lambda c, d, s: losses.ProxyAnchorLoss(c, d, alpha=4, seed=s),
    "ProxyAnchorLp": lambda c, d, s: losses.ProxyAnchorLoss(c, d, alpha=4, seed=s, distance=LpDistance()),
    "SoftTriple": lambda c, d, s: losses.SoftTripleLoss(c, d, centers_per_class=3, la=3, seed=s),
    "LargeMarginSoftmax": lambda c, d, s: losses.LargeMarginSoftmaxLoss(c, d, seed=s),
    "LargeMarginSoftmax3": lambda c, d, s: losses.LargeMarginSoftmaxLoss(c, d, margin=3, scale=0.5, seed=s),
    "ArcFace": lambda c, d, s: losses.ArcFaceLoss(c, d, scale=4, seed=s),
    "SubCenterArcFace": lambda c, d, s: losses.SubCenterArcFaceLoss(c, d, scale=4, sub_centers=2, seed=s),
    "CosFace": lambda c, d, s: losses.CosFaceLoss(c, d, scale=4, seed=s),
    "SphereFace": lambda c, d, s: losses.SphereFaceLoss(c, d, seed=s),
    "WeightReg": lambda c, d, s: losses.NormalizedSoftmaxLoss(
        c, d, temperature=0.5, seed=s, weight_regularizer=LpRegularizer(), weight_reg_weight=0.7
    ),
}


def _fd(f, a, eps=1e-6):
    return central_diff_inplace(f, a, eps)


def _total(loss_func, x, y, W, it=None):
    return sum(loss_func.compute64(x, y, it, W)[0].values())


@pytest.mark.parametrize("name", list(FACTORIES))
@settings(max_examples=6, deadline=None)
@given(
    n=st.integers(1, 6),
    d=st.integers(2, 4),
    c=st.integers(2, 4),
    seed=st.integers(0, 2**31),
    mined=st.booleans(),
)
def test_finite_differences(name, n, d, c, seed, mined):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    y = rng.integers(0, c, n)
    f = FACTORIES[name](c, d, seed + 1)
    W = f.parameters()[0].data.astype(np.float64)
    it = (rng.integers(0, n, 3), rng.integers(0, n, 3), rng.integers(0, n, 3)) if mined else None
    _, dx, dW = f.compute64(x, y, it, W)
    scale = max(1.0, np.abs(dx).max(), np.abs(dW).max())
    np.testing.assert_allclose(dx, _fd(lambda: _total(f, x, y, W, it), x), rtol=1e-4, atol=1e-6 * scale)
    np.testing.assert_allclose(dW, _fd(lambda: _total(f, x, y, W, it), W), rtol=1e-4, atol=1e-6 * scale)


@pytest.mark.parametrize("name", list(FACTORIES))
@pytest.mark.parametrize("n, d, c", [(7, 4, 3), (200, 32, 10)])
def test_call_matches_float64_computation(name, n, d, c):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = rng.integers(0, c, n)
    f = FACTORIES[name](c, d, 9)
    W = f.parameters()[0].data.astype(np.float64)
    terms, dx, dW = f.compute64(x.astype(np.float64), y, None, W)
    out = f(x, y)
    # The call computes the (N, D) x (D, C) similarities and their backward in float32 (SGEMM,
    # float32 normalization, the softmax on float32 logits); compute64 is the float64 reference.
    # Measured differences: loss ~1e-8 relative, gradients <= ~1e-6 of their largest entry (float32
    # rounding accumulated over D and N). Tolerances: loss 1e-5 relative, gradients rtol 1e-4 plus
    # an atol of 1e-5 times the gradient's largest entry -- a wrong sign or a missing term is an
    # O(1) relative error and still fails.
    assert out.loss == pytest.approx(sum(terms.values()), rel=1e-5)
    assert out.terms.keys() == terms.keys()
    np.testing.assert_allclose(out.grad, dx, rtol=1e-4, atol=1e-5 * np.abs(dx).max())
    gW = f.parameters()[0].grad
    np.testing.assert_allclose(gW, dW, rtol=1e-4, atol=1e-5 * np.abs(dW).max())
    assert out.grad.dtype == np.float32 and gW.dtype == np.float32


@pytest.mark.parametrize("name", ["ArcFace", "SubCenterArcFace"])
@pytest.mark.parametrize("theta_deg", [0.3, 179.7])
def test_arcface_target_near_pole_matches_float64(name, theta_deg):
    """A target angle near 0 or pi: psi' = sin(theta + m) / sin(theta) amplifies the rounding of
    a float32 cosine, so the call path must refine those target cosines in float64."""
    rng = np.random.default_rng(2)
    f = FACTORIES[name](3, 2, 5)
    W = f.parameters()[0].data.astype(np.float64)
    w0 = W[:, 0] / np.linalg.norm(W[:, 0])  # column 0: class 0 (its first sub-center)
    t = np.radians(theta_deg)
    rot = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    x = rng.standard_normal((6, 2))
    x[0] = 1.7 * rot @ w0
    y = np.array([0, 1, 2, 1, 0, 2])
    x32 = x.astype(np.float32)
    terms, dx, dW = f.compute64(x32.astype(np.float64), y, None, W)
    out = f(x32, y)
    assert out.loss == pytest.approx(sum(terms.values()), rel=1e-5)
    scale = max(np.abs(dx).max(), np.abs(dW).max())
    np.testing.assert_allclose(out.grad, dx, rtol=1e-4, atol=1e-5 * scale)
    np.testing.assert_allclose(f.parameters()[0].grad, dW, rtol=1e-4, atol=1e-5 * scale)
