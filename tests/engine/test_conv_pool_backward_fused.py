"""The fused backward paths of the conv/pool layers, against independent compositions of the
numpy twins:

- ``maxpool2d_relu_backward`` (the pooling backward with the ReLU mask of the layer before)
  equals ``relu_backward(maxpool2d_backward(dy), r)`` for the pooled ReLU output r, bitwise;
- ``conv2d_backward``'s direct input gradient (stride 1, KH == KW, pad <= KH - 1, C >= 8, the
  avx512 kernel: a correlation of the padded dy with the flipped weights) and its weight
  gradient read from the padded plane in place, on both SGEMM kernels;
- ``Sequential.backward`` with the fusion equals the layer-by-layer composition.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from _helpers import close_scaled as _close
from mantissa_embed import _reference as ref, engine
from mantissa_embed.layers import Conv2D, Dense, Flatten, MaxPool2D, Sequential

BACKENDS = [engine, ref]


# ------------------------------------------------------------------ pool + ReLU backward
pool_case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 3),
        "C": st.integers(1, 5),
        "H": st.integers(1, 12),
        "W": st.integers(1, 12),
        "size": st.integers(1, 3),
        "stride": st.integers(1, 3),
        "ties": st.booleans(),
        "seed": st.integers(0, 2**31 - 1),
    }
)


@pytest.mark.parametrize("be", BACKENDS, ids=["engine", "numpy"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c=pool_case)
def test_maxpool2d_relu_backward_is_relu_after_pool_backward(be, c):
    assume(c["H"] >= c["size"] and c["W"] >= c["size"])
    rng = np.random.default_rng(c["seed"])
    shape = (c["N"], c["C"], c["H"], c["W"])
    pre = (rng.integers(-1, 2, shape) if c["ties"] else rng.standard_normal(shape)).astype(np.float32)
    r = np.maximum(pre, np.float32(0))  # the ReLU output that is pooled (zeros: many ties)
    y, arg = ref.maxpool2d_forward(r, c["size"], c["stride"])
    dy = rng.standard_normal(y.shape).astype(np.float32)
    want = ref.relu_backward(ref.maxpool2d_backward(dy, arg, shape), r)
    got = be.maxpool2d_relu_backward(dy, arg, y, shape)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("be", BACKENDS, ids=["engine", "numpy"])
def test_maxpool2d_relu_backward_inf_and_nan(be):
    """An Inf gradient under a zero mask gives 0 (select, not multiply); NaN pooled values mask."""
    r = np.array([[[[0.0, 0.0, 1.0, 2.0], [0.0, 0.0, np.nan, 0.5]]]], np.float32)
    y, arg = ref.maxpool2d_forward(r, 2, 2)
    dy = np.array([[[[np.inf, 3.0]]]], np.float32)
    got = be.maxpool2d_relu_backward(dy, arg, y, r.shape)
    np.testing.assert_array_equal(got, ref.relu_backward(ref.maxpool2d_backward(dy, arg, r.shape), r))
    assert np.isfinite(got).all() and got.sum() == 0.0


@pytest.mark.parametrize("be", BACKENDS, ids=["engine", "numpy"])
def test_maxpool2d_relu_backward_bad_input(be):
    y = np.ones((1, 1, 2, 2), np.float32)
    arg = np.zeros((1, 1, 2, 2), np.int32)
    with pytest.raises(ValueError, match="y must have the shape"):
        be.maxpool2d_relu_backward(y, arg, np.ones((1, 1, 2, 3), np.float32), (1, 1, 4, 4))
    with pytest.raises(TypeError, match="argmax"):
        be.maxpool2d_relu_backward(y, arg.astype(np.int64), y, (1, 1, 4, 4))
    with pytest.raises(ValueError, match="argmax entries"):
        be.maxpool2d_relu_backward(y, arg + 16, y, (1, 1, 4, 4))
    out = be.maxpool2d_relu_backward(
        np.zeros((0, 1, 2, 2), np.float32),
        np.zeros((0, 1, 2, 2), np.int32),
        np.zeros((0, 1, 2, 2), np.float32),
        (0, 1, 4, 4),
    )
    assert out.shape == (0, 1, 4, 4)


# ------------------------------------------------------------ conv backward, direct dx
conv_case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 3),
        "C": st.integers(6, 20),
        "F": st.sampled_from([1, 3, 8, 16, 17, 32]),
        "H": st.integers(1, 17),
        "W": st.integers(1, 37),
        "K": st.integers(1, 4),
        "pad": st.integers(0, 4),
        "seed": st.integers(0, 2**31 - 1),
    }
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c=conv_case)
def test_conv2d_backward_stride1_many_channels(kernel, c):
    """Stride 1 with C >= 8 takes the direct input gradient on avx512 when pad <= K - 1 (pad
    beyond that, or K*K*F > 288, or C < 8, falls back to GEMM + col2im)."""
    assume(c["H"] + 2 * c["pad"] >= c["K"] and c["W"] + 2 * c["pad"] >= c["K"])
    rng = np.random.default_rng(c["seed"])
    x = rng.standard_normal((c["N"], c["C"], c["H"], c["W"])).astype(np.float32)
    w = rng.standard_normal((c["F"], c["C"], c["K"], c["K"])).astype(np.float32)
    y = ref.conv2d_forward(x, w, None, 1, c["pad"])
    dy = rng.standard_normal(y.shape).astype(np.float32)
    got = engine.conv2d_backward(x, w, dy, 1, c["pad"])
    want = ref.conv2d_backward(x, w, dy, 1, c["pad"])
    for a, b in zip(got, want):
        _close(a, b, rtol=5e-5)
    # dx alone (need_dx with a separate call order) and accumulate=True agree too
    dw0 = rng.standard_normal(w.shape).astype(np.float32)
    dx, dw, _ = engine.conv2d_backward(x, w, dy, 1, c["pad"], dw=dw0.copy(), accumulate=True)
    _close(dx, want[0], rtol=5e-5)
    _close(dw, dw0 + want[1], rtol=5e-5)


def test_conv2d_backward_small_cnn_second_layer(kernel):
    """The second conv of small_cnn_embedder (8 -> 16, 14x14, 3x3 pad 1): the shape the direct
    input gradient was written for, against float64 numpy."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 8, 14, 14)).astype(np.float32)
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    dy = rng.standard_normal((5, 16, 14, 14)).astype(np.float32)
    dx, dw, db = engine.conv2d_backward(x, w, dy, 1, 1)
    # dx[n,c,h,w] = sum_{f,i,j} w[f,c,i,j] dy[n,f,h+1-i,w+1-j] (zero outside), in float64
    dyp = np.pad(dy.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    dx64 = np.zeros(x.shape)
    for i in range(3):
        for j in range(3):
            dx64 += np.einsum(
                "fc,nfhw->nchw",
                w[:, :, i, j].astype(np.float64),
                dyp[:, :, 2 - i : 2 - i + 14, 2 - j : 2 - j + 14],
            )
    _close(dx, dx64, rtol=1e-5)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    dw64 = np.stack(
        [
            np.stack(
                [
                    np.einsum("nfhw,nchw->fc", dy.astype(np.float64), xp[:, :, i : i + 14, j : j + 14])
                    for j in range(3)
                ],
                -1,
            )
            for i in range(3)
        ],
        -2,
    )
    _close(dw, dw64, rtol=1e-5)
    _close(db, dy.astype(np.float64).sum((0, 2, 3)), rtol=1e-5)


def test_conv2d_backward_bitwise_across_threads():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((37, 8, 14, 14)).astype(np.float32)
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    dy = rng.standard_normal((37, 16, 14, 14)).astype(np.float32)
    old = engine.get_num_threads()
    try:
        outs = []
        for n in (1, 2, 3):
            engine.set_num_threads(n)
            outs.append(engine.conv2d_backward(x, w, dy, 1, 1))
    finally:
        engine.set_num_threads(old)
    for other in outs[1:]:
        for a, b in zip(outs[0], other):
            np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------- Sequential with the fusion
@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("pool", [(2, None), (3, 2), (2, 1)])
def test_sequential_fused_backward_equals_layer_by_layer(backend, pool):
    def net():
        return Sequential(
            [
                Conv2D(8, 3, pad=1, act="relu"),
                MaxPool2D(*pool),
                Conv2D(16, 3, pad=1, act="relu"),
                MaxPool2D(2),
                Flatten(),
                Dense(10),
            ],
            seed=4,
            backend=backend,
        )

    rng = np.random.default_rng(9)
    X = rng.standard_normal((6, 1, 12, 12)).astype(np.float32)
    a, b = net(), net()
    ya, yb = a.forward(X), b.forward(X)
    np.testing.assert_array_equal(ya, yb)
    dY = rng.standard_normal(ya.shape).astype(np.float32)
    assert a._relu_pool_at() == {0, 2}
    dxa = a.backward(dY)
    d = dY  # b: every layer's own backward, in reverse order (no fusion)
    for layer in reversed(b.layers):
        d = layer.backward(d)
    np.testing.assert_array_equal(dxa, d)
    for (na, pa), (nb, pb) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(pa.grad, pb.grad, err_msg=na)


def test_sequential_fusion_only_after_relu_conv():
    s = Sequential([Conv2D(4, 3), MaxPool2D(2), Conv2D(4, 3, act="relu"), Flatten(), Dense(2)])
    assert s._relu_pool_at() == frozenset()
    s = Sequential([Conv2D(4, 3, act="relu"), MaxPool2D(2), Flatten(), Dense(2)])
    assert s._relu_pool_at() == {0}
