"""Conv2D(bias=False): no bias parameter, float64 finite differences (stride 2, 1x1, batch 1),
torch's init for the weight, config / state round trip, bad arguments."""

import json

import numpy as np
import pytest

from layers._layer_fd import check_layer_gradients
from mantissa_embed._reference import _conv as lref
from mantissa_embed.layers import Conv2D, Flatten, MaxPool2D, Sequential


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize(
    "k,stride,pad,shape,act",
    [
        (1, 1, 0, (2, 3, 5, 4), None),
        (1, 2, 0, (1, 4, 7, 6), None),
        (3, 2, 1, (2, 2, 7, 7), "relu"),
        (3, 1, 1, (1, 2, 5, 6), None),
    ],
)
def test_gradients(backend, k, stride, pad, shape, act):
    layer = Conv2D(3, k, stride=stride, pad=pad, act=act, bias=False).set_backend(backend)
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)

    def f64(v, p):
        y = lref._conv2d(v, p["weight"], None, stride, pad)
        return np.maximum(y, 0) if act else y

    check_layer_gradients(layer, x, f64)
    assert layer.bias is None and [n for n, _ in layer.named_parameters()] == ["weight"]


def test_weight_init_matches_the_biased_layer():
    """torch draws no bias for bias=False; the weight is the same draw as with a bias."""
    a = Conv2D(4, 3, bias=False).build((2, 5, 5), rng=7)
    b = Conv2D(4, 3).build((2, 5, 5), rng=7)
    np.testing.assert_array_equal(a.weight.data, b.weight.data)
    bound = 1 / np.sqrt(2 * 9)
    assert np.abs(a.weight.data).max() <= bound


def test_in_sequential_fused_and_round_trip():
    model = Sequential(
        [
            Conv2D(4, 3, pad=1, act="relu", bias=False),
            MaxPool2D(2),
            Conv2D(6, 3, pad=1, act="relu"),
            MaxPool2D(2),
            Conv2D(5, 1, stride=2, bias=False),
            Flatten(),
        ],
        seed=3,
    )
    x = np.random.default_rng(3).standard_normal((3, 1, 12, 12)).astype(np.float32)
    y = model.forward(x)
    assert sorted(model.state_arrays()) == ["0.weight", "2.bias", "2.weight", "4.weight"]
    model.eval()
    np.testing.assert_allclose(model.forward(x), y, rtol=1e-5, atol=1e-5)  # fused conv + pool
    cfg = json.loads(json.dumps(model.get_config()))
    assert cfg["layers"][0]["bias"] is False and "bias" not in cfg["layers"][2]
    clone = Sequential.from_config(cfg)
    clone.load_state_arrays(model.state_arrays())
    clone.eval()  # the same (fused) kernels as the model's
    np.testing.assert_array_equal(clone.forward(x), model.forward(x))
    assert "Conv2D(4, 3, pad=1, bias=False, act='relu')" in model.summary()
    assert model.num_parameters() == 4 * 9 + 6 * 4 * 9 + 6 + 5 * 6


def test_bad_bias():
    with pytest.raises(TypeError, match="bias"):
        Conv2D(2, 3, bias="no")
    with pytest.raises(TypeError, match="bias"):
        Conv2D(2, 3, bias=0)
