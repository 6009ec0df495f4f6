"""Layer kernels and small_cnn_embedder against torch.nn.functional (oracle test):
conv2d, max_pool2d, linear, relu forward and their autograd gradients."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from mantissa_embed import (  # noqa: E402
    _reference as ref,  # noqa: E402
    engine,
    models,
)

BACKENDS = [pytest.param(engine, id="engine"), pytest.param(ref, id="numpy")]


def _t(a, grad=False):
    return torch.tensor(np.asarray(a), dtype=torch.float64, requires_grad=grad)


def _close(a, b, rtol=1e-5):
    b = np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * (1 + np.abs(b).max()))


@pytest.mark.parametrize("be", BACKENDS)
@pytest.mark.parametrize(
    "N,C,H,W,Fo,KH,KW,stride,pad",
    [
        (2, 3, 8, 7, 4, 3, 3, 1, 1),
        (1, 1, 5, 5, 2, 5, 5, 1, 0),
        (3, 2, 9, 6, 3, 2, 3, 2, 1),
        (2, 4, 7, 7, 5, 3, 1, 3, 2),
        (64, 8, 14, 14, 16, 3, 3, 1, 1),
    ],
)
def test_conv2d_matches_torch(be, N, C, H, W, Fo, KH, KW, stride, pad):
    rng = np.random.default_rng(N * 100 + C)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((Fo, C, KH, KW)).astype(np.float32)
    b = rng.standard_normal(Fo).astype(np.float32)
    tx, tw, tb = _t(x, True), _t(w, True), _t(b, True)
    ty = F.conv2d(tx, tw, tb, stride=stride, padding=pad)
    y = be.conv2d_forward(x, w, b, stride, pad)
    _close(y, ty.detach().numpy())
    dy = rng.standard_normal(y.shape).astype(np.float32)
    ty.backward(_t(dy))
    dx, dw, db = be.conv2d_backward(x, w, dy, stride, pad)
    _close(dx, tx.grad.numpy())
    _close(dw, tw.grad.numpy())
    _close(db, tb.grad.numpy())


@pytest.mark.parametrize("be", BACKENDS)
@pytest.mark.parametrize(
    "shape,size,stride",
    [((2, 3, 8, 8), 2, 2), ((1, 2, 7, 9), 3, 2), ((2, 1, 6, 5), 2, 1), ((64, 16, 14, 14), 2, 2)],
)
def test_maxpool2d_matches_torch(be, shape, size, stride):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    tx = _t(x, True)
    ty, tidx = F.max_pool2d(tx, size, stride, return_indices=True)
    y, arg = be.maxpool2d_forward(x, size, stride)
    np.testing.assert_array_equal(y, ty.detach().numpy().astype(np.float32))
    np.testing.assert_array_equal(arg, tidx.numpy())  # torch's indices are H*W plane offsets too
    dy = rng.standard_normal(y.shape).astype(np.float32)
    ty.backward(_t(dy))
    _close(be.maxpool2d_backward(dy, arg, x.shape), tx.grad.numpy())


@pytest.mark.parametrize("be", BACKENDS)
def test_dense_and_relu_match_torch(be):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((9, 13)).astype(np.float32)
    w = rng.standard_normal((6, 13)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    tx, tw, tb = _t(x, True), _t(w, True), _t(b, True)
    ty = F.relu(F.linear(tx, tw, tb))
    y = be.relu_forward(be.dense_forward(x, w, b))
    _close(y, ty.detach().numpy())
    dy = rng.standard_normal(y.shape).astype(np.float32)
    ty.backward(_t(dy))
    dx, dw, db = be.dense_backward(x, w, be.relu_backward(dy, y))
    _close(dx, tx.grad.numpy())
    _close(dw, tw.grad.numpy())
    _close(db, tb.grad.numpy())


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_small_cnn_embedder_matches_torch_network(backend):
    model = models.small_cnn_embedder(16, seed=0, backend=backend)
    X = np.random.default_rng(1).random((6, 1, 28, 28), dtype=np.float32)
    Z = model.forward(X)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(784, 64),
        torch.nn.ReLU(),
        torch.nn.Linear(64, 16),
    ).double()
    torch_params = [m for m in net if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    ours = [layer for layer in model.layers if hasattr(layer, "weight")]
    with torch.no_grad():
        for tm, layer in zip(torch_params, ours):
            tm.weight.copy_(torch.from_numpy(layer.weight.data.astype(np.float64)))
            tm.bias.copy_(torch.from_numpy(layer.bias.data.astype(np.float64)))
    tx = _t(X, True)
    tz = net(tx)
    _close(Z, tz.detach().numpy(), rtol=1e-4)
    dZ = np.random.default_rng(2).standard_normal(Z.shape).astype(np.float32)
    tz.backward(_t(dZ))
    dX = model.backward(dZ)
    _close(dX, tx.grad.numpy(), rtol=1e-4)
    for tm, layer in zip(torch_params, ours):
        _close(layer.weight.grad, tm.weight.grad.numpy(), rtol=1e-4)
        _close(layer.bias.grad, tm.bias.grad.numpy(), rtol=1e-4)


def test_default_initialization_matches_torch_distribution():
    """torch's Conv2d/Linear default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias."""
    model = models.small_cnn_embedder()
    model.build((1, 28, 28))
    torch.manual_seed(0)
    tl = torch.nn.Linear(784, 64)
    ours = model.layers[5]
    bound = 1 / np.sqrt(784)
    for o, t in ((ours.weight.data, tl.weight.detach().numpy()), (ours.bias.data, tl.bias.detach().numpy())):
        assert np.abs(o).max() <= bound and np.abs(t).max() <= bound
    assert abs(ours.weight.data.std() - tl.weight.detach().numpy().std()) < 0.1 * bound
