"""Sequential's inference fusion (Conv2D + MaxPool2D(2) -> conv2d_pool2_forward in eval mode):
same output as the layer-by-layer forward, and a backward after an eval forward still works."""

import numpy as np
import pytest

from mantissa_embed import models
from mantissa_embed.layers import Conv2D, Dense, Flatten, MaxPool2D, ReLU, Sequential


def _nets(backend):
    yield models.small_cnn_embedder(8, seed=3, backend=backend)
    yield Sequential(
        [
            Conv2D(5, 3, pad=0),
            MaxPool2D(2),
            Conv2D(4, 2, stride=2, act="relu"),
            MaxPool2D(2, stride=1),
            Flatten(),
            Dense(3),
        ],
        seed=1,
        backend=backend,
    )
    yield Sequential(
        [Conv2D(20, 3, pad=1, act="relu"), ReLU(), MaxPool2D(2), Flatten(), Dense(2)], seed=2, backend=backend
    )


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_eval_forward_matches_train_forward(backend):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((7, 3, 13, 15)).astype(np.float32)
    for net in _nets(backend):
        net.train()
        a = net.forward(X)
        net.eval()
        b = net.forward(X)
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_backward_after_eval_forward(backend):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((5, 1, 12, 12)).astype(np.float32)
    net = models.small_cnn_embedder(4, backend=backend)
    net.train()
    y = net.forward(X)
    dY = rng.standard_normal(y.shape).astype(np.float32)
    dx_train = net.backward(dY)
    g_train = [p.grad.copy() for p in net.parameters()]
    net.zero_grad()
    net.eval()
    net.forward(X[:2])  # a fused pass on another batch first
    net.forward(X)
    dx_eval = net.backward(dY)
    np.testing.assert_allclose(dx_eval, dx_train, rtol=1e-5, atol=1e-6)
    for g, p in zip(g_train, net.parameters()):
        np.testing.assert_allclose(p.grad, g, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize(
    "layers",
    [
        lambda: [
            Conv2D(8, 3, pad=1, act="relu"),
            MaxPool2D(2),
            Conv2D(16, 3, pad=1, act="relu"),
            MaxPool2D(2),
            Flatten(),
            Dense(4),
        ],  # the one-pass chain kernel
        lambda: [
            Conv2D(3, 2, stride=2),
            MaxPool2D(2),
            Conv2D(4, 3, pad=1, act="relu"),
            MaxPool2D(2),
            Conv2D(9, 3, pad=1),
            MaxPool2D(2),
            Flatten(),
            Dense(2),
        ],  # chain by two calls, then a pair
    ],
)
def test_chained_pairs_bitwise_equal_to_pairwise_fusion(backend, layers):
    """Two Conv2D + MaxPool2D(2) pairs in a row run as one conv2d_pool2_chain_forward call at
    inference: bitwise what the pairs give one by one, and close to the training forward."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((37, 1, 28, 28)).astype(np.float32)
    net = Sequential(layers(), seed=5, backend=backend)
    net.train()
    plain = net.forward(X)
    net.eval()
    chained = net.forward(X)
    assert 0 in net._chain_at
    net._chain_at = frozenset()
    pairwise = net.forward(X)
    np.testing.assert_array_equal(chained, pairwise)
    np.testing.assert_allclose(chained, plain, rtol=1e-4, atol=1e-5)
