"""Conv2D(bias=False), 1x1 and stride-2 convolutions against torch.nn.Conv2d: values and the
input and weight gradients."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mantissa_embed.layers import Conv2D  # noqa: E402


def _close(a, b, rtol=1e-4):
    b = np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * (1 + np.abs(b).max()))


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize(
    "shape,F_,k,stride,pad,bias",
    [
        ((2, 8, 7, 7), 16, 1, 1, 0, False),
        ((3, 16, 9, 8), 32, 1, 2, 0, False),
        ((1, 3, 8, 8), 4, 3, 2, 1, False),
        ((2, 32, 14, 14), 64, 1, 2, 0, True),
        ((4, 4, 11, 10), 8, 3, 2, 1, True),
        ((16, 64, 14, 14), 128, 1, 1, 0, False),
    ],
)
def test_matches_torch(backend, shape, F_, k, stride, pad, bias):
    rng = np.random.default_rng(sum(shape))
    layer = Conv2D(F_, k, stride=stride, pad=pad, bias=bias).set_backend(backend)
    x = rng.standard_normal(shape).astype(np.float32)
    y = layer.forward(x)
    conv = torch.nn.Conv2d(shape[1], F_, k, stride=stride, padding=pad, bias=bias).double()
    with torch.no_grad():
        conv.weight.copy_(torch.tensor(layer.weight.data))
        if bias:
            conv.bias.copy_(torch.tensor(layer.bias.data))
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    ty = conv(tx)
    _close(y, ty.detach().numpy())
    dy = rng.standard_normal(y.shape).astype(np.float32)
    ty.backward(torch.tensor(dy, dtype=torch.float64))
    _close(layer.backward(dy), tx.grad.numpy())
    _close(layer.weight.grad, conv.weight.grad.numpy())
    if bias:
        _close(layer.bias.grad, conv.bias.grad.numpy())
    else:
        assert layer.bias is None
