"""Layers and Sequential: gradients (finite differences in float64), buffers, config/state
round trips, initialization and input validation."""

import json

import numpy as np
import pytest

from mantissa_embed import _workspace
from mantissa_embed._reference import _conv as lref
from mantissa_embed.layers import Conv2D, Dense, Flatten, Layer, MaxPool2D, ReLU, Sequential
from mantissa_embed.parameter import Parameter

BACKENDS = ["mantissa", "numpy"]


# ------------------------------------------------------------------ float64 reference forward


def _f64_layer(layer, X, params):
    """The layer's forward in float64 (independent of the backends), params: name -> array."""
    if isinstance(layer, Conv2D):
        y = lref._conv2d(X, params["weight"], params["bias"], layer.stride, layer.pad)
        return np.maximum(y, 0) if layer.act == "relu" else y
    if isinstance(layer, Dense):
        y = X @ params["weight"].T + params["bias"]
        return np.maximum(y, 0) if layer.act == "relu" else y
    if isinstance(layer, MaxPool2D):
        return lref._maxpool2d(X, layer.size, layer.stride)[0]
    if isinstance(layer, Flatten):
        return X.reshape(X.shape[0], -1)
    if isinstance(layer, ReLU):
        return np.maximum(X, 0)
    raise TypeError(layer)


def _f64_params(layers):
    return [{n: p.data.astype(np.float64) for n, p in layer.named_parameters()} for layer in layers]


def _f64_forward(layers, X, params):
    h = X
    for layer, p in zip(layers, params):
        h = _f64_layer(layer, h, p)
    return h


def _numeric_grad(f, arr, eps=1e-6):
    g = np.zeros_like(arr)
    for i in np.ndindex(arr.shape):
        old = arr[i]
        arr[i] = old + eps
        lp = f()
        arr[i] = old - eps
        lm = f()
        arr[i] = old
        g[i] = (lp - lm) / (2 * eps)
    return g


def _check_gradients(layers, model_forward, model_backward, X, seed=0):
    """Compare analytic dX and parameter grads with float64 central differences."""
    rng = np.random.default_rng(seed)
    Y = model_forward(X)
    R = rng.standard_normal(Y.shape)
    for layer in layers:
        layer.zero_grad()
    dX = model_backward(R.astype(np.float32))
    X64 = X.astype(np.float64)
    params = _f64_params(layers)

    def loss():
        return float((_f64_forward(layers, X64, params) * R).sum())

    np.testing.assert_allclose(Y, _f64_forward(layers, X64, params), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dX, _numeric_grad(loss, X64), rtol=1e-4, atol=1e-5)
    for layer, p64 in zip(layers, params):
        for name, p in layer.named_parameters():
            np.testing.assert_allclose(
                p.grad, _numeric_grad(loss, p64[name]), rtol=1e-4, atol=1e-5, err_msg=f"{layer!r}.{name}"
            )


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


