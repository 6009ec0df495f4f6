"""AvgPool2D and GlobalAvgPool2D (kernels and layers) against torch: values and input gradients."""

import numpy as np
import pytest

from mantissa_embed import _reference as ref, engine
from mantissa_embed.layers import AvgPool2D, GlobalAvgPool2D

torch = pytest.importorskip("torch")
F = torch.nn.functional


BACKENDS = [pytest.param(engine, id="engine"), pytest.param(ref, id="numpy")]


def _close(a, b, rtol=1e-4):
    b = np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * (1 + np.abs(b).max()))


@pytest.mark.parametrize("be", BACKENDS)
@pytest.mark.parametrize(
    "shape,size,stride",
    [
        ((2, 3, 8, 8), 2, 2),
        ((1, 2, 7, 9), 3, 2),
        ((2, 1, 6, 5), 2, 1),
        ((3, 2, 9, 7), 2, 3),
        ((16, 32, 14, 14), 2, 2),
    ],
)
def test_avgpool2d_matches_torch(be, shape, size, stride):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    ty = F.avg_pool2d(tx, size, stride)
    y = be.avgpool2d_forward(x, size, stride)
    _close(y, ty.detach().numpy())
    dy = rng.standard_normal(y.shape).astype(np.float32)
    ty.backward(torch.tensor(dy, dtype=torch.float64))
    _close(be.avgpool2d_backward(dy, x.shape, size, stride), tx.grad.numpy())


@pytest.mark.parametrize("be", BACKENDS)
@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (2, 3, 7, 5), (8, 128, 7, 7), (1, 4, 28, 28)])
def test_global_avgpool2d_matches_torch(be, shape):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    ty = F.adaptive_avg_pool2d(tx, 1).flatten(1)
    y = be.global_avgpool2d_forward(x)
    _close(y, ty.detach().numpy())
    dy = rng.standard_normal(y.shape).astype(np.float32)
    ty.backward(torch.tensor(dy, dtype=torch.float64))
    _close(be.global_avgpool2d_backward(dy, x.shape), tx.grad.numpy())


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_layers_match_torch_modules(backend):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 9, 8)).astype(np.float32)
    for ours, theirs in [
        (AvgPool2D(3, stride=2), torch.nn.AvgPool2d(3, stride=2)),
        (AvgPool2D(2), torch.nn.AvgPool2d(2)),
        (GlobalAvgPool2D(), torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())),
    ]:
        ours.set_backend(backend)
        tx = torch.tensor(x, requires_grad=True)
        ty = theirs(tx)
        y = ours.forward(x)
        _close(y, ty.detach().numpy())
        dy = rng.standard_normal(y.shape).astype(np.float32)
        ty.backward(torch.tensor(dy))
        _close(ours.backward(dy), tx.grad.numpy())
