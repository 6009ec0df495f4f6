"""Sequential lends two shared buffers (``_arenas``) to the steps whose output only the next
step reads: every inference step's output, the training outputs the backward never reads (a
ReLU output pooled by a MaxPool2D), every backward step's input gradient (BatchNorm's in place).
The results must be bitwise those of the plain passes, where every layer writes its own
buffers (``step.run`` in plan order, as the layers do on their own)."""

import numpy as np
import pytest

from mantissa_embed import models
from mantissa_embed.layers import (
    BatchNorm2D,
    Conv2D,
    Dense,
    Dropout,
    Flatten,
    MaxPool2D,
    ReLU,
    Residual,
    Sequential,
)
from mantissa_embed.layers.fusion import run_backward


def _plain_forward(net, X):
    h = X
    for step in net._plan("train" if net.training else "inference"):
        h = step.run(h)
    return h.copy()


def _plain_backward(net, dY, need_dx):
    d = run_backward(net._plan("backward"), net.layers, dY, need_dx)
    return None if d is None else d.copy()


def _twin(net):
    """An independent copy of a built ``net``: its config, parameters, buffers, frozen
    parameters and Dropout generators."""
    twin = Sequential.from_config(net.get_config()).load_state_arrays(net.state_arrays())
    for (_, p), (_, q) in zip(net.named_parameters(), twin.named_parameters()):
        q.requires_grad = p.requires_grad
    for a, b in zip(net.layers, twin.layers):
        if isinstance(a, Dropout):
            b.set_rng_state(a.rng_state())
    return twin


def _grads(net):
    return {n: p.grad.copy() for n, p in net.named_parameters() if p.requires_grad}


def _nets():
    return {
        "cnn": (models.cnn_embedder(embed_dim=8, widths=(4, 8, 16)), (3, 20, 20)),
        "cnn_nobn": (models.cnn_embedder(embed_dim=8, widths=(4, 8), batch_norm=False), (1, 12, 12)),
        "small_cnn": (models.small_cnn_embedder(embed_dim=8), (1, 28, 28)),
        "resnet": (models.resnet_embedder(embed_dim=8, widths=(4, 8), blocks=(1, 1)), (3, 16, 16)),
        "mixed": (
            Sequential(
                [
                    Conv2D(4, 3, pad=1),
                    BatchNorm2D(act="relu"),
                    MaxPool2D(3, stride=2, pad=1),
                    Residual([Conv2D(4, 3, pad=1, act="relu"), Conv2D(4, 3, pad=1)]),
                    MaxPool2D(2),
                    ReLU(),
                    Flatten(),
                    Dropout(0.25),
                    Dense(12, act="relu"),
                    Dense(5),
                ],
                seed=3,
            ),
            (2, 14, 14),
        ),
        "mlp": (models.mlp_embedder(embed_dim=4, hidden=(16, 8)), (3, 5)),
    }


@pytest.mark.parametrize("name", sorted(_nets()))
@pytest.mark.parametrize("freeze", [False, True])
def test_training_step_bitwise_as_plain_passes(name, freeze):
    net, shape = _nets()[name]
    rng = np.random.default_rng(0)
    net.build(shape)
    if freeze:
        net.freeze(net.named_parameters()[0][0].rsplit(".", 1)[0])
    ref = _twin(net)
    for n in (6, 4, 6):  # a smaller batch then a larger one reuse and regrow the buffers
        X = rng.standard_normal((n,) + shape).astype(np.float32)
        dY = rng.standard_normal((n,) + net.output_shape()).astype(np.float32)
        dY0 = dY.copy()
        for need_dx in (True, False):
            net.zero_grad()
            ref.zero_grad()
            E = net.forward(X)
            E_ref = _plain_forward(ref, X)
            np.testing.assert_array_equal(E, E_ref)
            dX = net.backward(dY, need_dx=need_dx)
            dX_ref = _plain_backward(ref, dY, need_dx)
            np.testing.assert_array_equal(dY, dY0)  # the caller's dY is never written
            if need_dx:
                np.testing.assert_array_equal(dX, dX_ref)
            else:
                assert dX is None
            g, g_ref = _grads(net), _grads(ref)
            assert g.keys() == g_ref.keys()
            for k in g:
                np.testing.assert_array_equal(g[k], g_ref[k], err_msg=k)
            for (k, a), (_, b) in zip(net.named_buffers(), ref.named_buffers()):
                np.testing.assert_array_equal(a, b, err_msg=k)


