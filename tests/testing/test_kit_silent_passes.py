"""Inputs on which the testing kit must not pass silently (NaN loss or gradient, a
parameter gradient of None, empty embeddings, a check too loose to tell a zero gradient at tiny
scales) or answer with a numpy error (grad None / complex / of the wrong parameter shape, a
loss returning a bare array, min_per_class longer than n)."""

import functools
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import CentersLoss
from mantissa_embed.losses import LossOutput
from mantissa_embed.testing import (
    assert_loss_close,
    check_loss_gradients,
    check_miner_invariants,
    embeddings,
    labels,
)


def _pull(embeddings, labels, indices_tuple=None, factor=4.0):
    """L = sum_ij [y_i = y_j] |x_i - x_j|^2 / N; its gradient with ``factor`` 4 (2: wrong)."""
    x = np.asarray(embeddings, dtype=np.float64)
    same = (labels[:, None] == labels[None, :])[..., None]
    diff = x[:, None, :] - x[None, :, :]
    return LossOutput(float((same * diff**2).sum() / len(x)), factor * (same * diff).sum(1) / len(x))


X = np.random.default_rng(0).standard_normal((6, 3))
Y = np.array([0, 0, 1, 1, 2, 2])


def _returning(loss=None, grad="true"):
    def f(embeddings, labels, indices_tuple=None):
        out = _pull(embeddings, labels)
        return LossOutput(
            out.loss if loss is None else loss, out.grad if isinstance(grad, str) else grad(out.grad)
        )

    return f


@pytest.mark.parametrize(
    "loss_func, err, match",
    [
        (_returning(loss=float("nan")), AssertionError, r"non-finite loss \(nan\)"),
        (_returning(loss=float("inf")), AssertionError, r"non-finite loss \(inf\)"),
        (_returning(grad=lambda g: g * np.nan), AssertionError, r"non-finite grad: grad\[0, 0\] = nan"),
        (
            _returning(grad=lambda g: None),
            TypeError,
            r"returned grad None, expected an array of shape \(6, 3\)",
        ),
        (_returning(grad=lambda g: g + 0j), TypeError, r"grad of dtype complex128"),
        (_returning(grad=lambda g: "abc"), TypeError, r"grad of dtype <U3"),
        (
            lambda e, lab, indices_tuple=None: np.zeros_like(e),
            TypeError,
            r"must return an object with \.loss and \.grad",
        ),
    ],
)
def test_nan_or_missing_loss_output_is_reported_not_passed(loss_func, err, match):
    with pytest.raises(err, match=match):
        check_loss_gradients(loss_func, X, Y)


def test_nan_loss_at_a_perturbed_point_is_reported():
    def loss(embeddings, labels, indices_tuple=None):
        out = _pull(embeddings, labels)
        return out if np.array_equal(embeddings, X) else LossOutput(float("nan"), out.grad)

    with pytest.raises(AssertionError, match=r"the loss is non-finite .* embeddings\[0, 0\] stepped"):
        check_loss_gradients(loss, X, Y)


@pytest.mark.parametrize("shape", [(0, 3), (6, 0)])
def test_empty_embeddings_are_a_value_error_not_a_pass(shape):
    with pytest.raises(ValueError, match="embeddings is empty"):
        check_loss_gradients(_pull, np.zeros(shape), Y[: shape[0]])


@pytest.mark.parametrize(
    "x, wrong",
    [
        (X * 1e-30, _returning(grad=np.zeros_like)),  # float64, zero gradient
        (X * 1e-30, functools.partial(_pull, factor=2.0)),  # float64, half the gradient
        (
            (X * 1e-2).astype(np.float32),
            functools.partial(_pull, factor=2.0),
        ),  # float32, strategies' min_norm
    ],
)
def test_tiny_scale_wrong_gradient_is_not_passed(x, wrong):
    with pytest.raises(AssertionError, match="even a zero gradient would pass"):
        check_loss_gradients(wrong, x, Y)
    with pytest.raises(AssertionError, match="even a zero gradient would pass"):
        check_loss_gradients(_pull, x, Y)  # the true one cannot be told apart either: no silent pass


@pytest.mark.parametrize(
    "grad, err, match",
    [
        (lambda g: None, TypeError, r"parameters\(\)\[0\] \(W\)\.grad None"),
        (lambda g: g[0], ValueError, r"parameters\(\)\[0\] \(W\)\.grad of shape \(3,\), expected \(3, 3\)"),
        (lambda g: g * np.nan, AssertionError, r"non-finite parameters\(\)\[0\] \(W\)\.grad"),
    ],
)
def test_parameter_gradient_none_or_misshapen_is_reported(grad, err, match):
    check_loss_gradients(CentersLoss(3, mean=False), X, Y)
    with pytest.raises(err, match=match):
        check_loss_gradients(CentersLoss(3, mean=False, wgrad=grad), X, Y)


def test_a_loss_that_modifies_its_input_is_named():
    def loss(embeddings, labels, indices_tuple=None):
        out = _pull(embeddings, labels)
        embeddings *= 1.001
        return out

    with pytest.raises(AssertionError, match="modified its embeddings argument in place"):
        check_loss_gradients(loss, X.copy(), Y)


def test_labels_min_per_class_longer_than_n():
    with pytest.raises(ValueError, match="n=3 is too short for min_per_class=5"):
        labels(3, 2, min_per_class=5).example()

    @settings(max_examples=20, deadline=None, database=None)
    @given(y=labels(st.integers(1, 8), 2, min_per_class=3))
    def drawn(y):
        assert np.bincount(y).min() >= 3

    drawn()


def test_messages_name_a_partial_and_a_lambda_miner():
    with pytest.raises(AssertionError, match=r"^partial\(_pull\): 18 of 18"):
        check_loss_gradients(functools.partial(_pull, factor=2.0), X, Y)
    with pytest.raises(AssertionError, match=r"^<lambda>: must return a tuple"):
        check_miner_invariants(lambda e, lab: [], X, Y)


def test_assert_loss_close_accepts_an_output_without_ref_grad():
    """Regression: an output with .loss and .grad only (ref_grad is optional) was an AttributeError."""
    ref = (1.0, np.ones((2, 2)), None)
    assert_loss_close(SimpleNamespace(loss=1.0, grad=np.ones((2, 2))), ref)
    with pytest.raises(AssertionError, match="ref_grad: ours is None"):
        assert_loss_close(
            SimpleNamespace(loss=1.0, grad=np.ones((2, 2))), (1.0, np.ones((2, 2)), np.ones((2, 2)))
        )
    with pytest.raises(TypeError, match=r"must have \.loss and \.grad"):
        assert_loss_close(np.ones((2, 2)), ref)


@pytest.mark.parametrize(
    "strategy, err, match",
    [
        (lambda: embeddings(st.just(-2), 3), ValueError, "n must be >= 0, got -2"),  # was a numpy error
        (
            lambda: embeddings(3, 2, min_norm=1e30, max_norm=1e39),
            ValueError,
            "overflows float32",
        ),  # was Inf rows
        (lambda: embeddings(3, 2, dtype=np.int8), TypeError, "must be a float dtype"),  # was all-zero rows
    ],
)
def test_embeddings_strategy_bad_arguments(strategy, err, match):
    with pytest.raises(err, match=match):
        strategy().example()