LAYER_CASES = [
    (lambda: Conv2D(3, 3, pad=1), (2, 2, 5, 6)),
    (lambda: Conv2D(2, (2, 3), stride=2, pad=2, act="relu"), (1, 3, 7, 5)),
    (lambda: Conv2D(4, 1), (3, 2, 4, 4)),
    (lambda: Conv2D(2, 3, stride=3, act="identity"), (2, 1, 8, 7)),
    (lambda: MaxPool2D(2), (2, 3, 6, 5)),
    (lambda: MaxPool2D(3, stride=1), (1, 2, 5, 6)),
    (lambda: MaxPool2D(2, stride=3), (2, 1, 7, 8)),
    (lambda: Dense(5), (4, 7)),
    (lambda: Dense(3, act="relu"), (1, 6)),
    (lambda: ReLU(), (3, 2, 4)),
    (lambda: Flatten(), (2, 3, 2, 2)),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("make,shape", LAYER_CASES)
def test_layer_gradients_finite_differences(make, shape, backend):
    layer = make().set_backend(backend)
    X = _x(shape, seed=len(shape))
    _check_gradients([layer], lambda v: np.array(layer.forward(v)), lambda d: np.array(layer.backward(d)), X)


def _small_net(backend="mantissa", seed=3):
    return Sequential(
        [
            Conv2D(3, 3, stride=2, pad=1, act="relu"),
            MaxPool2D(2, stride=1),
            Conv2D(2, 2, pad=1),
            ReLU(),
            Flatten(),
            Dense(5, act="relu"),
            Dense(3),
        ],
        seed=seed,
        backend=backend,
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_sequential_end_to_end_gradients(backend):
    model = _small_net(backend)
    X = _x((2, 2, 9, 8), seed=1)
    _check_gradients(model.layers, model.forward, model.backward, X, seed=4)


def test_sequential_batch_of_one_gradients():
    model = _small_net()
    _check_gradients(model.layers, model.forward, model.backward, _x((1, 2, 7, 7), seed=2), seed=5)


def test_backends_agree():
    X = _x((6, 2, 9, 8), seed=8)
    a, b = _small_net("mantissa"), _small_net("numpy")
    ya, yb = a.forward(X), b.forward(X)
    np.testing.assert_allclose(ya, yb, rtol=1e-5, atol=1e-6)
    dY = _x(ya.shape, seed=9)
    dxa, dxb = a.backward(dY), b.backward(dY)
    np.testing.assert_allclose(dxa, dxb, rtol=1e-4, atol=1e-6)
    for pa, pb in zip(a.parameters(), b.parameters()):
        np.testing.assert_allclose(pa.grad, pb.grad, rtol=1e-4, atol=1e-6)


def test_backward_accumulates_and_need_dx():
    model = _small_net()
    X = _x((3, 2, 9, 8))
    dY = _x(model.forward(X).shape, seed=1)
    model.backward(dY)
    g1 = [p.grad.copy() for p in model.parameters()]
    assert model.backward(dY, need_dx=False) is None
    for p, g in zip(model.parameters(), g1):
        np.testing.assert_allclose(p.grad, 2 * g, rtol=1e-6, atol=1e-7)
    model.zero_grad()
    assert all(not p.grad.any() for p in model.parameters())


# --------------------------------------------------------------------------------- buffers


def test_layer_buffers_are_reused_and_sequential_returns_fresh_arrays():
    model = _small_net()
    X = _x((8, 2, 9, 8))
    y1 = model.forward(X)
    conv = model.layers[2]  # layer 0's ReLU output, read only by the pooling, lives in lent memory
    out_buf, ws_buf = conv._out._arr, _workspace._LOCAL.stack.buf  # the thread's scratch: conv workspaces
    assert out_buf is not None and ws_buf.size > 0
    y2 = model.forward(X)
    assert conv._out._arr is out_buf and _workspace._LOCAL.stack.buf is ws_buf  # no reallocation
    assert not np.shares_memory(y1, y2)
    np.testing.assert_array_equal(y1, y2)
    # a smaller batch uses a slice of the same buffers
    y3 = model.forward(X[:5])
    assert conv._out._arr is out_buf
    np.testing.assert_array_equal(y3, y1[:5])
    dx1 = model.backward(np.ones_like(y3))
    dx2 = model.backward(np.ones_like(y3))
    assert not np.shares_memory(dx1, dx2)
    # a layer's own forward returns its own buffer, overwritten by the next forward
    first = model.layers[0]
    h1 = first.forward(X)
    assert np.shares_memory(h1, first._out._arr)


def test_empty_batch():
    model = _small_net()
    model.build((2, 9, 8))
    y = model.forward(np.zeros((0, 2, 9, 8), np.float32))
    assert y.shape == (0, 3)
    assert model.backward(np.zeros((0, 3), np.float32)).shape == (0, 2, 9, 8)


# ------------------------------------------------------------------------- config and state


def test_config_and_state_round_trip(tmp_path):
    model = _small_net(seed=12)
    X = _x((4, 2, 9, 8))
    y = model.forward(X)
    cfg = json.loads(json.dumps(model.get_config()))
    path = tmp_path / "m.npz"
    np.savez(path, **model.state_arrays())
    with np.load(path, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    clone = Sequential.from_config({**cfg, "seed": 99})  # different init, then overwritten
    assert clone.built and clone.input_shape == (2, 9, 8)
    assert not np.allclose(clone.forward(X), y)
    clone.load_state_arrays(arrays)
    np.testing.assert_array_equal(clone.forward(X), y)
    assert sorted(arrays) == sorted(n for n, _ in model.named_parameters())
    assert list(arrays)[:2] == ["0.weight", "0.bias"]


def test_load_state_arrays_rejects_mismatches():
    model = _small_net()
    model.build((2, 9, 8))
    good = model.state_arrays()
    with pytest.raises(ValueError, match="missing"):
        model.load_state_arrays({k: v for k, v in good.items() if k != "0.bias"})
    with pytest.raises(ValueError, match="unexpected"):
        model.load_state_arrays({**good, "9.weight": np.zeros(2)})
    bad = dict(good)
    bad["0.weight"] = np.zeros((1, 2, 3))
    with pytest.raises(ValueError, match="shape"):
        model.load_state_arrays(bad)
    bad["0.weight"] = np.full(good["0.weight"].shape, np.nan)
    with pytest.raises(ValueError, match="NaN"):
        model.load_state_arrays(bad)
    # nothing was modified by the failed loads
    for k, v in model.state_arrays().items():
        np.testing.assert_array_equal(v, good[k])
    with pytest.raises(RuntimeError):
        _small_net().load_state_arrays(good)


def test_from_config_rejects_malformed():
    with pytest.raises(TypeError):
        Sequential.from_config([1, 2])
    with pytest.raises(ValueError, match="layers"):
        Sequential.from_config({})
    with pytest.raises(ValueError, match="unknown type"):
        Sequential.from_config({"layers": [{"type": "Transformer"}]})
    with pytest.raises(ValueError, match="bad arguments"):
        Sequential.from_config({"layers": [{"type": "Dense", "units": 3, "bogus": 1}]})
    with pytest.raises(ValueError, match="act"):
        Sequential.from_config({"layers": [{"type": "Dense", "units": 3, "act": "tanh"}]})


# ------------------------------------------------------------------------------ init / seeds


def test_initialization_follows_torch_defaults_and_seed():
    a = _small_net(seed=5)
    a.build((2, 9, 8))
    b = _small_net(seed=5)
    b.build((2, 9, 8))
    c = _small_net(seed=6)
    c.build((2, 9, 8))
    for pa, pb in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(pa.data, pb.data)
    assert not np.array_equal(a.parameters()[0].data, c.parameters()[0].data)
    for layer in a.layers:
        if isinstance(layer, (Conv2D, Dense)):
            fan_in = int(np.prod(layer.weight.shape[1:]))
            bound = 1 / np.sqrt(fan_in)
            for p in layer.parameters():
                assert p.data.dtype == np.float32 and p.data.flags.c_contiguous
                assert np.abs(p.data).max() <= bound
    big = Dense(400)
    big.build((100,), rng=0)
    w = big.weight.data
    assert abs(w.std() - 0.1 / np.sqrt(3)) < 0.005  # U(-1/sqrt(100), 1/sqrt(100))


def test_generator_seed_is_accepted_and_global_rng_untouched():
    state = np.random.get_state()[1].copy()
    m = _small_net(seed=np.random.default_rng(3))
    m.forward(_x((2, 2, 9, 8)))
    assert np.array_equal(np.random.get_state()[1], state)
    assert m.get_config()["seed"] is None


# ---------------------------------------------------------------------------------- summary


def test_summary_and_shapes():
    model = _small_net()
    with pytest.raises(RuntimeError):
        model.summary()
    with pytest.raises(RuntimeError):
        model.output_shape()
    assert model.output_shape((2, 9, 8)) == (3,)
    model.build((2, 9, 8))
    text = model.summary()
    assert "Conv2D" in text and "Total params" in text
    assert f"{model.num_parameters():,}" in text
    assert model.output_shape() == (3,)
    assert len(model) == 7 and isinstance(model[0], Conv2D)
    assert model.train() is model and all(layer.training for layer in model)
    assert model.eval() is model and not any(layer.training for layer in model)


# ------------------------------------------------------------------------------- validation


def test_forward_validates_X():
    model = _small_net()
    with pytest.raises(ValueError, match="X must be 4-D"):
        model.forward(np.zeros((2, 9, 8), np.float32))
    X = _x((2, 2, 9, 8))
    X[0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        model.forward(X)
    with pytest.raises(TypeError, match="X"):
        model.forward("images")
    with pytest.raises(ValueError, match="at least one sample"):
        model.forward(np.zeros((0, 2, 9, 8), np.float32))
    model.forward(_x((2, 2, 9, 8)))
    with pytest.raises(ValueError, match=r"X must have shape \(N, 2, 9, 8\)"):
        model.forward(_x((2, 2, 9, 9)))
    y = model.forward(_x((2, 2, 9, 8)).astype(np.float64))  # converted
    assert y.dtype == np.float32


def test_backward_validates():
    model = _small_net()
    with pytest.raises(RuntimeError, match="before forward"):
        model.backward(np.zeros((2, 3), np.float32))
    model.forward(_x((2, 2, 9, 8)))
    with pytest.raises(ValueError, match="dY must have shape"):
        model.backward(np.zeros((3, 3), np.float32))
    with pytest.raises(ValueError, match="dY contains NaN"):
        model.backward(np.full((2, 3), np.inf, np.float32))
    with pytest.raises(RuntimeError):
        Dense(3).backward(np.zeros((1, 3), np.float32))


def test_layer_argument_validation():
    with pytest.raises(ValueError, match="act"):
        Conv2D(3, 3, act="sigmoid")
    with pytest.raises(TypeError, match="act"):
        Dense(3, act=1)
    with pytest.raises(ValueError, match="out_channels"):
        Conv2D(0, 3)
    with pytest.raises(TypeError, match="kernel_size"):
        Conv2D(2, 2.5)
    with pytest.raises(ValueError, match="kernel_size"):
        Conv2D(2, (1, 2, 3))
    with pytest.raises(ValueError, match="pad"):
        Conv2D(2, 3, pad=-1)
    with pytest.raises(ValueError, match="stride"):
        MaxPool2D(2, stride=0)
    with pytest.raises(ValueError, match="units"):
        Dense(0)
    with pytest.raises(ValueError, match="empty"):
        Sequential([])
    with pytest.raises(TypeError):
        Sequential([Dense(2), "relu"])
    d = Dense(2)
    with pytest.raises(ValueError, match="twice"):
        Sequential([d, d])
    with pytest.raises(ValueError, match="backend"):
        Sequential([Dense(2)], backend="torch")
    with pytest.raises(ValueError, match="seed"):
        Sequential([Dense(2)], seed=-1)


def test_incompatible_shapes_fail_at_build_without_side_effects():
    model = Sequential([Conv2D(2, 3), Dense(4)])
    with pytest.raises(ValueError, match="Flatten"):
        model.forward(_x((1, 1, 5, 5)))
    assert not model.built and not model.layers[0].built
    with pytest.raises(ValueError, match="larger"):
        Sequential([Conv2D(2, 5)]).forward(_x((1, 1, 3, 3)))
    with pytest.raises(ValueError, match="larger"):
        Sequential([MaxPool2D(4)]).forward(_x((1, 1, 3, 3)))
    built = Sequential([Dense(2)]).build((3,))
    with pytest.raises(ValueError, match="already built"):
        built.build((4,))


def test_prebuilt_layers_are_kept():
    d = Dense(3)
    d.build((4,), rng=1)
    w = d.weight.data.copy()
    model = Sequential([d], seed=9)
    assert model.built
    model.forward(_x((2, 4)))
    np.testing.assert_array_equal(d.weight.data, w)


def test_layer_is_a_layer_and_parameters_are_parameters():
    model = _small_net()
    model.build((2, 9, 8))
    assert all(isinstance(layer, Layer) for layer in model)
    assert all(isinstance(p, Parameter) for p in model.parameters())
    assert [n for n, _ in model.named_parameters()][:2] == ["0.weight", "0.bias"]


def test_bitwise_reproducible_and_batch_invariant():
    """Same inputs, same thread count -> identical bits; a sample's result does not depend on
    the batch it is in (the per-image conv work split and row-wise dense products)."""
    model = _small_net()
    X = _x((9, 2, 9, 8), seed=3)
    y1 = model.forward(X)
    dY = _x(y1.shape, seed=4)
    g1 = model.backward(dY)
    w1 = [p.grad.copy() for p in model.parameters()]
    model.zero_grad()
    y2 = model.forward(X)
    g2 = model.backward(dY)
    assert np.array_equal(y1, y2) and np.array_equal(g1, g2)
    assert all(np.array_equal(p.grad, w) for p, w in zip(model.parameters(), w1))
    singles = np.concatenate([model.forward(X[i : i + 1]) for i in range(len(X))])
    assert np.array_equal(singles, y1)
