"""Fine-tuning controls of the layers: ``Parameter.requires_grad``,
``Sequential.freeze`` / ``unfreeze`` (no gradient into frozen parameters, no backward below
the lowest trainable layer, frozen blocks above a trainable layer still propagate dx), the
optimizers skipping frozen parameters, and BatchNorm's frozen statistics
(``freeze_statistics`` / ``Sequential.freeze_batchnorm``) against finite differences and torch."""

import numpy as np
import pytest

from layers._layer_fd import check_layer_gradients
from mantissa_embed import optim
from mantissa_embed.layers import (
    BasicBlock,
    BatchNorm1D,
    BatchNorm2D,
    Conv2D,
    Dense,
    GlobalAvgPool2D,
    MaxPool2D,
    Sequential,
)
from mantissa_embed.parameter import Parameter


def _net(backend="mantissa"):
    # conv1 (ReLU) + maxpool: the fused maxpool/ReLU backward step; blocks with and without a projection
    net = Sequential(
        {
            "conv1": Conv2D(4, 3, pad=1, act="relu"),
            "maxpool": MaxPool2D(2),
            "bn1": BatchNorm2D(act="relu"),
            "layer1.0": BasicBlock(4),
            "layer2.0": BasicBlock(6, stride=2),
            "avgpool": GlobalAvgPool2D(),
            "head": Dense(5),
        },
        seed=1,
        backend=backend,
    )
    return net.build((3, 8, 8))


def _batch():
    rng = np.random.default_rng(0)
    return rng.standard_normal((4, 3, 8, 8)).astype(np.float32), rng.standard_normal((4, 5)).astype(
        np.float32
    )


def _grads(net):
    return {n: p.grad.copy() for n, p in net.named_parameters()}


def _run(net, X, dY, need_dx):
    net.zero_grad()
    net.forward(X)
    return net.backward(dY, need_dx=need_dx)


def _forbid_backward(monkeypatch, layer):
    def boom(*args, **kwargs):
        raise AssertionError(f"{type(layer).__name__} ran a backward below the lowest trainable layer")

    for name in ("_backward", "_backward_preact", "_backward_relu"):
        if hasattr(layer, name):
            monkeypatch.setattr(layer, name, boom)


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_frozen_stem_equal_grads_and_no_backward_below(monkeypatch, backend):
    X, dY = _batch()
    full, net = _net(backend), _net(backend)
    _run(full, X, dY, need_dx=False)
    want = _grads(full)
    net.freeze("conv1", "bn1", "layer1")
    for name in ("conv1", "maxpool", "bn1", "layer1.0"):
        _forbid_backward(monkeypatch, net[name])
    assert _run(net, X, dY, need_dx=False) is None
    for n, p in net.named_parameters():
        assert p.requires_grad == (n.startswith("layer2") or n.startswith("head")), n
        if p.requires_grad:  # the same kernels on the same inputs: bitwise
            np.testing.assert_array_equal(p.grad, want[n], err_msg=n)
        else:
            assert not p.grad.any(), n


def test_lowest_trainable_layer_gets_no_need_dx(monkeypatch):
    X, dY = _batch()
    net = _net().freeze("conv1", "bn1", "layer1")
    seen = []
    orig = net["layer2.0"].backward
    monkeypatch.setattr(
        net["layer2.0"], "backward", lambda d, need_dx=True: seen.append(need_dx) or orig(d, need_dx)
    )
    net._plans = {}
    _run(net, X, dY, need_dx=False)
    assert seen == [False]
    _run(net, X, dY, need_dx=True)  # an input gradient wanted: every layer runs
    assert seen == [False, True]


