"""MaxPool2D(pad=...): implicit -inf padding (torch's semantics) on both backends: values and
argmax offsets against the numpy twin and an independent loop, gradients by finite
differences, the fused ReLU backward, shapes, configs (old ones load as pad=0) and errors."""

import json

import numpy as np
import pytest

from layers._layer_fd import check_layer_gradients
from mantissa_embed import _reference as ref, engine
from mantissa_embed.layers import Conv2D, MaxPool2D, Sequential

CASES = [
    ((2, 3, 8, 8), 3, 2, 1),
    ((1, 2, 7, 9), 3, 2, 1),
    ((2, 1, 5, 5), 2, 2, 1),
    ((1, 2, 6, 7), 5, 3, 2),
    ((1, 1, 4, 4), 3, 1, 1),
    ((1, 3, 1, 1), 2, 1, 1),
]


def _max64(x, size, stride, pad):
    """Window maxima over the input values only (the padding never wins), by explicit loops."""
    N, C, H, W = x.shape
    HO, WO = (H + 2 * pad - size) // stride + 1, (W + 2 * pad - size) // stride + 1
    y = np.empty((N, C, HO, WO))
    for i in range(HO):
        for j in range(WO):
            r0, c0 = i * stride - pad, j * stride - pad
            win = x[:, :, max(r0, 0) : r0 + size, max(c0, 0) : c0 + size]
            y[:, :, i, j] = win.max(axis=(2, 3))
    return y


@pytest.mark.parametrize("shape,size,stride,pad", CASES)
def test_engine_matches_twin_and_loops(shape, size, stride, pad):
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    y, a = engine.maxpool2d_forward(x, size, stride, pad=pad)
    y2, a2 = ref.maxpool2d_forward(x, size, stride, pad=pad)
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_array_equal(a, a2)
    np.testing.assert_array_equal(y, _max64(x, size, stride, pad).astype(np.float32))
    H, W = shape[2:]
    assert a.min() >= 0 and a.max() < H * W
    np.testing.assert_array_equal(
        np.take_along_axis(x.reshape(*shape[:2], -1), a.reshape(*shape[:2], -1), 2), y.reshape(*shape[:2], -1)
    )  # every argmax points at its maximum
    dy = np.random.default_rng(1).standard_normal(y.shape).astype(np.float32)
    np.testing.assert_array_equal(
        engine.maxpool2d_backward(dy, a, shape), ref.maxpool2d_backward(dy, a2, shape)
    )


def test_all_minus_inf_window_points_at_its_first_input():
    x = np.full((1, 1, 3, 3), -np.inf, dtype=np.float32)
    for be in (engine, ref):
        y, a = be.maxpool2d_forward(x, 3, 2, pad=1)
        assert np.all(y == -np.inf)
        np.testing.assert_array_equal(a.ravel(), [0, 1, 3, 4])  # torch's: the window's first input position


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("shape,size,stride,pad", CASES[:5])
def test_layer_gradients(backend, shape, size, stride, pad):
    layer = MaxPool2D(size, stride=stride, pad=pad).set_backend(backend)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    check_layer_gradients(layer, x, lambda v, p: _max64(v, size, stride, pad))


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_relu_fused_backward_after_padded_pool(backend):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 9, 9)).astype(np.float32)
    fused = Sequential(
        [Conv2D(4, 3, pad=1, act="relu"), MaxPool2D(3, stride=2, pad=1)], seed=1, backend=backend
    )
    plain = Sequential(
        [Conv2D(4, 3, pad=1, act="relu"), MaxPool2D(3, stride=2, pad=1)], seed=1, backend=backend
    )
    y = fused.forward(x)
    assert fused._relu_pool_at() == {0}
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx = fused.backward(dy)
    # the same model on the twin, layer by layer without the fused call
    conv, pool = plain.layers
    plain.build(x.shape[1:])
    h = conv.forward(x)
    pool.forward(h)
    d = conv.backward(pool.backward(dy))
    np.testing.assert_allclose(dx, d, rtol=1e-6, atol=1e-6)


def test_shapes_config_and_errors():
    assert MaxPool2D(3, 2, pad=1).output_shape((64, 112, 112)) == (64, 56, 56)
    assert MaxPool2D(3, 2, pad=1).output_shape((1, 56, 46)) == (1, 28, 23)
    assert MaxPool2D(3, 2, pad=1).output_shape((1, 1, 1)) == (1, 1, 1)
    assert repr(MaxPool2D(3, 2, pad=1)) == "MaxPool2D(3, stride=2, pad=1)"
    assert MaxPool2D(2).get_config() == {"type": "MaxPool2D", "size": 2, "stride": None}  # as before pad
    model = Sequential([Conv2D(2, 3), MaxPool2D(3, stride=2, pad=1)])
    model.build((1, 9, 9))
    again = Sequential.from_config(json.loads(json.dumps(model.get_config())))
    assert again.layers[1].pad == 1 and again.output_shape() == model.output_shape() == (2, 4, 4)
    old = {
        "class": "Sequential",
        "seed": 0,
        "backend": "mantissa",
        "input_shape": None,
        "layers": [{"type": "MaxPool2D", "size": 2, "stride": None}],
    }
    assert Sequential.from_config(old).layers[0].pad == 0
    with pytest.raises(ValueError, match="half"):
        MaxPool2D(3, pad=2)
    with pytest.raises(ValueError, match="pad"):
        MaxPool2D(3, pad=-1)
    with pytest.raises(TypeError, match="pad"):
        MaxPool2D(3, pad=1.5)
    with pytest.raises(ValueError, match="larger"):
        MaxPool2D(5, pad=1).output_shape((1, 2, 2))
    with pytest.raises(ValueError, match="half"):
        engine.maxpool2d_forward(np.zeros((1, 1, 4, 4), np.float32), 2, 2, pad=2)
    with pytest.raises(ValueError, match="half"):
        ref.maxpool2d_forward(np.zeros((1, 1, 4, 4), np.float32), 2, 2, pad=2)
    assert MaxPool2D(2, 2, pad=1).fusion_tags() == ()  # the fused conv+pool2 kernels have no padding
