"""Sequential with named layers (dict or (name, layer) pairs, as torch's
nn.Sequential(OrderedDict)): parameter/buffer/state names, config and state round trips,
indexing, and bad names; unnamed Sequentials keep "0.weight"."""

import json

import numpy as np
import pytest

from mantissa_embed.layers import (
    BatchNorm2D,
    Conv2D,
    Dense,
    Flatten,
    GlobalAvgPool2D,
    MaxPool2D,
    Residual,
    Sequential,
)


def _named():
    return Sequential(
        {
            "conv1": Conv2D(4, 3, bias=False),
            "bn1": BatchNorm2D(act="relu"),
            "maxpool": MaxPool2D(3, stride=2, pad=1),
            "layer1.0": Residual([Conv2D(4, 3, pad=1)]),
            "avgpool": GlobalAvgPool2D(),
            "head": Dense(3),
        },
        seed=2,
    )


def test_names_of_parameters_buffers_and_state():
    m = _named().build((1, 9, 9))
    assert [n for n, _ in m.named_parameters()] == [
        "conv1.weight",
        "bn1.weight",
        "bn1.bias",
        "layer1.0.block.0.weight",
        "layer1.0.block.0.bias",
        "head.weight",
        "head.bias",
    ]
    assert [n for n, _ in m.named_buffers()] == ["bn1.running_mean", "bn1.running_var"]
    assert list(m.state_arrays()) == [n for n, _ in m.named_parameters()] + [
        "bn1.running_mean",
        "bn1.running_var",
    ]
    assert m._state_shapes((1, 9, 9)) == {k: v.shape for k, v in m.state_arrays().items()}
    assert m["head"] is m.layers[-1] and m[0] is m.layers[0]
    with pytest.raises(KeyError, match="fc"):
        m["fc"]
    assert "conv1: Conv2D" in m.summary() and "'head': Dense(3)" in repr(m)


def test_pairs_equal_dict_and_unnamed_keep_indices():
    a = _named()
    b = Sequential(
        list(
            zip(
                a.names,
                [
                    type(x).from_config({k: v for k, v in x.get_config().items() if k != "type"})
                    for x in a.layers
                ],
            )
        ),
        seed=2,
    )
    x = np.random.default_rng(0).standard_normal((2, 1, 9, 9)).astype(np.float32)
    np.testing.assert_array_equal(a.forward(x), b.forward(x))
    plain = Sequential([Conv2D(2, 3), BatchNorm2D(), Flatten(), Dense(2)]).build((1, 5, 5))
    assert [n for n, _ in plain.named_parameters()][:3] == ["0.weight", "0.bias", "1.weight"]
    assert "names" not in plain.get_config()


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_config_and_state_round_trip(backend):
    m = _named().set_backend(backend)
    x = np.random.default_rng(1).standard_normal((2, 1, 9, 9)).astype(np.float32)
    m.forward(x)  # builds; updates the running statistics
    cfg = json.loads(json.dumps(m.get_config()))
    assert cfg["names"] == ["conv1", "bn1", "maxpool", "layer1.0", "avgpool", "head"]
    again = Sequential.from_config(cfg).load_state_arrays(m.state_arrays())
    m.eval(), again.eval()
    np.testing.assert_array_equal(m.forward(x), again.forward(x))
    assert again.names == m.names


@pytest.mark.parametrize(
    "layers,err,match",
    [
        ({"a": Dense(2), "a.b": Dense(2)}, ValueError, "extends"),
        ({"": Dense(2)}, ValueError, "segments"),
        ({"a..b": Dense(2)}, ValueError, "segments"),
        ({"a-b": Dense(2)}, ValueError, "segments"),
        ([("a", Dense(2)), ("a", Dense(2))], ValueError, "distinct"),
        ([(1, Dense(2))], TypeError, "str"),
    ],
)
def test_bad_names(layers, err, match):
    with pytest.raises(err, match=match):
        Sequential(layers)


def test_bad_names_in_config():
    cfg = Sequential({"x": Dense(2)}).get_config()
    cfg["names"] = ["x", "y"]
    with pytest.raises(ValueError, match="names"):
        Sequential.from_config(cfg)
