"""Average and global average pooling kernels: engine against the numpy twin (hypothesis:
odd sizes, batch 1, stride 2, overlapping and gapped windows), the twin's gradient against
float64 finite differences, and bad input."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from _helpers import central_diff
from mantissa_embed import _reference as ref, engine
from mantissa_embed._reference import _pool as pref

FAST = settings(max_examples=40, deadline=None)

case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 4),
        "C": st.integers(1, 3),
        "H": st.integers(1, 11),
        "W": st.integers(1, 11),
        "size": st.integers(1, 4),
        "stride": st.integers(1, 3),
        "seed": st.integers(0, 2**31 - 1),
    }
)


def _close(a, b, rtol=2e-6):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * (1 + float(np.abs(b).max(initial=0))))


@FAST
@given(case)
def test_avgpool2d_matches_twin(c):
    assume(c["H"] >= c["size"] and c["W"] >= c["size"])
    rng = np.random.default_rng(c["seed"])
    x = rng.standard_normal((c["N"], c["C"], c["H"], c["W"])).astype(np.float32)
    y = engine.avgpool2d_forward(x, c["size"], c["stride"])
    _close(y, ref.avgpool2d_forward(x, c["size"], c["stride"]))
    dy = rng.standard_normal(y.shape).astype(np.float32)
    _close(
        engine.avgpool2d_backward(dy, x.shape, c["size"], c["stride"]),
        ref.avgpool2d_backward(dy, x.shape, c["size"], c["stride"]),
    )


@FAST
@given(case)
def test_global_avgpool2d_matches_twin(c):
    rng = np.random.default_rng(c["seed"])
    x = rng.standard_normal((c["N"], c["C"], c["H"] * 3, c["W"] * 2)).astype(np.float32)
    _close(engine.global_avgpool2d_forward(x), ref.global_avgpool2d_forward(x))
    dy = rng.standard_normal(x.shape[:2]).astype(np.float32)
    _close(engine.global_avgpool2d_backward(dy, x.shape), ref.global_avgpool2d_backward(dy, x.shape))


@pytest.mark.parametrize(
    "shape,size,stride",
    [((1, 1, 5, 5), 2, 2), ((2, 2, 7, 6), 3, 2), ((1, 3, 4, 5), 2, 1), ((2, 1, 8, 7), 2, 3)],
)
def test_avgpool2d_twin_gradient_finite_differences(shape, size, stride):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape)
    y = pref._avgpool2d(x, size, stride)
    r = rng.standard_normal(y.shape)
    g = central_diff(lambda v: float((pref._avgpool2d(v, size, stride) * r).sum()), x, 1e-6)
    np.testing.assert_allclose(pref._avgpool2d_grad(r, shape, size, stride), g, rtol=1e-7, atol=1e-9)
    # the float32 kernels against the same float64 gradient
    for be in (engine, ref):
        d = be.avgpool2d_backward(r.astype(np.float32), shape, size, stride)
        np.testing.assert_allclose(d, g, rtol=1e-5, atol=1e-6)


def test_global_avgpool2d_gradient_finite_differences():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 3, 5))
    r = rng.standard_normal((2, 3))
    g = central_diff(lambda v: float((v.mean(axis=(2, 3)) * r).sum()), x, 1e-6)
    for be in (engine, ref):
        np.testing.assert_allclose(
            be.global_avgpool2d_backward(r.astype(np.float32), x.shape), g, rtol=1e-5, atol=1e-6
        )


def test_avgpool2d_known_values():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    for be in (engine, ref):
        np.testing.assert_array_equal(be.avgpool2d_forward(x, 2, 2)[0, 0], [[2.5, 4.5], [10.5, 12.5]])
        np.testing.assert_array_equal(be.global_avgpool2d_forward(x), [[7.5]])


@pytest.mark.parametrize("be", [engine, ref], ids=["engine", "numpy"])
def test_pooling_bad_input(be):
    x = np.zeros((1, 2, 3, 3), np.float32)
    with pytest.raises(ValueError, match="larger than the input"):
        be.avgpool2d_forward(x, 4, 1)
    with pytest.raises(ValueError, match="size"):
        be.avgpool2d_forward(x, 0, 1)
    with pytest.raises(ValueError, match="stride"):
        be.avgpool2d_forward(x, 2, 0)
    with pytest.raises(ValueError, match="4-D"):
        be.avgpool2d_forward(x[0], 2, 2)
    with pytest.raises(ValueError, match="dy"):
        be.avgpool2d_backward(np.zeros((1, 2, 2, 2), np.float32), x.shape, 2, 2)
    with pytest.raises(ValueError, match="out"):
        be.avgpool2d_forward(x, 2, 1, out=np.zeros((1, 2, 3, 3), np.float32))
    with pytest.raises(ValueError, match="H, W"):
        be.global_avgpool2d_forward(np.zeros((1, 2, 0, 3), np.float32))
    with pytest.raises(ValueError, match="dy"):
        be.global_avgpool2d_backward(np.zeros((2, 2), np.float32), x.shape)
    with pytest.raises(TypeError, match="dx"):
        be.global_avgpool2d_backward(np.zeros((1, 2), np.float32), x.shape, dx=np.zeros(x.shape))
