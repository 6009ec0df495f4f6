"""Residual: float64 finite differences through both branches (identity and strided shortcut,
nested, batch 1), parameter names, mode / backend propagation, the fused eval pass, config
round trip, bad arguments."""

import json

import numpy as np
import pytest

from _helpers import central_diff, central_diff_inplace
from mantissa_embed._reference import _conv as lref
from mantissa_embed.layers import (
    Conv2D,
    Dense,
    Flatten,
    GlobalAvgPool2D,
    MaxPool2D,
    ReLU,
    Residual,
    Sequential,
)
from mantissa_embed.layers.base_layer import LAYER_TYPES


def _net(backend="mantissa"):
    inner = Residual([Conv2D(3, 3, pad=1, act="relu"), Conv2D(3, 3, pad=1)])
    return Sequential(
        [
            Conv2D(3, 3, pad=1, act="relu"),
            Residual([inner, Conv2D(3, 1)]),  # nested, identity
            Residual(
                [Conv2D(4, 3, stride=2, pad=1, act="relu"), Conv2D(4, 3, pad=1)],
                shortcut=[Conv2D(4, 1, stride=2, bias=False)],
            ),  # projection
            GlobalAvgPool2D(),
            Dense(2),
        ],
        seed=5,
        backend=backend,
    )


def _forward64(model, x, p):
    """The model's forward in float64, from its parameters p (name -> float64 array)."""

    def conv(v, name, layer):
        y = lref._conv2d(v, p[name + ".weight"], p.get(name + ".bias"), layer.stride, layer.pad)
        return np.maximum(y, 0) if layer.act == "relu" else y

    def run(layers, v, prefix):
        for i, layer in enumerate(layers):
            name = f"{prefix}{i}"
            if isinstance(layer, Conv2D):
                v = conv(v, name, layer)
            elif isinstance(layer, Residual):
                b = run(layer.block, v, name + ".block.")
                s = run(layer.shortcut, v, name + ".shortcut.") if layer.shortcut else v
                v = np.maximum(b + s, 0)
            elif isinstance(layer, GlobalAvgPool2D):
                v = v.mean(axis=(2, 3))
            elif isinstance(layer, Dense):
                v = v @ p[name + ".weight"].T + p[name + ".bias"]
            else:
                raise TypeError(layer)
        return v

    return run(model.layers, x, "")


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("N", [1, 2])
def test_gradients_finite_differences(backend, N):
    model = _net(backend)
    x = np.random.default_rng(N).standard_normal((N, 2, 7, 6)).astype(np.float32)
    y = model.forward(x)
    r = np.random.default_rng(9).standard_normal(y.shape)
    model.zero_grad()
    dx = model.backward(r.astype(np.float32))
    p = {n: q.data.astype(np.float64) for n, q in model.named_parameters()}
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(y, _forward64(model, x64, p), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        dx,
        central_diff(lambda v: float((_forward64(model, v, p) * r).sum()), x64, 1e-6),
        rtol=1e-4,
        atol=1e-5,
    )
    for name, q in model.named_parameters():
        g = central_diff_inplace(lambda: float((_forward64(model, x64, p) * r).sum()), p[name], 1e-6)
        np.testing.assert_allclose(q.grad, g, rtol=1e-4, atol=1e-5, err_msg=name)


def test_parameter_names_modes_and_backend_propagate():
    model = _net().build((2, 8, 8))
    names = [n for n, _ in model.named_parameters()]
    assert "1.block.0.block.0.weight" in names and "2.shortcut.0.weight" in names
    assert "2.shortcut.0.bias" not in names
    assert sorted(model.state_arrays()) == sorted(names)
    model.eval().set_backend("numpy")
    inner = model[1].block[0].block[1]
    assert not inner.training and inner.backend == "numpy"
    model.train()
    assert inner.training


