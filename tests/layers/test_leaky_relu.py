"""act="leaky_relu" on Conv2D and Dense, and the LeakyReLU layer: float64 finite differences,
the planner keeping leaky layers out of the ReLU fusions, config round trip, bad arguments."""

import json

import numpy as np
import pytest

from layers._layer_fd import check_layer_gradients
from mantissa_embed._reference import _conv as lref
from mantissa_embed.layers import Conv2D, Dense, Flatten, LeakyReLU, MaxPool2D, Sequential


def _leaky(v, s):
    return np.where(v < 0, s * v, v)


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("slope", [0.01, 0.25])
@pytest.mark.parametrize(
    "stride,pad,shape", [(1, 1, (2, 2, 5, 6)), (2, 1, (1, 3, 7, 5)), (2, 0, (2, 1, 6, 6))]
)
def test_conv2d_leaky_gradients(backend, slope, stride, pad, shape):
    layer = Conv2D(3, 3, stride=stride, pad=pad, act="leaky_relu", negative_slope=slope).set_backend(backend)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    check_layer_gradients(
        layer, x, lambda v, p: _leaky(lref._conv2d(v, p["weight"], p["bias"], stride, pad), slope)
    )


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("N", [1, 4])
def test_dense_leaky_gradients(backend, N):
    layer = Dense(5, act="leaky_relu", negative_slope=0.1).set_backend(backend)
    x = np.random.default_rng(N).standard_normal((N, 7)).astype(np.float32)
    check_layer_gradients(layer, x, lambda v, p: _leaky(v @ p["weight"].T + p["bias"], 0.1))


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_leaky_relu_layer_gradients(backend):
    x = np.random.default_rng(2).standard_normal((3, 2, 5)).astype(np.float32)
    check_layer_gradients(LeakyReLU(0.2).set_backend(backend), x, lambda v, p: _leaky(v, 0.2))
    check_layer_gradients(LeakyReLU().set_backend(backend), x, lambda v, p: _leaky(v, 0.01))


def test_planner_does_not_fuse_leaky_layers():
    """No inference conv + pool fusion and no pool-ReLU backward fusion for a leaky conv: the
    model gives the layer-by-layer result in both modes."""
    model = Sequential(
        [
            Conv2D(4, 3, pad=1, act="leaky_relu", negative_slope=0.2),
            MaxPool2D(2),
            Conv2D(5, 3, pad=1, act="relu"),
            MaxPool2D(2),
            Flatten(),
            Dense(3),
        ],
        seed=1,
    )
    x = np.random.default_rng(3).standard_normal((2, 1, 8, 8)).astype(np.float32)
    y = model.forward(x)
    assert model._relu_pool_at() == frozenset({2})  # only the ReLU conv
    assert [s.index for s in model._plan("inference")] == [0, 1, 2, 4, 5]  # conv 2 + pool fused
    model.eval()
    np.testing.assert_allclose(model.forward(x), y, rtol=1e-6, atol=1e-6)
    h = x
    for layer in model.layers:
        h = layer.forward(h)
    np.testing.assert_allclose(h, y, rtol=1e-6, atol=1e-6)


def test_config_round_trip():
    model = Sequential(
        [
            Conv2D(3, 3, act="leaky_relu", negative_slope=0.2),
            LeakyReLU(0.3),
            Flatten(),
            Dense(4, act="leaky_relu"),
            Dense(2, act="relu"),
        ],
        seed=4,
    )
    x = np.random.default_rng(4).standard_normal((2, 1, 6, 6)).astype(np.float32)
    y = model.forward(x)
    cfg = json.loads(json.dumps(model.get_config()))
    assert cfg["layers"][0]["negative_slope"] == 0.2 and cfg["layers"][0]["act"] == "leaky_relu"
    assert cfg["layers"][1] == {"type": "LeakyReLU", "negative_slope": 0.3}
    assert cfg["layers"][3]["negative_slope"] == 0.01
    assert "negative_slope" not in cfg["layers"][4]  # unchanged configs for the other activations
    clone = Sequential.from_config(cfg)
    clone.load_state_arrays(model.state_arrays())
    np.testing.assert_array_equal(clone.forward(x), y)
    assert "act='leaky_relu', negative_slope=0.2" in model.summary()


def test_bad_arguments():
    for make in (
        lambda s: Conv2D(2, 3, act="leaky_relu", negative_slope=s),
        lambda s: Dense(2, act="leaky_relu", negative_slope=s),
        LeakyReLU,
    ):
        with pytest.raises(ValueError, match="negative_slope"):
            make(-0.5)
        with pytest.raises(ValueError, match="negative_slope"):
            make(float("nan"))
        with pytest.raises(TypeError, match="negative_slope"):
            make("0.1")
    with pytest.raises(ValueError, match="act"):
        Conv2D(2, 3, act="leaky")
    with pytest.raises(TypeError, match="act"):
        Dense(2, act=1)
