"""Regularizers: argument and input validation, and use as a loss's embedding_regularizer."""

import numpy as np
import pytest

from mantissa_embed import distances, losses, reducers, regularizers as R


def test_bad_arguments():
    with pytest.raises(ValueError, match="p must be"):
        R.LpRegularizer(p=0.5)
    with pytest.raises(TypeError, match="p must be"):
        R.LpRegularizer(p="2")
    with pytest.raises(ValueError, match="power"):
        R.LpRegularizer(power=0)
    with pytest.raises(TypeError, match="reducer"):
        R.LpRegularizer(reducer="mean")
    with pytest.raises(TypeError, match="distance"):
        R.ZeroMeanRegularizer(distance="cos")
    with pytest.raises(ValueError, match="LpDistance"):
        R.CenterInvariantRegularizer(distance=distances.LpDistance())
    with pytest.raises(ValueError, match="CosineSimilarity"):
        R.RegularFaceRegularizer(distance=distances.LpDistance())
    with pytest.raises(ValueError, match="centers_per_class"):
        R.SparseCentersRegularizer(3, 1)
    with pytest.raises(TypeError, match="num_classes"):
        R.SparseCentersRegularizer(2.5, 2)


def test_bad_inputs():
    reg = R.LpRegularizer()
    with pytest.raises(ValueError, match="x must be 2-D"):
        reg(np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        reg(np.array([[np.nan, 1.0]]))
    with pytest.raises(TypeError, match="x must be"):
        reg(None)
    with pytest.raises(ValueError, match="rows"):
        R.SparseCentersRegularizer(2, 2)(np.ones((3, 2)))
    out = reg(np.zeros((0, 4)))
    assert out.loss == 0.0 and out.grad.shape == (0, 4)


def test_divisor_reducer_needs_a_divisor():
    x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
    y = np.arange(8) % 2
    with pytest.raises(ValueError, match="divisor"):
        losses.ContrastiveLoss(reducer=reducers.DivisorReducer())(x, y)
    v, d = reducers.DivisorReducer()(np.array([1.0, 2.0]), np.arange(2), "element", divisor=4)
    assert v == 0.75 and np.allclose(d, 0.25)
    assert reducers.DivisorReducer()(np.array([1.0, 2.0]), np.arange(2), "element", divisor=0)[0] == 0.0


def test_as_embedding_regularizer_of_a_loss():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((10, 4)).astype(np.float32)
    y = rng.integers(0, 3, 10)
    reg = R.LpRegularizer()
    plain = losses.TripletMarginLoss(margin=0.2)(x, y)
    out = losses.TripletMarginLoss(margin=0.2, embedding_regularizer=reg, embedding_reg_weight=0.5)(x, y)
    rv, rg = reg.forward64(x.astype(np.float64))
    assert out.terms["embedding_reg_loss"] == pytest.approx(0.5 * rv, rel=1e-6)
    assert out.loss == pytest.approx(plain.loss + 0.5 * rv, rel=1e-6)
    np.testing.assert_allclose(out.grad, plain.grad + 0.5 * rg, rtol=1e-5, atol=1e-6)
