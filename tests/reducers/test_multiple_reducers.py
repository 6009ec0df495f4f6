"""MultipleReducers: one reducer per sub-loss name, summed (independent numpy computation)."""

import numpy as np
import pytest

from mantissa_embed import losses
from mantissa_embed.reducers import (
    AvgNonZeroReducer,
    DivisorReducer,
    MeanReducer,
    MultipleReducers,
    SumReducer,
    ThresholdReducer,
)


def test_loss_dict_value_and_grads():
    a = np.array([0.0, 1.0, 2.0, 3.0])
    b = np.array([0.5, 0.0, 1.5])
    c = np.array([4.0, 2.0])
    r = MultipleReducers(
        {"pos_loss": SumReducer(), "neg_loss": ThresholdReducer(low=0.2), "x": DivisorReducer()}
    )
    d = {
        "pos_loss": {"losses": a, "indices": (np.arange(4), np.arange(4)), "reduction_type": "pos_pair"},
        "neg_loss": {"losses": b, "indices": (np.arange(3), np.arange(3)), "reduction_type": "neg_pair"},
        "x": {"losses": c, "indices": np.arange(2), "reduction_type": "element", "divisor": 4},
        "other": {"losses": a, "indices": np.arange(4), "reduction_type": "element"},
        "zero": {"losses": 0, "indices": None, "reduction_type": "already_reduced"},
    }
    value, g = r(d)
    assert value == pytest.approx(6.0 + 1.0 + 1.5 + 1.5)
    np.testing.assert_array_equal(g["pos_loss"], np.ones(4))
    np.testing.assert_allclose(g["neg_loss"], [0.5, 0.0, 0.5])
    np.testing.assert_allclose(g["x"], [0.25, 0.25])
    np.testing.assert_allclose(g["other"], np.full(4, 0.25))  # default MeanReducer
    assert g["zero"] is None


def test_single_sub_loss_call_and_errors():
    r = MultipleReducers({"pos_loss": SumReducer()}, default_reducer=AvgNonZeroReducer())
    v = np.array([0.0, 2.0, 4.0])
    assert r(v, None, "pos_pair", loss_name="pos_loss")[0] == 6.0
    assert r(v, None, "neg_pair", loss_name="neg_loss")[0] == 3.0
    with pytest.raises(ValueError, match="loss_name"):
        r(v, None, "pos_pair")
    with pytest.raises(TypeError, match="reducers"):
        MultipleReducers([SumReducer()])
    with pytest.raises(TypeError, match="reducers"):
        MultipleReducers({"a": "sum"})
    with pytest.raises(TypeError, match="default_reducer"):
        MultipleReducers({}, default_reducer=1)
    with pytest.raises(ValueError, match="keys"):
        r({"pos_loss": {"losses": v}})
    # inside a loss, each sub-loss gets the reducer of its name (see test_multiple_reducers_in_losses.py)
    x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
    out = losses.ContrastiveLoss(reducer=r)(x, np.arange(8) % 2)
    assert out.terms["pos_loss"] == pytest.approx(
        losses.ContrastiveLoss(reducer=SumReducer())(x, np.arange(8) % 2).terms["pos_loss"]
    )
    assert isinstance(MultipleReducers({}).default_reducer, MeanReducer)
