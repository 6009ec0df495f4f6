"""BatchNorm2D / BatchNorm1D layers: train/eval behaviour, the running statistics as buffers saved
and restored by Sequential.state_arrays / load_state_arrays and Embedder.save / load, get_config
round trips, and bad input."""

import numpy as np
import pytest

from mantissa_embed import Embedder
from mantissa_embed.layers import (
    BatchNorm1D,
    BatchNorm2D,
    Conv2D,
    Dense,
    Flatten,
    MaxPool2D,
    ReLU,
    Sequential,
)
from mantissa_embed.layers.base_layer import layer_from_config


def _x(shape, seed=0, offset=2.0):
    return (np.random.default_rng(seed).standard_normal(shape) * 3 + offset).astype(np.float32)


def _net(backend="mantissa"):
    return Sequential(
        [
            Conv2D(4, 3, pad=1),
            BatchNorm2D(act="relu"),
            MaxPool2D(2),
            Flatten(),
            Dense(6),
            BatchNorm1D(momentum=0.3),
        ],
        seed=1,
        backend=backend,
    )


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_train_uses_batch_statistics_and_eval_the_running_ones(backend):
    bn = BatchNorm2D(momentum=0.25).set_backend(backend)
    x = _x((5, 3, 4, 6))
    y = bn.forward(x).copy()
    x64 = x.astype(np.float64)
    mean, var = x64.mean(axis=(0, 2, 3)), x64.var(axis=(0, 2, 3))
    want = (x64 - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bn.running_mean, 0.25 * mean, rtol=1e-6)
    np.testing.assert_allclose(bn.running_var, 0.75 + 0.25 * x64.var(axis=(0, 2, 3), ddof=1), rtol=1e-6)
    rm, rv = bn.running_mean.copy(), bn.running_var.copy()
    bn.eval()
    y = bn.forward(x)
    want = (x64 - rm[:, None, None]) / np.sqrt(rv[:, None, None] + 1e-5)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(bn.running_mean, rm)  # eval leaves the running statistics
    np.testing.assert_array_equal(bn.running_var, rv)


def test_relu_output_and_fused_backward_of_the_following_pool():
    net = Sequential([BatchNorm2D(act="relu"), MaxPool2D(2)])
    y = net.forward(_x((3, 2, 4, 4)))
    assert (y >= 0).all() and (y == 0).any()
    assert net._relu_pool_at() == {0}  # the pool applies the BN's ReLU mask, BN continues pre-activation
    d1 = net.backward(np.ones_like(y))
    plain = Sequential([BatchNorm2D(), ReLU(), MaxPool2D(2)])
    plain.forward(_x((3, 2, 4, 4)))
    np.testing.assert_allclose(d1, plain.backward(np.ones_like(y)), rtol=1e-6, atol=1e-7)


def test_state_arrays_hold_the_running_statistics_and_round_trip():
    X = _x((8, 1, 6, 6))
    net = _net()
    for _ in range(3):
        y = net.forward(X)
        net.backward(np.ones_like(y))
    state = net.state_arrays()
    assert set(state) == {n for n, _ in net.named_parameters()} | {
        "1.running_mean",
        "1.running_var",
        "5.running_mean",
        "5.running_var",
    }
    assert dict(net.named_buffers())["1.running_mean"] is net[1].running_mean
    np.testing.assert_array_equal(state["5.running_var"], net[5].running_var)
    assert state["1.running_mean"] is not net[1].running_mean and state["1.running_mean"].any()
    assert net._state_shapes((1, 6, 6)) == {k: v.shape for k, v in state.items()}
    other = Sequential.from_config(net.get_config())
    other.load_state_arrays(state)
    np.testing.assert_array_equal(other[1].running_var, net[1].running_var)
    net.eval()
    other.eval()
    np.testing.assert_array_equal(other.forward(X), net.forward(X))


