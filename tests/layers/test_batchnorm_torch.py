"""Batch normalization against torch (oracle test): the kernels against
``torch.nn.functional.batch_norm`` (training forward, running statistics, eval forward, every
gradient, the fused ReLU) and the layers against ``torch.nn.BatchNorm2d`` / ``BatchNorm1d`` over
several training steps, then in eval; 1e-4 relative."""

import numpy as np
import pytest

from mantissa_embed import _reference as ref, engine
from mantissa_embed.layers import BatchNorm1D, BatchNorm2D, Conv2D, MaxPool2D, Sequential

torch = pytest.importorskip("torch")
F = torch.nn.functional


BACKENDS = [pytest.param(engine, id="engine"), pytest.param(ref, id="numpy")]
RTOL = 1e-4


def _t(a, grad=False):
    return torch.tensor(np.asarray(a), dtype=torch.float64, requires_grad=grad)


def _close(a, b, rtol=RTOL):
    b = np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * (1 + np.abs(b).max()))


@pytest.mark.parametrize("be", BACKENDS)
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (64, 32, 14, 14), (1, 4, 3, 3), (7, 5), (3, 6, 4), (2, 130)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("relu", [False, True])
def test_kernels_match_torch(be, shape, training, relu):
    rng = np.random.default_rng(sum(shape) + training)
    C = shape[1]
    x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
    gamma, beta = rng.uniform(0.5, 1.5, C).astype(np.float32), rng.standard_normal(C).astype(np.float32)
    rm, rv = rng.standard_normal(C).astype(np.float32), rng.uniform(0.5, 2, C).astype(np.float32)
    trm, trv = _t(rm), _t(rv)
    tx, tg, tb = _t(x, True), _t(gamma, True), _t(beta, True)
    ty = F.batch_norm(tx, trm, trv, tg, tb, training=training, momentum=0.3, eps=1e-3)
    if relu:
        ty = F.relu(ty)
    y, sm, si = be.batchnorm_forward(
        x, gamma, beta, rm, rv, training, 0.3, 1e-3, act="relu" if relu else None
    )
    _close(y, ty.detach().numpy())
    _close(rm, trm.numpy())
    _close(rv, trv.numpy())
    dy = rng.standard_normal(shape).astype(np.float32)
    ty.backward(_t(dy))
    dx, dg, db = be.batchnorm_backward(
        dy, x, gamma, sm, si, training=training, act="relu" if relu else None, y=y
    )
    _close(dx, tx.grad.numpy())
    _close(dg, tg.grad.numpy())
    _close(db, tb.grad.numpy())


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize(
    "layer,tlayer,shape",
    [
        (lambda: BatchNorm2D(momentum=0.2), lambda: torch.nn.BatchNorm2d(5, momentum=0.2), (6, 5, 7, 9)),
        (lambda: BatchNorm1D(eps=1e-3), lambda: torch.nn.BatchNorm1d(11, eps=1e-3), (9, 11)),
        (lambda: BatchNorm1D(num_features=3), lambda: torch.nn.BatchNorm1d(3), (4, 3, 6)),
    ],
)
def test_layers_match_torch_over_steps(backend, layer, tlayer, shape):
    """Forward, gradients and running statistics over four training steps (gamma and beta
    moved by the same SGD step), then the eval forward."""
    rng = np.random.default_rng(shape[1])
    bn, tbn = layer().set_backend(backend), tlayer().double()
    for step in range(4):
        x = (rng.standard_normal(shape) * (1 + step) + step).astype(np.float32)
        dy = rng.standard_normal(shape).astype(np.float32)
        y = bn.forward(x)
        tx = _t(x, True)
        ty = tbn(tx)
        _close(y, ty.detach().numpy())
        bn.zero_grad()
        dx = bn.backward(dy)
        tbn.zero_grad()
        ty.backward(_t(dy))
        _close(dx, tx.grad.numpy())
        _close(bn.weight.grad, tbn.weight.grad.numpy())
        _close(bn.bias.grad, tbn.bias.grad.numpy())
        with torch.no_grad():
            for p, tp in ((bn.weight, tbn.weight), (bn.bias, tbn.bias)):
                p.data -= 0.1 * p.grad
                tp -= 0.1 * tp.grad
    _close(bn.running_mean, tbn.running_mean.numpy())
    _close(bn.running_var, tbn.running_var.numpy())
    bn.eval()
    tbn.eval()
    x = rng.standard_normal(shape).astype(np.float32)
    tx = _t(x, True)
    ty = tbn(tx)
    _close(bn.forward(x), ty.detach().numpy())
    dy = rng.standard_normal(shape).astype(np.float32)
    ty.backward(_t(dy))
    _close(bn.backward(dy), tx.grad.numpy())


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_conv_batchnorm_relu_pool_stack_matches_torch(backend):
    """Conv2D -> BatchNorm2D(act="relu") -> MaxPool2D(2) in training, and in eval (the folded
    inference plan) after two training steps."""
    rng = np.random.default_rng(0)
    net = Sequential([Conv2D(6, 3, pad=1), BatchNorm2D(act="relu"), MaxPool2D(2)], backend=backend)
    net.build((2, 8, 8))
    conv = torch.nn.Conv2d(2, 6, 3, padding=1).double()
    tbn = torch.nn.BatchNorm2d(6).double()
    with torch.no_grad():
        conv.weight.copy_(_t(net[0].weight.data))
        conv.bias.copy_(_t(net[0].bias.data))

    def tnet(t):
        return F.max_pool2d(F.relu(tbn(conv(t))), 2)

    for _ in range(2):
        x = rng.standard_normal((5, 2, 8, 8)).astype(np.float32)
        tx = _t(x, True)
        ty = tnet(tx)
        y = net.forward(x)
        _close(y, ty.detach().numpy())
        dy = rng.standard_normal(y.shape).astype(np.float32)
        net.zero_grad()
        dx = net.backward(dy)
        ty.backward(_t(dy))
        _close(dx, tx.grad.numpy())
        _close(net[0].weight.grad, conv.weight.grad.numpy())
        _close(net[1].weight.grad, tbn.weight.grad.numpy())
        conv.zero_grad()
        tbn.zero_grad()
    net.eval()
    tbn.eval()
    x = rng.standard_normal((5, 2, 8, 8)).astype(np.float32)
    _close(net.forward(x), tnet(_t(x)).detach().numpy())