def test_eval_fused_pass_and_backward_after_it():
    model = Sequential(
        [
            Residual(
                [Conv2D(4, 3, pad=1, act="relu"), MaxPool2D(2), Conv2D(4, 3, pad=1)],
                shortcut=[Conv2D(4, 2, stride=2)],
            ),
            MaxPool2D(2),
            Flatten(),
            Dense(3),
        ],
        seed=2,
    )
    x = np.random.default_rng(2).standard_normal((3, 1, 8, 8)).astype(np.float32)
    y = model.forward(x)
    dy = np.ones_like(y)
    model.zero_grad()
    dx = model.backward(dy)
    grads = [q.grad.copy() for q in model.parameters()]
    assert model._relu_pool_at() == frozenset({0})  # the pool after the block applies its ReLU
    model.eval()
    np.testing.assert_allclose(model.forward(x), y, rtol=1e-5, atol=1e-6)
    assert model[0]._fused_x is not None  # conv + pool ran as one call inside the block
    model.zero_grad()
    np.testing.assert_allclose(model.backward(dy), dx, rtol=1e-5, atol=1e-6)
    for q, g in zip(model.parameters(), grads):
        np.testing.assert_allclose(q.grad, g, rtol=1e-5, atol=1e-6)


def test_config_round_trip_nested():
    model = _net()
    x = np.random.default_rng(3).standard_normal((2, 2, 7, 7)).astype(np.float32)
    y = model.forward(x)
    cfg = json.loads(json.dumps(model.get_config()))
    assert cfg["layers"][1]["type"] == "Residual" and cfg["layers"][1]["shortcut"] is None
    assert cfg["layers"][1]["block"][0]["type"] == "Residual"
    clone = Sequential.from_config(cfg)
    clone.load_state_arrays(model.state_arrays())
    np.testing.assert_array_equal(clone.forward(x), y)
    assert "Residual([Residual([" in model.summary()


def test_sequential_block_and_identity_output():
    block = Sequential([Conv2D(2, 3, pad=1), ReLU()])
    res = Residual(block)
    x = np.random.default_rng(4).standard_normal((2, 2, 5, 5)).astype(np.float32)
    y = res.forward(x)
    np.testing.assert_allclose(
        y,
        np.maximum(np.array(block.layers[1].forward(block.layers[0].forward(x))) + x, 0),
        rtol=1e-6,
        atol=1e-6,
    )


@pytest.mark.skipif("BatchNorm2D" not in LAYER_TYPES, reason="BatchNorm2D has not landed")
def test_default_projection_shortcut():
    res = Residual([Conv2D(6, 3, stride=2, pad=1)]).build((3, 9, 8))
    proj = res._proj
    assert isinstance(proj[0], Conv2D) and proj[0].stride == 2 and proj[0].bias is None
    assert type(proj[1]).__name__ == "BatchNorm2D"
    assert res.output_shape((3, 9, 8)) == (6, 5, 4)


def test_bad_arguments():
    with pytest.raises(TypeError, match="block"):
        Residual(Conv2D(2, 3))
    with pytest.raises(TypeError, match=r"block\[1\]"):
        Residual([Conv2D(2, 3), "relu"])
    with pytest.raises(ValueError, match="at least one"):
        Residual([])
    c = Conv2D(2, 3, pad=1)
    with pytest.raises(ValueError, match="distinct"):
        Residual([c], shortcut=[c])
    with pytest.raises(ValueError, match="shortcut gives"):
        Residual([Conv2D(4, 3, pad=1)], shortcut=[Conv2D(4, 3)]).build((2, 6, 6))
    with pytest.raises(ValueError, match="shortcut"):
        Residual([Flatten(), Dense(3)]).build((2, 4, 4))  # no 1x1 convolution maps (2,4,4) to (3,)
    with pytest.raises(ValueError, match="bad arguments"):
        Sequential.from_config({"layers": [{"type": "Residual", "block": [{"type": "ReLU"}], "bogus": 1}]})


def test_batch_norm_buffers_are_saved_and_restored():
    from mantissa_embed.layers import BatchNorm2D

    model = Sequential(
        [Residual([Conv2D(4, 3, stride=2, pad=1, bias=False), BatchNorm2D()]), GlobalAvgPool2D()], seed=1
    )
    x = np.random.default_rng(6).standard_normal((4, 2, 7, 7)).astype(np.float32)
    y = model.forward(x)
    state = model.state_arrays()
    assert "0.block.1.running_mean" in state and "0.shortcut.1.running_var" in state
    assert set(state) == set(model._state_shapes((2, 7, 7)))
    clone = Sequential.from_config(json.loads(json.dumps(model.get_config())))
    clone.load_state_arrays(state)
    model.eval()
    clone.eval()
    np.testing.assert_array_equal(clone.forward(x), model.forward(x))
    assert y.shape == (4, 4)
