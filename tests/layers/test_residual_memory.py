"""Residual's memory: the block's last output takes the sum when its backward does not read it,
and the children's input gradients ping-pong in per-call scratch instead of a buffer per child.
Checked bitwise against the children run one by one through their own ``forward`` /
``backward`` (each writing its own buffers), with the sum and ReLU in numpy."""

import numpy as np
import pytest

from mantissa_embed.layers import BatchNorm2D, Bottleneck, Conv2D, Dense, Flatten, Residual, Sequential


def _twin(net):
    return Sequential.from_config(net.get_config()).load_state_arrays(net.state_arrays())


def _by_hand_forward(res, X):
    b = X
    for layer in res.block:
        b = layer.forward(b).copy()
    s = X
    for layer in res.children()[len(res.block) :]:
        s = layer.forward(s).copy()
    return np.maximum(b + s, 0)


def _by_hand_backward(res, y, dY):
    d = np.where(y > 0, dY, 0).astype(np.float32)
    g = d
    for layer in reversed(res.block):
        g = layer.backward(g).copy()
    s = d
    for layer in reversed(res.children()[len(res.block) :]):
        s = layer.backward(s).copy()
    return g + s


def _nets():
    return {
        "bottleneck_projection": (
            Sequential([Bottleneck(4, stride=2), Flatten(), Dense(3)], seed=1),
            (8, 9, 8),
        ),
        "bottleneck_identity": (Sequential([Bottleneck(2), Flatten(), Dense(3)], seed=2), (8, 6, 6)),
        "relu_last": (
            Sequential(
                [Residual([Conv2D(3, 3, pad=1), Conv2D(3, 3, pad=1, act="relu")]), Flatten(), Dense(2)],
                seed=3,
            ),
            (3, 5, 5),
        ),
        "nested": (
            Sequential(
                [
                    Residual([Residual([Conv2D(3, 3, pad=1), BatchNorm2D()]), Conv2D(3, 1)]),
                    Flatten(),
                    Dense(2),
                ],
                seed=4,
            ),
            (3, 6, 5),
        ),
    }


@pytest.mark.parametrize("name", sorted(_nets()))
def test_training_step_bitwise_as_children_one_by_one(name):
    net, shape = _nets()[name]
    net.build(shape)
    ref = _twin(net)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4,) + shape).astype(np.float32)
    E = net.forward(X)
    res_ref = ref.layers[0]
    h = _by_hand_forward(res_ref, X)
    h2 = h
    for layer in ref.layers[1:]:
        h2 = layer.forward(h2).copy()
    np.testing.assert_array_equal(E, h2)
    dE = rng.standard_normal(E.shape).astype(np.float32)
    net.zero_grad()
    ref.zero_grad()
    dX = net.backward(dE)
    d = dE
    for layer in reversed(ref.layers[1:]):
        d = layer.backward(d).copy()
    np.testing.assert_array_equal(dX, _by_hand_backward(res_ref, h, d))
    for (k, p), (_, q) in zip(net.named_parameters(), ref.named_parameters()):
        np.testing.assert_array_equal(p.grad, q.grad, err_msg=k)


def test_no_gradient_buffer_per_child_and_sum_over_the_last_output():
    net = Sequential([Bottleneck(4, stride=2), Bottleneck(4), Flatten(), Dense(3)], seed=0)
    X = np.random.default_rng(1).standard_normal((3, 8, 8, 8)).astype(np.float32)
    E = net.forward(X)
    net.backward(np.ones_like(E), need_dx=True)
    for res in net.layers[:2]:
        for layer in res.children():
            assert layer._dx._arr is None, layer  # the input gradients lived in scratch
        assert res._out._arr is None  # the sum went over bn3's output, which its backward never reads
        assert np.shares_memory(res._y, res.block[-1]._out._arr)


def test_sum_not_written_over_an_output_the_backward_reads():
    """A block ending in a ReLU'd convolution keeps its output (the ReLU's mask): the sum gets
    the Residual's own buffer."""
    net, shape = _nets()["relu_last"]
    E = net.forward(np.ones((2,) + shape, np.float32))
    res = net.layers[0]
    assert res._out._arr is not None and not np.shares_memory(res._y, res.block[-1]._y)
    net.backward(np.ones_like(E))


@pytest.mark.parametrize("name", sorted(_nets()))
def test_eval_forward_in_scratch_bitwise_as_children_one_by_one(name):
    """At inference the children's outputs live in scratch regions: none keeps a buffer, and
    the result is the children's own passes (their fused inference plan) with the sum in numpy;
    a backward after it redoes the training pass."""
    net, shape = _nets()[name]
    net.build(shape)
    ref = _twin(net)
    net.eval()
    ref.eval()
    X = np.random.default_rng(2).standard_normal((3,) + shape).astype(np.float32)
    E = net.forward(X).copy()
    res, res_ref = net.layers[0], ref.layers[0]
    b = X
    for step in res_ref._plan("block", "inference"):
        b = step.run(b).copy()
    s = X
    for step in res_ref._plan("shortcut", "inference") if res_ref._shortcut_layers() else ():
        s = step.run(s).copy()
    h = np.maximum(b + s, 0)
    for layer in ref.layers[1:]:
        h = layer.forward(h)
    np.testing.assert_array_equal(E, h)
    for layer in res.children():
        if hasattr(layer, "_out") and not hasattr(layer, "block"):
            assert layer._out._arr is None, layer
    dX = net.backward(np.ones_like(E))
    y = _by_hand_forward(res_ref, X)  # the eval-mode layer passes, with their caches
    h2 = y
    for layer in ref.layers[1:]:
        h2 = layer.forward(h2)
    d = np.ones_like(E)
    for layer in reversed(ref.layers[1:]):
        d = layer.backward(d).copy()
    np.testing.assert_array_equal(dX, _by_hand_backward(res_ref, y, d))


def test_eval_forward_leaves_no_child_cache_into_scratch():
    """After an inference pass the children hold no reference into the scratch regions (which
    the next pass reuses, and which would otherwise stay allocated): a child's own backward
    raises instead of reading stale memory, and the block's backward redoes the pass."""
    inner = Residual([Conv2D(3, 3, pad=1, act="relu"), Conv2D(3, 3, pad=1)])
    net = Sequential(
        [Residual([inner, Conv2D(3, 3, pad=1, act="relu"), Conv2D(3, 3, pad=1)]), Flatten(), Dense(2)], seed=0
    )
    X = np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype(np.float32)
    net.build((3, 5, 5))
    net.eval()
    E = net.forward(X)
    res = net.layers[0]
    for layer in res.children():
        assert layer._x is None and layer._y is None
    assert inner._fused_x is None
    with pytest.raises(RuntimeError, match="before forward"):
        res.block[1].backward(np.ones((2, 3, 5, 5), np.float32))
    dX = net.backward(np.ones_like(E))
    ref = Sequential.from_config(net.get_config()).load_state_arrays(net.state_arrays())
    ref.eval()
    h = X
    for layer in ref.layers:  # the layer passes of eval mode, each with its own caches
        h = layer.forward(h).copy() if layer is not ref.layers[0] else _by_hand_forward(layer, h)
    d = np.ones_like(E)
    for layer in reversed(ref.layers[1:]):
        d = layer.backward(d).copy()
    np.testing.assert_array_equal(dX, _by_hand_backward(ref.layers[0], _by_hand_forward(ref.layers[0], X), d))
