"""The numpy L2 normalization the production code shares (``_checks.distance.l2_normalize_rows``):
values against a float64 computation, torch's eps rule, zero and out-of-range rows, in place,
and the backward against central differences."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed._checks.distance import l2_normalize_rows


def _expected(x, eps):
    x = x.astype(np.float64)
    nrm = np.sqrt((x * x).sum(axis=1, keepdims=True))
    den = np.maximum(nrm, eps) if eps > 0 else np.where(nrm > 0, nrm, 1.0)
    return x / den


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 6),
    d=st.integers(1, 5),
    seed=st.integers(0, 2**31),
    eps=st.sampled_from([0.0, 1e-12, 0.5]),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_values_match_float64(n, d, seed, eps, dtype):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, d)) * rng.choice([1e-3, 1.0, 1e3], size=(n, 1))).astype(dtype)
    if n:
        x[0] = 0
    y, _ = l2_normalize_rows(x, eps)
    assert y.dtype == dtype and y.shape == x.shape
    rtol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(y, _expected(x, eps), rtol=rtol, atol=0)
    if n:
        assert not y[0].any()  # a zero row stays zero, whatever eps


def test_rows_beyond_float32_range_are_normalized_not_zeroed():
    x = np.array([[3e38, 3e38, 0], [1, 2, 2]], np.float32)
    y, back = l2_normalize_rows(x, 0.0)
    np.testing.assert_allclose(y, [[2**-0.5, 2**-0.5, 0], [1 / 3, 2 / 3, 2 / 3]], rtol=1e-6)
    assert np.isfinite(back(np.ones_like(y))).all()
    x2 = x.copy()
    y2, _ = l2_normalize_rows(x2, 0.0, out=x2)  # in place, as P2SGradLoss.renormalize_ does
    assert y2 is x2 and np.array_equal(x2, y)


def test_in_place_and_out_give_the_same_bits():
    x = np.random.default_rng(0).standard_normal((7, 5)).astype(np.float32)
    y, _ = l2_normalize_rows(x)
    out = np.empty_like(x)
    assert l2_normalize_rows(x, out=out)[0] is out and np.array_equal(out, y)


@pytest.mark.parametrize("eps", [0.0, 1e-12, 2.0])
def test_backward_matches_central_differences(eps):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3))
    x[1] *= 0.1  # below eps = 2: the clamped divisor is a constant there (torch's gradient)
    w = rng.standard_normal((4, 3))
    _, back = l2_normalize_rows(x, eps)
    got = back(w)
    h, fd = 1e-6, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        fd[i] = ((_expected(x + e, eps) * w).sum() - (_expected(x - e, eps) * w).sum()) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


def test_bad_input_names_the_argument():
    with pytest.raises(TypeError, match="x must be a float32 or float64"):
        l2_normalize_rows(np.ones((2, 2), np.int64))
    with pytest.raises(ValueError, match=r"x must be 2-D"):
        l2_normalize_rows(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="eps"):
        l2_normalize_rows(np.ones((2, 2), np.float32), eps=-1.0)