@pytest.mark.parametrize(
    "frozen",
    [
        ("layer1.0",),
        ("layer2",),
        ("head",),
        ("bn1", "layer1.0.conv2"),
        ("head.bias", "layer2.0.downsample.1.weight"),
    ],
)
def test_frozen_above_trainable_still_propagates(frozen):
    # a frozen block / layer / single parameter above trainable layers: dx still flows through it
    X, dY = _batch()
    full, net = _net(), _net()
    dx_full = _run(full, X, dY, need_dx=True)
    want = _grads(full)
    net.freeze(*frozen)
    dx = _run(net, X, dY, need_dx=True)
    np.testing.assert_allclose(dx, dx_full, rtol=1e-5, atol=1e-6)
    for n, p in net.named_parameters():
        if p.requires_grad:
            np.testing.assert_allclose(p.grad, want[n], rtol=1e-5, atol=1e-6, err_msg=n)
        else:
            assert not p.grad.any(), n
    assert net["conv1"].weight.requires_grad
    # the grads accumulate over two backwards, as unfrozen ones do
    net.forward(X)
    net.backward(dY)
    g = net["conv1"].weight.grad
    np.testing.assert_allclose(g, 2 * want["conv1.weight"], rtol=1e-5, atol=1e-6)


def test_all_frozen_runs_nothing(monkeypatch):
    X, dY = _batch()
    net = _net().freeze()
    for name in net.names:
        _forbid_backward(monkeypatch, net[name])
    assert _run(net, X, dY, need_dx=False) is None
    assert not any(p.requires_grad for p in net.parameters())
    net.unfreeze()
    assert all(p.requires_grad for p in net.parameters())


def test_freeze_prefix_rules_and_errors():
    net = Sequential({"layer1": Dense(3), "layer10": Dense(2)}).build((4,))
    net.freeze("layer1")
    assert [p.requires_grad for _, p in net.named_parameters()] == [False, False, True, True]
    net.unfreeze("layer1.bias")
    assert net["layer1"].bias.requires_grad and not net["layer1"].weight.requires_grad
    with pytest.raises(ValueError, match="'layer2' matches no parameter"):
        net.freeze("layer2")
    with pytest.raises(ValueError, match="matches no parameter"):
        net.freeze("layer1", "laye")  # nothing changes on an error
    assert net["layer1"].bias.requires_grad
    with pytest.raises(TypeError, match="str"):
        net.freeze(1)
    with pytest.raises(RuntimeError, match="not built"):
        Sequential([Dense(3)]).freeze()
    net.freeze_batchnorm()  # none to freeze: no prefix asks for one
    with pytest.raises(ValueError, match="no BatchNorm layer: the model has none"):
        net.freeze_batchnorm("layer1")
    p = Parameter(np.zeros(3))
    assert p.requires_grad is True
    with pytest.raises(TypeError, match="requires_grad"):
        p.requires_grad = 1
    p.requires_grad = False
    assert "requires_grad=False" in repr(p)


def test_named_layers_reach_block_children():
    names = [n for n, _ in _net().named_layers()]
    assert names[:6] == ["conv1", "maxpool", "bn1", "layer1.0", "layer1.0.conv1", "layer1.0.bn1"]
    assert "layer2.0.downsample.1" in names and names[-1] == "head"


@pytest.mark.parametrize(
    "opt",
    [
        lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.1),
        lambda ps: optim.AdamW(ps, lr=0.1),
        lambda ps: optim.Adam(ps, lr=0.1),
    ],
)
def test_optimizers_skip_frozen_parameters(opt):
    a, b = Parameter(np.ones(3), name="a"), Parameter(np.ones(3), name="b")
    a.requires_grad = False
    o = opt([a, b])
    a.grad[:] = b.grad[:] = 1.0
    o.step()
    np.testing.assert_array_equal(a.data, np.ones(3))
    assert not o.state[0] and (b.data != 1).all()
    a.requires_grad = True  # unfrozen later: updated from then on
    o.step()
    assert (a.data != 1).all()


# -- frozen BatchNorm statistics --------------------------------------------------------------


