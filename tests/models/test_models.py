"""Ready-made trunks: small_cnn_embedder (52,528 parameters on 1x28x28) and mlp_embedder."""

import numpy as np
import pytest

from mantissa_embed import models
from mantissa_embed.layers import Conv2D, Dense, Flatten, MaxPool2D, Sequential


def test_small_cnn_embedder_architecture_and_parameter_count():
    m = models.small_cnn_embedder()
    assert isinstance(m, Sequential)
    kinds = [type(layer) for layer in m.layers]
    assert kinds == [Conv2D, MaxPool2D, Conv2D, MaxPool2D, Flatten, Dense, Dense]
    assert [m.layers[0].out_channels, m.layers[2].out_channels] == [8, 16]
    assert m.layers[0].act == "relu" and m.layers[2].act == "relu"
    assert m.layers[5].units == 64 and m.layers[5].act == "relu" and m.layers[6].act is None
    m.build((1, 28, 28))
    # counted independently: conv 8*1*9+8, conv 16*8*9+16, dense 784*64+64, dense 64*16+16
    assert m.num_parameters() == (8 * 9 + 8) + (16 * 8 * 9 + 16) + (16 * 7 * 7 * 64 + 64) + (64 * 16 + 16)
    assert m.num_parameters() == 52_528
    assert sum(p.data.size for p in m.parameters()) == 52_528
    assert m.output_shape() == (16,)


def test_small_cnn_embedder_forward_backward():
    m = models.small_cnn_embedder(embed_dim=8, seed=1)
    X = np.random.default_rng(0).random((5, 1, 28, 28), dtype=np.float32)
    Z = m.forward(X)
    assert Z.shape == (5, 8) and Z.dtype == np.float32 and np.isfinite(Z).all()
    m.backward(np.ones_like(Z), need_dx=False)
    assert all(np.isfinite(p.grad).all() for p in m.parameters())
    assert any(p.grad.any() for p in m.parameters())


def test_small_cnn_embedder_on_8x8_digits_and_other_sizes():
    m = models.small_cnn_embedder()
    Z = m.forward(np.zeros((3, 1, 8, 8), np.float32))
    assert Z.shape == (3, 16)
    assert m.num_parameters() == 80 + 1168 + (64 * 64 + 64) + 1040
    assert models.small_cnn_embedder(4).forward(np.zeros((2, 3, 32, 32), np.float32)).shape == (2, 4)


def test_seed_and_backend():
    X = np.random.default_rng(1).random((4, 1, 12, 12), dtype=np.float32)
    a = models.small_cnn_embedder(seed=3).forward(X)
    b = models.small_cnn_embedder(seed=3, backend="numpy").forward(X)
    c = models.small_cnn_embedder(seed=4).forward(X)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not np.allclose(a, c)


def test_bad_arguments():
    with pytest.raises(ValueError, match="embed_dim"):
        models.small_cnn_embedder(0)
    with pytest.raises(TypeError, match="embed_dim"):
        models.small_cnn_embedder(2.5)
    with pytest.raises(ValueError, match="backend"):
        models.small_cnn_embedder(backend="cuda")
    with pytest.raises(ValueError, match="larger"):
        models.small_cnn_embedder().forward(np.zeros((1, 1, 3, 3), np.float32))


def test_mlp_embedder():
    m = models.mlp_embedder(embed_dim=5, hidden=(7, 6))
    assert m.forward(np.zeros((2, 1, 4, 4), np.float32)).shape == (2, 5)
    assert m.num_parameters() == (16 * 7 + 7) + (7 * 6 + 6) + (6 * 5 + 5)
    assert models.mlp_embedder(3, hidden=()).forward(np.zeros((1, 10), np.float32)).shape == (1, 3)
    with pytest.raises(ValueError):
        models.mlp_embedder(3, hidden=(0,))
    with pytest.raises(TypeError):
        models.mlp_embedder(3, hidden="64")


# ------------------------------------------------------------- cnn / resnet embedders
def test_cnn_embedder_shapes_and_parameter_count():
    from mantissa_embed.layers import BatchNorm2D, Conv2D

    net = models.cnn_embedder().build((1, 28, 28))
    # convs without bias (the BatchNorm's beta replaces it) + gamma/beta + the 128 -> 64 head
    expect = (9 * 32 + 2 * 32) + (32 * 9 * 64 + 2 * 64) + (64 * 9 * 128 + 2 * 128) + (128 * 64 + 64)
    assert net.num_parameters() == expect == 101_152
    assert net.output_shape() == (64,)
    assert sum(isinstance(layer, BatchNorm2D) for layer in net) == 3
    assert all(layer.bias is None for layer in net if isinstance(layer, Conv2D))
    plain = models.cnn_embedder(16, widths=(8, 16), batch_norm=False).build((3, 8, 8))
    assert not any(isinstance(layer, BatchNorm2D) for layer in plain) and plain.output_shape() == (16,)
    X = np.random.default_rng(0).random((3, 3, 8, 8), dtype=np.float32)
    assert plain.eval().forward(X).shape == (3, 16)


def test_resnet_embedder_runs_forward_and_backward():
    net = models.resnet_embedder(8, widths=(4, 8), blocks=(1, 2)).build((1, 12, 10))
    X = np.random.default_rng(0).random((2, 1, 12, 10), dtype=np.float32)
    Y = net.forward(X)
    assert Y.shape == (2, 8) and np.isfinite(Y).all()
    net.backward(np.ones_like(Y))
    assert all(np.isfinite(p.grad).all() for p in net.parameters())


@pytest.mark.parametrize(
    "make, kw, exc",
    [
        (models.cnn_embedder, dict(embed_dim=0), ValueError),
        (models.cnn_embedder, dict(widths=()), ValueError),
        (models.cnn_embedder, dict(widths="32"), TypeError),
        (models.cnn_embedder, dict(batch_norm=1), TypeError),
        (models.resnet_embedder, dict(blocks=(1, 1)), ValueError),
        (models.resnet_embedder, dict(widths=(4, -1, 2)), ValueError),
    ],
)
def test_embedder_models_bad_arguments(make, kw, exc):
    with pytest.raises(exc):
        make(**kw)
