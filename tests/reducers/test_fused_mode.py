"""BaseReducer.fused_mode: the fused path a reducer equals, never inherited by a subclass."""

import pytest

from mantissa_embed import reducers


@pytest.mark.parametrize(
    "make,mode",
    [
        (reducers.MeanReducer, "mean"),
        (reducers.AvgNonZeroReducer, "avg_non_zero"),
        (reducers.SumReducer, "sum"),
        (reducers.DivisorReducer, "divisor"),
        (lambda: reducers.ThresholdReducer(low=0.1), None),
        (reducers.DoNothingReducer, None),
        (lambda: reducers.MultipleReducers({"pos_loss": reducers.MeanReducer()}), None),
    ],
)
def test_fused_mode(make, mode):
    assert make().fused_mode() == mode


def test_subclass_is_not_fused_unless_it_says_so():
    class Sub(reducers.MeanReducer):
        pass

    class Opt(reducers.MeanReducer):
        fused = "mean"

    assert Sub().fused_mode() is None
    assert Opt().fused_mode() == "mean"


def test_leaf_and_records_unreduced():
    dn, mean = reducers.DoNothingReducer(), reducers.MeanReducer()
    inner = reducers.MultipleReducers({"neg_loss": dn})
    r = reducers.MultipleReducers({"pos_loss": mean, "neg_loss": inner})
    assert r.leaf("pos_loss") is mean and r.leaf("neg_loss") is dn
    assert r.leaf("other") is r.default_reducer
    assert r.records_unreduced and not mean.records_unreduced and dn.records_unreduced
    assert reducers.DivisorReducer().call_kwargs(4) == {"divisor": 4} and mean.call_kwargs(4) == {}