def _randomize_bn(bn, rng):
    C = bn.weight.shape[0]
    bn.running_mean[:] = rng.standard_normal(C)
    bn.running_var[:] = rng.uniform(0.5, 2.0, C)
    bn.weight.data[:] = rng.uniform(0.5, 1.5, C)
    bn.bias.data[:] = rng.standard_normal(C) * 0.1


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_frozen_statistics_forward_and_buffers(backend):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((6, 3, 4, 5)).astype(np.float32)
    bn = BatchNorm2D(act="relu").set_backend(backend).build(X.shape[1:])
    _randomize_bn(bn, rng)
    before = (bn.running_mean.copy(), bn.running_var.copy())
    want = bn.eval().forward(X).copy()
    bn.train().freeze_statistics()
    y = bn.forward(X)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(bn.running_mean, before[0])
    np.testing.assert_array_equal(bn.running_var, before[1])
    bn.freeze_statistics(False)
    bn.forward(X)
    assert not np.array_equal(bn.running_mean, before[0])
    with pytest.raises(TypeError, match="frozen"):
        bn.freeze_statistics("yes")


@pytest.mark.parametrize("act", [None, "relu"])
@pytest.mark.parametrize(
    "layer,shape", [(BatchNorm2D, (5, 3, 4, 3)), (BatchNorm1D, (7, 4)), (BatchNorm1D, (5, 3, 4))]
)
def test_frozen_statistics_gradients_fd(layer, shape, act):
    rng = np.random.default_rng(2)
    X = rng.standard_normal(shape).astype(np.float32)
    bn = layer(act=act).build(shape[1:])
    _randomize_bn(bn, rng)
    bn.freeze_statistics()
    rm, rv = bn.running_mean.astype(np.float64), bn.running_var.astype(np.float64)
    bshape = (1, -1) + (1,) * (len(shape) - 2)

    def f64(x, params):
        y = (x - rm.reshape(bshape)) / np.sqrt(rv.reshape(bshape) + bn.eps)
        y = y * params["weight"].reshape(bshape) + params["bias"].reshape(bshape)
        return np.maximum(y, 0.0) if act == "relu" else y

    check_layer_gradients(bn, X, f64, rtol=1e-4, atol=1e-5)


def test_frozen_statistics_gradients_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    X = rng.standard_normal((4, 3, 5, 5)).astype(np.float32)
    R = rng.standard_normal(X.shape).astype(np.float32)
    bn = BatchNorm2D(act="relu").build(X.shape[1:])
    _randomize_bn(bn, rng)
    bn.freeze_statistics()
    y = bn.forward(X).copy()
    bn.zero_grad()
    dx = bn.backward(R).copy()
    t = torch.nn.BatchNorm2d(3)
    with torch.no_grad():
        t.weight.copy_(torch.from_numpy(bn.weight.data))
        t.bias.copy_(torch.from_numpy(bn.bias.data))
        t.running_mean.copy_(torch.from_numpy(bn.running_mean))
        t.running_var.copy_(torch.from_numpy(bn.running_var))
    t.eval()  # torch's frozen-statistics BatchNorm: an eval-mode one
    xt = torch.from_numpy(X).requires_grad_(True)
    yt = torch.relu(t(xt))
    yt.backward(torch.from_numpy(R))
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.weight.grad, t.weight.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.bias.grad, t.bias.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_freeze_batchnorm_in_a_net():
    X, dY = _batch()
    net = _net()
    net.freeze_batchnorm("layer1")
    frozen = [n for n, layer in net.named_layers() if getattr(layer, "frozen_stats", False)]
    assert frozen == ["layer1.0.bn1", "layer1.0.bn2"]
    net.unfreeze_batchnorm().freeze_batchnorm()  # every one, projections included
    assert all(layer.frozen_stats for n, layer in net.named_layers() if isinstance(layer, BatchNorm2D))
    buffers = {n: a.copy() for n, a in net.named_buffers()}
    net.train()  # survives train()
    _run(net, X, dY, need_dx=True)
    for n, a in net.named_buffers():
        np.testing.assert_array_equal(a, buffers[n], err_msg=n)
    # frozen statistics + training forward == eval forward without the BN folds
    y_train = net.forward(X).copy()
    net.eval()
    net._chain_at = set()
    np.testing.assert_allclose(net.forward(X), y_train, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="'layer9' matches no BatchNorm layer"):
        net.freeze_batchnorm("layer9")
