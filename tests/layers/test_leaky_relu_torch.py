"""Conv2D / Dense with act="leaky_relu" and the LeakyReLU layer against torch: values and the
gradients of input, weight and bias."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from mantissa_embed.layers import Conv2D, Dense, LeakyReLU  # noqa: E402


def _close(a, b, rtol=1e-4):
    b = np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * (1 + np.abs(b).max()))


def _t(a, grad=True):
    return torch.tensor(np.asarray(a), dtype=torch.float64, requires_grad=grad)


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize(
    "shape,F_,k,stride,pad,slope",
    [
        ((2, 3, 8, 7), 4, 3, 1, 1, 0.01),
        ((1, 1, 9, 9), 8, 3, 2, 1, 0.2),
        ((3, 16, 7, 7), 32, 1, 1, 0, 0.1),
        ((2, 8, 10, 9), 16, 3, 2, 0, 0.01),
        ((16, 32, 14, 14), 64, 3, 1, 1, 0.05),
    ],
)
def test_conv2d_leaky_matches_torch(backend, shape, F_, k, stride, pad, slope):
    rng = np.random.default_rng(sum(shape))
    layer = Conv2D(F_, k, stride=stride, pad=pad, act="leaky_relu", negative_slope=slope).set_backend(backend)
    x = rng.standard_normal(shape).astype(np.float32)
    y = layer.forward(x)
    tx, tw, tb = _t(x), _t(layer.weight.data), _t(layer.bias.data)
    ty = F.leaky_relu(F.conv2d(tx, tw, tb, stride=stride, padding=pad), slope)
    _close(y, ty.detach().numpy())
    dy = rng.standard_normal(y.shape).astype(np.float32)
    ty.backward(_t(dy, False))
    dx = layer.backward(dy)
    _close(dx, tx.grad.numpy())
    _close(layer.weight.grad, tw.grad.numpy())
    _close(layer.bias.grad, tb.grad.numpy())


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("N,n_in,n_out,slope", [(1, 5, 3, 0.01), (64, 128, 64, 0.2)])
def test_dense_leaky_matches_torch(backend, N, n_in, n_out, slope):
    rng = np.random.default_rng(N)
    layer = Dense(n_out, act="leaky_relu", negative_slope=slope).set_backend(backend)
    x = rng.standard_normal((N, n_in)).astype(np.float32)
    y = layer.forward(x)
    tx, tw, tb = _t(x), _t(layer.weight.data), _t(layer.bias.data)
    ty = F.leaky_relu(F.linear(tx, tw, tb), slope)
    _close(y, ty.detach().numpy())
    dy = rng.standard_normal(y.shape).astype(np.float32)
    ty.backward(_t(dy, False))
    _close(layer.backward(dy), tx.grad.numpy())
    _close(layer.weight.grad, tw.grad.numpy())
    _close(layer.bias.grad, tb.grad.numpy())


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_leaky_relu_layer_matches_torch_module(backend):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 3, 5, 5)).astype(np.float32)
    x[0, 0, 0, :] = 0.0  # torch's gradient at 0 is the slope
    for slope in (0.01, 0.3):
        tx = torch.tensor(x, requires_grad=True)
        ty = torch.nn.LeakyReLU(slope)(tx)
        layer = LeakyReLU(slope).set_backend(backend)
        _close(layer.forward(x), ty.detach().numpy())
        dy = rng.standard_normal(x.shape).astype(np.float32)
        ty.backward(torch.tensor(dy))
        _close(layer.backward(dy), tx.grad.numpy())
