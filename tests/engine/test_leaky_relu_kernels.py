"""Leaky ReLU kernels and the conv / dense forward epilogues with act="leaky_relu": engine
against the numpy twin (hypothesis: odd shapes, batch 1, stride 2), the fused conv + pool entry
points, float64 finite differences of the backward, and bad input."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from _helpers import central_diff
from mantissa_embed import _reference as ref, engine

FAST = settings(max_examples=40, deadline=None)
slopes = st.sampled_from([0.0, 0.01, 0.2, 1.0, 3.0])


def _close(a, b, rtol=2e-5):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * (1 + float(np.abs(b).max(initial=0))))


@FAST
@given(st.integers(0, 300), slopes, st.integers(0, 2**31 - 1))
def test_leaky_relu_matches_twin(n, slope, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    x[::7] = 0.0
    y = engine.leaky_relu_forward(x, slope)
    np.testing.assert_array_equal(y, ref.leaky_relu_forward(x, slope))
    np.testing.assert_array_equal(y, np.where(x < 0, np.float32(slope) * x, x))
    dy = rng.standard_normal(n).astype(np.float32)
    np.testing.assert_array_equal(
        engine.leaky_relu_backward(dy, y, slope), ref.leaky_relu_backward(dy, y, slope)
    )


def test_leaky_relu_in_place_and_large():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 301)).astype(np.float32)  # above the OpenMP threshold
    want = np.where(x < 0, np.float32(0.1) * x, x)
    assert engine.leaky_relu_forward(x, 0.1, out=x) is x
    np.testing.assert_array_equal(x, want)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    want = np.where(x > 0, dy, np.float32(0.1) * dy)
    np.testing.assert_array_equal(engine.leaky_relu_backward(dy, x, 0.1, dx=dy), want)


def test_leaky_relu_backward_finite_differences():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(40)
    r = rng.standard_normal(40)
    for slope in (0.0, 0.01, 0.3):
        g = central_diff(lambda v: float((np.where(v < 0, slope * v, v) * r).sum()), x, 1e-6)
        for be in (engine, ref):
            y = be.leaky_relu_forward(x.astype(np.float32), slope)
            np.testing.assert_allclose(
                be.leaky_relu_backward(r.astype(np.float32), y, slope), g, rtol=1e-5, atol=1e-6
            )


conv_case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 4),
        "C": st.integers(1, 4),
        "F": st.integers(1, 9),
        "H": st.integers(1, 9),
        "W": st.integers(1, 9),
        "K": st.integers(1, 3),
        "stride": st.integers(1, 2),
        "pad": st.integers(0, 1),
        "bias": st.booleans(),
        "slope": slopes,
        "seed": st.integers(0, 2**31 - 1),
    }
)


@FAST
@given(conv_case)
def test_conv2d_leaky_epilogue_matches_twin(c):
    assume(c["H"] + 2 * c["pad"] >= c["K"] and c["W"] + 2 * c["pad"] >= c["K"])
    rng = np.random.default_rng(c["seed"])
    x = rng.standard_normal((c["N"], c["C"], c["H"], c["W"])).astype(np.float32)
    w = rng.standard_normal((c["F"], c["C"], c["K"], c["K"])).astype(np.float32)
    b = rng.standard_normal(c["F"]).astype(np.float32) if c["bias"] else None
    args = (x, w, b, c["stride"], c["pad"])
    y = engine.conv2d_forward(*args, act="leaky_relu", negative_slope=c["slope"])
    _close(y, ref.conv2d_forward(*args, act="leaky_relu", negative_slope=c["slope"]))
    plain = engine.conv2d_forward(*args)
    _close(y, np.where(plain < 0, np.float32(c["slope"]) * plain, plain))


@pytest.mark.parametrize(
    "shape,wshape",
    [((3, 1, 12, 10), (8, 1, 3, 3)), ((2, 4, 9, 8), (16, 4, 3, 3)), ((1, 3, 7, 7), (5, 3, 2, 2))],
)
def test_conv2d_pool2_leaky_matches_twin(kernel, shape, wshape):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(wshape).astype(np.float32)
    b = rng.standard_normal(wshape[0]).astype(np.float32)
    y = engine.conv2d_pool2_forward(x, w, b, 1, 1, act="leaky_relu", negative_slope=0.2)
    _close(y, ref.conv2d_pool2_forward(x, w, b, 1, 1, act="leaky_relu", negative_slope=0.2))
    w2 = rng.standard_normal((9, wshape[0], 3, 3)).astype(np.float32)
    for acts in (("leaky_relu", "relu"), ("relu", "leaky_relu")):
        kw = dict(act1=acts[0], act2=acts[1], negative_slope1=0.3, negative_slope2=0.05)
        y = engine.conv2d_pool2_chain_forward(x, w, b, 1, 1, w2, None, 1, 1, **kw)
        _close(y, ref.conv2d_pool2_chain_forward(x, w, b, 1, 1, w2, None, 1, 1, **kw))


@FAST
@given(
    st.integers(1, 7),
    st.integers(0, 40),
    st.integers(1, 30),
    slopes,
    st.booleans(),
    st.integers(0, 2**31 - 1),
)
def test_dense_leaky_epilogue_matches_twin(N, n_in, n_out, slope, bias, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, n_in)).astype(np.float32)
    w = rng.standard_normal((n_out, n_in)).astype(np.float32)
    b = rng.standard_normal(n_out).astype(np.float32) if bias else None
    y = engine.dense_forward(x, w, b, act="leaky_relu", negative_slope=slope)
    _close(y, ref.dense_forward(x, w, b, act="leaky_relu", negative_slope=slope))
    plain = engine.dense_forward(x, w, b)
    _close(y, np.where(plain < 0, np.float32(slope) * plain, plain))


@pytest.mark.parametrize("be", [engine, ref], ids=["engine", "numpy"])
def test_leaky_bad_input(be):
    x = np.ones((2, 3), np.float32)
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="negative_slope"):
            be.leaky_relu_forward(x, bad)
        with pytest.raises(ValueError, match="negative_slope"):
            be.dense_forward(x, x, None, act="leaky_relu", negative_slope=bad)
    with pytest.raises(TypeError, match="negative_slope"):
        be.leaky_relu_backward(x, x, "0.1")
    with pytest.raises(ValueError, match="act"):
        be.dense_forward(x, x, None, act="leaky")
    with pytest.raises(ValueError, match="y must have the shape"):
        be.leaky_relu_backward(x, x[:1])
    xc, wc = np.ones((1, 1, 4, 4), np.float32), np.ones((2, 1, 3, 3), np.float32)
    with pytest.raises(ValueError, match="negative_slope"):
        be.conv2d_forward(xc, wc, None, 1, 1, act="leaky_relu", negative_slope=-1)
    with pytest.raises(ValueError, match="negative_slope2"):
        be.conv2d_pool2_chain_forward(
            np.ones((1, 1, 8, 8), np.float32),
            wc,
            None,
            1,
            1,
            np.ones((2, 2, 3, 3), np.float32),
            None,
            1,
            1,
            negative_slope2=-1,
        )
