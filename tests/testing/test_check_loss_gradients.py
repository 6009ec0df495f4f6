"""mantissa_embed.testing.check_loss_gradients: passes true gradients, names the worst wrong
entry (embeddings, ref_emb, parameters), skips kinks, rejects bad input, leaves the loss alone."""

import numpy as np
import pytest

from _helpers import CentersLoss
from mantissa_embed import losses
from mantissa_embed.losses import LossOutput
from mantissa_embed.testing import check_loss_gradients


def _quadratic(scale_grad=1.0, scale_ref=1.0):
    """L = sum_ij [y_i == r_j] |x_i - r_j|^2 / N with its exact gradients, optionally scaled."""

    def loss(embeddings, labels, ref_emb=None, ref_labels=None, indices_tuple=None):
        x = np.asarray(embeddings, np.float64)
        r = x if ref_emb is None else np.asarray(ref_emb, np.float64)
        rl = labels if ref_labels is None else ref_labels
        same = (labels[:, None] == rl[None, :])[..., None]
        diff = x[:, None, :] - r[None, :, :]
        value = float((same * diff**2).sum() / len(x))
        g = 2 * (same * diff).sum(1) / len(x)
        if ref_emb is None:
            return LossOutput(value, scale_grad * 2 * g)  # x appears on both sides
        return LossOutput(value, scale_grad * g, scale_ref * -2 * (same * diff).sum(0) / len(x))

    return loss


def _batch(seed=0, n=6, d=3, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)).astype(dtype), np.array([0, 0, 1, 1, 2, 2])[:n]


def test_true_gradients_pass_in_float64_and_float32():
    x, y = _batch()
    res = check_loss_gradients(_quadratic(), x, y)
    assert res.precision == "float64" and res.checked == x.size and res.skipped == 0
    assert res.max_error < 1e-6
    res32 = check_loss_gradients(_quadratic(), x.astype(np.float32), y)
    assert res32.precision == "float32" and res32.checked == x.size


def test_a_wrong_embedding_gradient_names_the_worst_entry():
    x, y = _batch()
    with pytest.raises(
        AssertionError,
        match=r"of 18 gradient entries differ .* worst embeddings\[\d, \d\]: "
        r"analytic .*, numeric",
    ):
        check_loss_gradients(_quadratic(scale_grad=1.01), x, y)


def test_a_wrong_ref_gradient_is_caught():
    x, y = _batch()
    r, ry = _batch(1, 4)
    check_loss_gradients(_quadratic(), x, y, ref_emb=r, ref_labels=ry)
    with pytest.raises(AssertionError, match=r"worst ref_emb\["):
        check_loss_gradients(_quadratic(scale_ref=-1.0), x, y, ref_emb=r, ref_labels=ry)


def test_parameter_gradients_are_checked_and_the_loss_is_not_modified():
    x, y = _batch(d=2)
    loss = CentersLoss(2, seed=5)
    before = loss.W.data.copy()
    res = check_loss_gradients(loss, x, y)
    assert res.checked == x.size + loss.W.size
    np.testing.assert_array_equal(loss.W.data, before)
    assert not loss.W.grad.any()
    with pytest.raises(AssertionError, match=r"worst parameters\(\)\[0\] \(W\)\["):
        check_loss_gradients(CentersLoss(2, seed=5, wgrad=lambda g: 0.5 * g), x, y)
    check_loss_gradients(CentersLoss(2, seed=5, wgrad=lambda g: 0.5 * g), x, y, parameters=False)


def test_kinks_are_skipped_not_failed():
    """|x - 1| at x = 1 exactly: forward and backward differences disagree, the entry is skipped."""

    def abs_loss(embeddings, labels, indices_tuple=None):
        x = np.asarray(embeddings, np.float64)
        return LossOutput(float(np.abs(x - 1).sum()), np.sign(x - 1) + (x == 1))  # 1 at the kink

    x = np.array([[1.0, 3.0], [-2.0, 0.5]])
    res = check_loss_gradients(abs_loss, x, np.array([0, 1]))
    assert res.skipped == 1 and res.checked == 3
    with pytest.raises(AssertionError, match="all 1 gradient entries sit at kinks"):
        check_loss_gradients(abs_loss, np.array([[1.0]]), np.array([0]))


def test_stateful_loss_is_evaluated_on_copies():
    """CrossBatchMemory's queue grows on every call; the check leaves the caller's object untouched
    (its own gradient is not the value's derivative: PML enqueues detached copies)."""
    x, y = _batch(dtype=np.float32, d=4)
    xbm = losses.CrossBatchMemory(losses.ContrastiveLoss(), 4, memory_size=8)
    with pytest.raises(AssertionError):
        check_loss_gradients(xbm, x, y)
    assert xbm.queue_idx == 0 and not xbm.has_been_filled


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"embeddings": np.array([[np.nan, 1.0]])}, ValueError, "embeddings contains NaN"),
        ({"embeddings": np.array([["a", "b"]])}, TypeError, "embeddings must be a numeric array"),
        ({"embeddings": np.ones(3)}, ValueError, "embeddings must be a 2-D array"),
        ({"embeddings": np.ones((2, 2)), "eps": 0.0}, ValueError, "eps must be > 0"),
        ({"embeddings": np.ones((2, 2)), "rtol": "x"}, TypeError, "rtol must be a number"),
    ],
)
def test_bad_input(kwargs, err, match):
    with pytest.raises(err, match=match):
        check_loss_gradients(_quadratic(), labels=np.array([0, 1]), **kwargs)


def test_a_gradient_of_the_wrong_shape_is_reported():
    def bad(embeddings, labels, indices_tuple=None):
        return LossOutput(0.0, np.zeros((1, 1)))

    with pytest.raises(ValueError, match=r"grad of shape \(1, 1\), expected \(2, 2\)"):
        check_loss_gradients(bad, np.ones((2, 2)), np.array([0, 1]))


def test_an_all_kinks_example_is_discarded_inside_hypothesis():
    """Outside hypothesis an all-kinks batch fails (above); inside, it is rejected like assume(False),
    so a property over random batches is not flaky."""
    from hypothesis import given, settings, strategies as st
    from hypothesis.errors import Unsatisfiable

    def abs_loss(embeddings, labels, indices_tuple=None):
        x = np.asarray(embeddings, np.float64)
        return LossOutput(float(np.abs(x - 1).sum()), np.sign(x - 1))

    @settings(max_examples=5, deadline=None, database=None)
    @given(st.just(np.array([[1.0]])))
    def prop(x):
        check_loss_gradients(abs_loss, x, np.array([0]))

    with pytest.raises(Unsatisfiable):
        prop()
