"""BasicBlock and Bottleneck: torchvision's child names, torchvision's downsample rule, shapes,
config round trip, and the engine against the numpy twin (forward, backward)."""

import json

import numpy as np
import pytest

from mantissa_embed.layers import BasicBlock, Bottleneck, Sequential


def test_names_and_downsample_rule():
    b = BasicBlock(8).build((8, 5, 5))
    assert [n for n, _ in b.named_parameters()] == [
        "conv1.weight",
        "bn1.weight",
        "bn1.bias",
        "conv2.weight",
        "bn2.weight",
        "bn2.bias",
    ]
    assert b.downsample is None and b.output_shape((8, 5, 5)) == (8, 5, 5)
    b = BasicBlock(8).build((4, 5, 5))  # channels change: downsample with stride 1
    assert [n for n, _ in b.named_buffers()][-2:] == ["downsample.1.running_mean", "downsample.1.running_var"]
    b = Bottleneck(4, stride=2).build(
        (8, 1, 1)
    )  # stride 2 on 1x1 keeps 1x1: still a downsample (torchvision)
    assert b.output_shape((8, 1, 1)) == (16, 1, 1) and b.downsample is not None
    assert [n for n, _ in b.named_parameters()][-3:] == [
        "downsample.0.weight",
        "downsample.1.weight",
        "downsample.1.bias",
    ]
    assert b.block[2].stride == 2 and b.block[0].stride == 1  # v1.5: the stride on the 3x3
    assert b._param_shapes((8, 1, 1)) == {n: p.shape for n, p in b.named_parameters()}
    assert repr(b) == "Bottleneck(4, stride=2)"
    with pytest.raises(ValueError, match="planes"):
        BasicBlock(0)
    with pytest.raises(TypeError, match="stride"):
        Bottleneck(4, stride=1.5)


@pytest.mark.parametrize("block", [BasicBlock(6, stride=2), Bottleneck(3, stride=2), BasicBlock(4)])
def test_engine_matches_twin_and_config_round_trips(block):
    x = np.random.default_rng(0).standard_normal((3, 4, 7, 6)).astype(np.float32)
    net = Sequential({"layer1.0": block}, seed=3)
    again = Sequential.from_config(json.loads(json.dumps(net.build(x.shape[1:]).get_config())))
    again.load_state_arrays(net.state_arrays()).set_backend("numpy")
    assert type(again.layers[0]) is type(block) and again.names == ["layer1.0"]
    for mode in ("train", "eval"):
        getattr(net, mode)(), getattr(again, mode)()
        y, y2 = net.forward(x), again.forward(x)
        np.testing.assert_allclose(y, y2, rtol=1e-4, atol=1e-5)
        dy = np.random.default_rng(1).standard_normal(y.shape).astype(np.float32)
        net.zero_grad(), again.zero_grad()
        np.testing.assert_allclose(net.backward(dy), again.backward(dy), rtol=1e-4, atol=1e-4)
        for (n, p), (n2, p2) in zip(net.named_parameters(), again.named_parameters()):
            assert n == n2
            np.testing.assert_allclose(p.grad, p2.grad, rtol=1e-3, atol=1e-3, err_msg=n)
