"""Reducers: values and gradients of the reduction (independent numpy computations)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from mantissa_embed.reducers import AvgNonZeroReducer, MeanReducer

losses = arrays(np.float32, st.integers(0, 30), elements=st.floats(-1, 3, width=32))


@settings(max_examples=50, deadline=None)
@given(v=losses, kind=st.sampled_from(["element", "pos_pair", "neg_pair", "triplet"]))
def test_avg_non_zero(v, kind):
    value, d = AvgNonZeroReducer()(v, None, kind)
    pos = v[v > 0].astype(np.float64)
    assert value == pytest.approx(pos.mean() if len(pos) else 0.0, rel=1e-6, abs=1e-7)
    np.testing.assert_allclose(d, np.where(v > 0, 1.0 / max(len(pos), 1), 0.0))


@settings(max_examples=50, deadline=None)
@given(v=losses)
def test_mean(v):
    value, d = MeanReducer()(v)
    assert value == pytest.approx(v.astype(np.float64).mean() if len(v) else 0.0, rel=1e-6, abs=1e-7)
    np.testing.assert_allclose(d, np.full(len(v), 1.0 / max(len(v), 1)))


def test_zero_and_errors():
    assert AvgNonZeroReducer()(0) == (0.0, None)
    assert MeanReducer()(np.array([2.5]), None, "already_reduced")[0] == 2.5
    with pytest.raises(ValueError, match="reduction_type"):
        MeanReducer()(np.ones(3), None, "bogus")
    with pytest.raises(ValueError, match="1-D"):
        MeanReducer()(np.ones((2, 2)))