def test_models_without_buffers_keep_their_state_keys():
    """Files saved before buffers existed load unchanged: no buffer, no extra key."""
    net = Sequential([Conv2D(2, 3), Flatten(), Dense(3)]).build((1, 5, 5))
    assert list(net.state_arrays()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert net.named_buffers() == []


def test_load_state_arrays_requires_the_running_statistics():
    net = _net().build((1, 6, 6))
    state = net.state_arrays()
    del state["5.running_var"]
    with pytest.raises(ValueError, match=r"missing \['5.running_var'\]"):
        net.load_state_arrays(state)
    state = net.state_arrays()
    state["1.running_mean"] = np.zeros(5, np.float32)
    with pytest.raises(ValueError, match="1.running_mean.*must have shape"):
        net.load_state_arrays(state)
    state["1.running_mean"] = np.full(4, np.nan, np.float32)
    with pytest.raises(ValueError, match="NaN"):
        net.load_state_arrays(state)


def test_embedder_save_load_keeps_the_running_statistics(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.random((48, 1, 8, 8), dtype=np.float32)
    y = np.arange(48) % 4
    net = Sequential([Conv2D(4, 3, pad=1), BatchNorm2D(act="relu"), MaxPool2D(2), Flatten(), Dense(5)])
    emb = Embedder(net, seed=0).fit(X, y, epochs=1, batch_size=16)
    assert emb.net[1].running_mean.any()
    path = emb.save(tmp_path / "bn.npz")
    with np.load(path) as f:
        np.testing.assert_array_equal(f["trunk/1.running_var"], emb.net[1].running_var)
    loaded = Embedder.load(path)
    np.testing.assert_array_equal(loaded.net[1].running_mean, emb.net[1].running_mean)
    np.testing.assert_array_equal(loaded.embed(X), emb.embed(X))


@pytest.mark.parametrize(
    "layer", [BatchNorm2D(momentum=0.3, eps=1e-3, act="relu"), BatchNorm1D(num_features=7)]
)
def test_get_config_round_trips(layer):
    cfg = layer.get_config()
    again = layer_from_config(cfg)
    assert type(again) is type(layer) and again.get_config() == cfg


def test_num_features_is_checked_against_the_input():
    with pytest.raises(ValueError, match=r"num_features=3\) got 4 channels"):
        BatchNorm2D(num_features=3).forward(_x((2, 4, 3, 3)))
    assert BatchNorm1D(num_features=4).forward(_x((2, 4))).shape == (2, 4)


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"momentum": -0.1}, ValueError, "momentum must be in"),
        ({"momentum": 1.01}, ValueError, "momentum must be in"),
        ({"momentum": None}, TypeError, "momentum must be a number"),
        ({"eps": 0}, ValueError, "eps must be >"),
        ({"eps": -1e-5}, ValueError, "eps must be >"),
        ({"eps": "1e-5"}, TypeError, "eps must be a number"),
        ({"act": "sigmoid"}, ValueError, "act must be"),
        ({"act": "leaky_relu"}, ValueError, "act must be None, 'identity' or 'relu' for a batch norm"),
        ({"num_features": 0}, ValueError, "num_features must be >= 1"),
        ({"num_features": 2.5}, TypeError, "num_features must be an int"),
    ],
)
@pytest.mark.parametrize("cls", [BatchNorm2D, BatchNorm1D])
def test_bad_arguments(cls, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        cls(**kwargs)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"BatchNorm2D expects per-sample input \(C, H, W\)"):
        BatchNorm2D().forward(_x((3, 4)))
    with pytest.raises(ValueError, match=r"BatchNorm1D expects per-sample input \(C,\) or \(C, L\)"):
        BatchNorm1D().forward(_x((3, 4, 2, 2)))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        BatchNorm1D().forward(_x((1, 4)))
    bn = BatchNorm1D().eval()
    assert bn.forward(_x((1, 4))).shape == (1, 4)  # eval takes a batch of one
    with pytest.raises(RuntimeError, match="backward called before forward"):
        BatchNorm2D().backward(np.ones((2, 1, 2, 2), np.float32))
