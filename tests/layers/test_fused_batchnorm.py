"""Inference folding of an eval-mode BatchNorm2D into the Conv2D before it (``batchnorm_fold`` +
``conv2d_forward`` / ``conv2d_pool2_forward``): the plan takes it where it applies, and the fused
pass equals the layer-by-layer eval pass to float32 tolerance."""

import numpy as np
import pytest

from mantissa_embed.layers import BatchNorm2D, Conv2D, Dense, Flatten, MaxPool2D, Sequential


def _trained(layers, backend="mantissa", steps=3, shape=(6, 3, 12, 10)):
    """A model whose batch norms have moved running statistics and non-trivial gamma / beta."""
    net = Sequential(layers, seed=2, backend=backend)
    rng = np.random.default_rng(0)
    X = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
    for _ in range(steps):
        y = net.forward(X)
        net.backward(np.ones_like(y))
    for layer in net:
        if isinstance(layer, BatchNorm2D):
            layer.weight.data[...] = rng.uniform(0.5, 2.0, layer.weight.shape)
            layer.bias.data[...] = rng.standard_normal(layer.bias.shape)
    return net.eval(), X


def _layer_by_layer(net, X):
    h = X
    for layer in net:
        h = layer.forward(h)
    return np.array(h)


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * (1 + np.abs(b).max()))


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_folded_inference_equals_the_layer_by_layer_pass(backend):
    net, X = _trained(
        [
            Conv2D(8, 3, pad=1),
            BatchNorm2D(act="relu"),
            MaxPool2D(2),
            Conv2D(16, 3, pad=1, bias=False),
            BatchNorm2D(),
            Conv2D(4, 1),
            BatchNorm2D(act="relu"),
            Flatten(),
            Dense(5),
        ],
        backend,
    )
    names = [s.name for s in net._plan("inference")]
    assert names == [
        "batchnorm_fold+conv2d_pool2_forward",
        "batchnorm_fold+conv2d_forward",
        "batchnorm_fold+conv2d_forward",
        "forward",
        "forward",
    ]
    _close(net.forward(X), _layer_by_layer(net, X))
    _close(net.forward(X[:1]), _layer_by_layer(net, X[:1]))  # batch 1


def test_backward_after_a_folded_pass_redoes_the_plain_forward():
    net, X = _trained([Conv2D(5, 3, pad=1), BatchNorm2D(act="relu"), MaxPool2D(2), Flatten(), Dense(3)])
    y = net.forward(X)  # folded
    dx = net.backward(np.ones_like(y))
    net.zero_grad()
    want = _layer_by_layer(net, X)
    _close(y, want)
    np.testing.assert_array_equal(dx, net.backward(np.ones_like(y)))


def test_no_fold_after_an_activation_or_in_training():
    for act in ("relu", "leaky_relu"):
        net, X = _trained([Conv2D(4, 3, act=act), BatchNorm2D(), MaxPool2D(2)])
        assert [s.name for s in net._plan("inference")] == ["forward", "forward", "forward"]
    net, X = _trained([Conv2D(4, 3), BatchNorm2D(), MaxPool2D(2)])
    bn = net[1]
    rm = bn.running_mean.copy()
    bn.train()  # a batch norm left in training mode inside an eval model: no fold, batch statistics
    out = net.forward(X)
    assert not np.array_equal(bn.running_mean, rm)
    bn.running_mean[...] = rm
    _close(out, _layer_by_layer(net, X))


def test_pool_fusions_without_batchnorm_are_unchanged():
    net = Sequential(
        [
            Conv2D(4, 3, pad=1),
            MaxPool2D(2),
            Conv2D(6, 3, pad=1),
            MaxPool2D(2),
            Conv2D(3, 3, pad=1),
            MaxPool2D(2),
        ]
    ).eval()
    net.build((1, 16, 16))
    assert [s.name for s in net._plan("inference")] == ["conv2d_pool2_chain_forward", "conv2d_pool2_forward"]