@pytest.mark.parametrize("name", sorted(_nets()))
def test_eval_forward_bitwise_and_backward_after_it(name):
    net, shape = _nets()[name]
    rng = np.random.default_rng(1)
    net.build(shape)
    ref = _twin(net)
    net.eval()
    ref.eval()
    for n in (5, 9, 3):
        X = rng.standard_normal((n,) + shape).astype(np.float32)
        np.testing.assert_array_equal(net.forward(X), _plain_forward(ref, X))
    # a backward after an eval pass redoes the layer passes: as the plain layer passes would give
    dY = rng.standard_normal((n,) + net.output_shape()).astype(np.float32)
    net.zero_grad()
    ref.zero_grad()
    dX = net.backward(dY)
    h = X
    for step in ref._plan("train"):
        h = step.run(h)
    np.testing.assert_array_equal(dX, _plain_backward(ref, dY, True))
    for (k, a), (_, b) in zip(sorted(_grads(net).items()), sorted(_grads(ref).items())):
        np.testing.assert_array_equal(a, b, err_msg=k)


def test_eval_keeps_two_activation_buffers():
    """At inference only two lent regions hold activations: the layers' own output buffers
    stay unallocated, and the lent memory holds the two largest step outputs."""
    net = models.cnn_embedder(embed_dim=8, widths=(4, 8, 16)).eval()
    net.forward(np.ones((4, 3, 16, 16), np.float32))
    assert all(layer._out._arr is None for layer in net.layers if hasattr(layer, "_out"))
    assert net._lent_memory.size == 2 * 4 * 4 * 8 * 8  # two (4, 4, 8, 8) pooled outputs


def test_training_gradients_share_two_buffers():
    """The backward writes no per-layer input gradient buffer of its own, and the pooled ReLU
    outputs are lent from the same memory: two of the largest gradients' size."""
    net = models.cnn_embedder(embed_dim=8, widths=(4, 8, 16))
    X = np.ones((4, 3, 16, 16), np.float32)
    E = net.forward(X)
    lent = net._lent_memory  # sized by the forward for the backward too: never regrown while in use
    net.backward(np.ones_like(E), need_dx=True)
    assert net._lent_memory is lent
    for i, layer in enumerate(net.layers):
        if hasattr(layer, "_dx"):
            assert layer._dx._arr is None, i
    for i in net._dead_outputs():
        assert net.layers[i]._out._arr is None, i
    assert net._lent_memory.size == 2 * 4 * 4 * 16 * 16


def test_layer_backward_after_sequential_forward():
    """The dead outputs have a region each: after a training forward of the Sequential, every
    layer's own backward still reads its own output (the ReLU mask of a pooled convolution)."""
    net = models.small_cnn_embedder(embed_dim=8)
    rng = np.random.default_rng(3)
    X = rng.standard_normal((5, 1, 28, 28)).astype(np.float32)
    E = net.forward(X)
    ref = _twin(net)
    h = X
    for layer in ref.layers:
        h = layer.forward(h)
    np.testing.assert_array_equal(E, h)
    d, d_ref = np.ones_like(E), np.ones_like(E)
    for layer, layer_ref in zip(reversed(net.layers), reversed(ref.layers)):
        d, d_ref = layer.backward(d).copy(), layer_ref.backward(d_ref).copy()
        np.testing.assert_array_equal(d, d_ref)


def test_max_batch_for_is_a_function_of_the_shapes_and_budget():
    net = models.cnn_embedder(embed_dim=8, widths=(4, 8, 16))
    shape = (3, 32, 32)
    with pytest.raises(RuntimeError):
        net.max_batch_for(1 << 20)
    with pytest.raises(ValueError):
        net.max_batch_for(0, shape)
    sizes = [net.max_batch_for(b, shape) for b in (1, 1 << 16, 1 << 20, 1 << 22, 1 << 24)]
    assert sizes[0] == 1 and sizes == sorted(sizes) and sizes[-1] > 8
    for b, n in zip((1 << 20, 1 << 22, 1 << 24), sizes[2:]):
        assert n < 8 or n % 8 == 0
        assert net._inference_bytes(n, shape) <= b < net._inference_bytes(n + 8, shape)
    net.build(shape)
    assert net.max_batch_for(1 << 22) == sizes[3]  # the built shape by default, nothing else


def test_inference_bytes_counts_the_largest_step():
    """A fused conv + BN + pool step: its input, its pooled output, the convolution's
    workspace and the unpooled output a fallback path materializes."""
    from mantissa_embed import engine

    net = Sequential([Conv2D(8, 3, pad=1, bias=False), BatchNorm2D(act="relu"), MaxPool2D(2)])
    n, shape = 5, (3, 16, 16)
    ws = 4 * engine.conv2d_workspace_size((n,) + shape, (8, 3, 3, 3), 1, 1)
    assert net._inference_bytes(n, shape) == 4 * n * (3 * 16 * 16 + 8 * 8 * 8 + 8 * 16 * 16) + ws
