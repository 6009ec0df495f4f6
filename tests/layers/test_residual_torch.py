"""Residual blocks against the same blocks in torch (relu(block(x) + shortcut(x))): values and
the gradients of the input and of every parameter."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from mantissa_embed.layers import Conv2D, GlobalAvgPool2D, Residual, Sequential  # noqa: E402


def _close(a, b, rtol=1e-4):
    b = np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * (1 + np.abs(b).max()))


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("N", [1, 8])
def test_matches_torch(backend, N):
    model = Sequential(
        [
            Residual([Conv2D(8, 3, pad=1, act="relu"), Conv2D(8, 3, pad=1)]),
            Residual(
                [Conv2D(16, 3, stride=2, pad=1, act="relu"), Conv2D(16, 3, pad=1)],
                shortcut=[Conv2D(16, 1, stride=2, bias=False)],
            ),
            GlobalAvgPool2D(),
        ],
        seed=N,
        backend=backend,
    )
    rng = np.random.default_rng(N)
    x = rng.standard_normal((N, 8, 9, 9)).astype(np.float32)
    y = model.forward(x)
    p = {
        n: torch.tensor(q.data, dtype=torch.float64, requires_grad=True) for n, q in model.named_parameters()
    }
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    h = F.relu(
        F.conv2d(
            F.relu(F.conv2d(tx, p["0.block.0.weight"], p["0.block.0.bias"], padding=1)),
            p["0.block.1.weight"],
            p["0.block.1.bias"],
            padding=1,
        )
        + tx
    )
    b = F.conv2d(
        F.relu(F.conv2d(h, p["1.block.0.weight"], p["1.block.0.bias"], stride=2, padding=1)),
        p["1.block.1.weight"],
        p["1.block.1.bias"],
        padding=1,
    )
    ty = F.relu(b + F.conv2d(h, p["1.shortcut.0.weight"], stride=2)).mean(dim=(2, 3))
    _close(y, ty.detach().numpy())
    dy = rng.standard_normal(y.shape).astype(np.float32)
    ty.backward(torch.tensor(dy, dtype=torch.float64))
    model.zero_grad()
    _close(model.backward(dy), tx.grad.numpy())
    for name, q in model.named_parameters():
        _close(q.grad, p[name].grad.numpy())
