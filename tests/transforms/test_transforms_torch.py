"""affine_resample_forward / _backward against torch (oracle test): the convention is
``grid_sample(x, affine_grid(theta, x.shape, align_corners=False), mode="bilinear",
padding_mode="zeros", align_corners=False)``, values and the gradients for x and theta."""

import numpy as np
import pytest

from _helpers import close_scaled
from mantissa_embed import _reference as ref, engine

torch = pytest.importorskip("torch")
F = torch.nn.functional


BACKENDS = [pytest.param(engine, id="engine"), pytest.param(ref, id="numpy")]


def _close(a, b):
    close_scaled(a, np.asarray(b), rtol=1e-4)


def _theta(rng, N, spread):
    """Random matrices around the identity; ``spread`` 1.5 samples far outside the image too."""
    return (np.eye(2, 3)[None] + spread * rng.standard_normal((N, 2, 3))).astype(np.float32)


@pytest.mark.parametrize("be", BACKENDS)
@pytest.mark.parametrize(
    "N,C,H,W,spread",
    [
        (1, 1, 1, 1, 0.3),
        (1, 1, 7, 5, 0.3),
        (3, 2, 9, 11, 0.3),
        (2, 3, 8, 8, 1.5),
        (5, 1, 28, 28, 0.2),
        (4, 2, 5, 13, 0.8),
    ],
)
def test_affine_resample_matches_torch(be, N, C, H, W, spread):
    rng = np.random.default_rng(N * 1000 + H * 10 + W)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    theta = _theta(rng, N, spread)
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    tt = torch.tensor(theta, dtype=torch.float64, requires_grad=True)
    grid = F.affine_grid(tt, (N, C, H, W), align_corners=False)
    ty = F.grid_sample(tx, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    y = be.affine_resample_forward(x, theta)
    _close(y, ty.detach().numpy())
    dy = rng.standard_normal(y.shape).astype(np.float32)
    ty.backward(torch.tensor(dy, dtype=torch.float64))
    dx, dtheta = be.affine_resample_backward(x, theta, dy)
    _close(dx, tx.grad.numpy())
    _close(dtheta, tt.grad.numpy())


@pytest.mark.parametrize("be", BACKENDS)
def test_identity_and_rotation_match_torch(be):
    """Structured matrices (pixel-aligned sampling points): identity, 90 degrees, a flip."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 2, 6, 6)).astype(np.float32)
    theta = np.array([[[1, 0, 0], [0, 1, 0]], [[0, -1, 0], [1, 0, 0]], [[-1, 0, 0], [0, 1, 0]]], np.float32)
    grid = F.affine_grid(torch.tensor(theta, dtype=torch.float64), x.shape, align_corners=False)
    ty = F.grid_sample(torch.tensor(x, dtype=torch.float64), grid, align_corners=False)
    _close(be.affine_resample_forward(x, theta), ty.numpy())
