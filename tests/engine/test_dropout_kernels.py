"""Dropout's mask product: engine against the numpy twin (hypothesis shapes), its gradient
against float64 finite differences, in place, and bad input."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import central_diff
from mantissa_embed import _reference as ref, engine


def _mask(rng, shape, p):
    return ((rng.random(shape) >= p) * np.float32(1 / (1 - p))).astype(np.float32)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 7), min_size=1, max_size=4),
    st.sampled_from([0.0, 0.1, 0.5, 0.9]),
    st.integers(0, 2**31 - 1),
)
def test_dropout_matches_twin(shape, p, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    m = _mask(rng, shape, p)
    y = engine.dropout_forward(x, m)
    np.testing.assert_array_equal(y, ref.dropout_forward(x, m))
    np.testing.assert_array_equal(y, x * m)
    dy = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(engine.dropout_backward(dy, m), ref.dropout_backward(dy, m))


def test_dropout_gradient_finite_differences_and_in_place():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 300)).astype(np.float32)  # above the OpenMP threshold
    m = _mask(rng, x.shape, 0.3)
    r = rng.standard_normal(x.shape).astype(np.float32)
    small = (slice(0, 3), slice(0, 4))
    g = central_diff(lambda v: float((v * m[small] * r[small]).sum()), x[small].astype(np.float64), 1e-6)
    for be in (engine, ref):
        np.testing.assert_allclose(be.dropout_backward(r, m)[small], g, rtol=1e-6, atol=1e-7)
        xc = x.copy()
        assert be.dropout_forward(xc, m, out=xc) is xc
        np.testing.assert_array_equal(xc, x * m)


@pytest.mark.parametrize("be", [engine, ref], ids=["engine", "numpy"])
def test_dropout_bad_input(be):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="mask"):
        be.dropout_forward(x, np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match="mask"):
        be.dropout_backward(x, np.ones((2,), np.float32))
    with pytest.raises(TypeError, match="dx"):
        be.dropout_backward(x, x.copy(), dx=np.ones((2, 3)))
    with pytest.raises(ValueError, match="out"):
        m = np.ones((2, 3), np.float32)
        be.dropout_forward(x, m, out=m)
