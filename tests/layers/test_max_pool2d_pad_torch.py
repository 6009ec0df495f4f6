"""MaxPool2D with padding against torch.nn.functional.max_pool2d: values, indices and input
gradients, kernels (both backends) and the layer."""

import numpy as np
import pytest

from mantissa_embed import _reference as ref, engine
from mantissa_embed.layers import MaxPool2D

torch = pytest.importorskip("torch")
F = torch.nn.functional


BACKENDS = [pytest.param(engine, id="engine"), pytest.param(ref, id="numpy")]


@pytest.mark.parametrize("be", BACKENDS)
@pytest.mark.parametrize(
    "shape,size,stride,pad",
    [
        ((2, 3, 112, 112), 3, 2, 1),
        ((2, 4, 56, 46), 3, 2, 1),
        ((1, 2, 7, 9), 3, 2, 1),
        ((2, 1, 5, 5), 2, 2, 1),
        ((1, 2, 6, 7), 5, 3, 2),
        ((1, 1, 4, 4), 3, 1, 1),
        ((1, 3, 1, 1), 2, 1, 1),
        ((1, 2, 11, 10), 4, 3, 2),
    ],
)
def test_maxpool2d_pad_matches_torch(be, shape, size, stride, pad):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    x[0, 0, 0, :] = -5.0  # border values below zero next to the padding
    tx = torch.tensor(x, requires_grad=True)
    ty, ti = F.max_pool2d(tx, size, stride, pad, return_indices=True)
    y, a = be.maxpool2d_forward(x, size, stride, pad=pad)
    np.testing.assert_array_equal(y, ty.detach().numpy())
    np.testing.assert_array_equal(a, ti.numpy())
    dy = rng.standard_normal(y.shape).astype(np.float32)
    ty.backward(torch.tensor(dy))
    np.testing.assert_allclose(be.maxpool2d_backward(dy, a, shape), tx.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_layer_matches_torch_module(backend):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 8, 112, 92)).astype(np.float32)
    layer = MaxPool2D(3, stride=2, pad=1).set_backend(backend)
    module = torch.nn.MaxPool2d(3, 2, 1)
    tx = torch.tensor(x, requires_grad=True)
    ty = module(tx)
    y = layer.forward(x)
    np.testing.assert_array_equal(y, ty.detach().numpy())
    dy = rng.standard_normal(y.shape).astype(np.float32)
    ty.backward(torch.tensor(dy))
    np.testing.assert_allclose(layer.backward(dy), tx.grad.numpy(), rtol=1e-6, atol=1e-6)
