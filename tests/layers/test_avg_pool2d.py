"""AvgPool2D and GlobalAvgPool2D layers: float64 finite differences, shapes, config round trip
through Sequential, and bad arguments."""

import json

import numpy as np
import pytest

from layers._layer_fd import check_layer_gradients
from mantissa_embed.layers import AvgPool2D, Conv2D, Dense, GlobalAvgPool2D, Sequential


def _avg64(x, size, stride):
    """Window means by explicit loops (independent of the kernels)."""
    N, C, H, W = x.shape
    HO, WO = (H - size) // stride + 1, (W - size) // stride + 1
    y = np.zeros((N, C, HO, WO))
    for i in range(HO):
        for j in range(WO):
            y[:, :, i, j] = x[:, :, i * stride : i * stride + size, j * stride : j * stride + size].mean(
                axis=(2, 3)
            )
    return y


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize(
    "size,stride,shape",
    [(2, None, (2, 3, 6, 5)), (3, 2, (1, 2, 7, 7)), (2, 1, (1, 1, 4, 5)), (2, 3, (2, 2, 8, 7))],
)
def test_avg_pool2d_gradients(backend, size, stride, shape):
    layer = AvgPool2D(size, stride=stride).set_backend(backend)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    check_layer_gradients(layer, x, lambda v, p: _avg64(v, size, stride or size))


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("shape", [(1, 3, 5, 4), (3, 2, 1, 1), (2, 4, 7, 7)])
def test_global_avg_pool2d_gradients(backend, shape):
    layer = GlobalAvgPool2D().set_backend(backend)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    check_layer_gradients(layer, x, lambda v, p: v.sum(axis=(2, 3)) / (v.shape[2] * v.shape[3]))


def test_shapes_and_config_round_trip():
    model = Sequential(
        [
            Conv2D(4, 3, pad=1, act="relu"),
            AvgPool2D(3, stride=2),
            Conv2D(5, 3, pad=1),
            GlobalAvgPool2D(),
            Dense(3),
        ],
        seed=2,
    )
    x = np.random.default_rng(2).standard_normal((2, 1, 11, 9)).astype(np.float32)
    y = model.forward(x)
    assert y.shape == (2, 3)
    assert model.output_shape((1, 11, 9)) == (3,)
    assert model[1].output_shape((4, 11, 9)) == (4, 5, 4)
    cfg = json.loads(json.dumps(model.get_config()))
    assert cfg["layers"][1] == {"type": "AvgPool2D", "size": 3, "stride": 2}
    assert cfg["layers"][3] == {"type": "GlobalAvgPool2D"}
    clone = Sequential.from_config(cfg)
    clone.load_state_arrays(model.state_arrays())
    np.testing.assert_array_equal(clone.forward(x), y)
    assert "AvgPool2D(3, stride=2)" in model.summary()


def test_bad_arguments():
    with pytest.raises(ValueError, match="size"):
        AvgPool2D(0)
    with pytest.raises(TypeError, match="size"):
        AvgPool2D(2.5)
    with pytest.raises(ValueError, match="stride"):
        AvgPool2D(2, stride=0)
    with pytest.raises(ValueError, match="larger than the input"):
        AvgPool2D(4).forward(np.zeros((1, 1, 3, 5), np.float32))
    with pytest.raises(ValueError, match=r"\(C, H, W\)"):
        AvgPool2D(2).forward(np.zeros((2, 6), np.float32))
    with pytest.raises(ValueError, match=r"\(C, H, W\)"):
        GlobalAvgPool2D().forward(np.zeros((2, 6), np.float32))
    with pytest.raises(TypeError):
        GlobalAvgPool2D(2)
    with pytest.raises(RuntimeError, match="before forward"):
        GlobalAvgPool2D().backward(np.zeros((1, 2), np.float32))
