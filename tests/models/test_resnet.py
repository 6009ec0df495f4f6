"""resnet18/34/50: output shapes for odd and non-square inputs, torchvision's state-dict names,
parameter counts (torchvision's minus fc), the head, and bad arguments."""

import numpy as np
import pytest

from mantissa_embed.models import resnet18, resnet34, resnet50

TORCHVISION_KEYS = [
    "conv1.weight",
    "bn1.weight",
    "bn1.bias",
    "bn1.running_mean",
    "bn1.running_var",
    "layer1.0.conv1.weight",
    "layer1.0.bn1.running_var",
    "layer1.1.conv2.weight",
    "layer2.0.conv1.weight",
    "layer2.0.downsample.0.weight",
    "layer2.0.downsample.1.weight",
    "layer2.0.downsample.1.running_var",
    "layer3.1.bn2.bias",
    "layer4.0.downsample.1.running_mean",
    "layer4.1.bn2.running_var",
]


def _names(net):
    return [n for n, _ in net.named_parameters()] + [n for n, _ in net.named_buffers()]


def test_resnet18_shapes():
    net = resnet18(None)
    assert net.forward(np.zeros((1, 3, 225, 225), np.float32)).shape == (1, 512)
    x = np.random.default_rng(0).standard_normal((2, 3, 112, 92)).astype(np.float32)
    net = resnet18(16, input_shape=(3, 112, 92))
    assert net.output_shape() == (16,) and net.forward(x).shape == (2, 16)
    assert net.names[:3] == ["conv1", "bn1", "maxpool"] and net.names[-2:] == ["avgpool", "head"]


def test_names_are_torchvisions():
    names = _names(resnet18(None, input_shape=(3, 32, 32)))
    assert set(TORCHVISION_KEYS) <= set(names) and len(names) == 100  # 60 parameters + 40 buffers
    assert not any("block" in n or "shortcut" in n for n in names)
    head = _names(resnet18(8, input_shape=(3, 32, 32)))
    assert head[60:62] == ["head.weight", "head.bias"] and len(head) == 102
    r50 = _names(resnet50(None, input_shape=(3, 32, 32)))
    assert {"layer1.0.conv3.weight", "layer1.0.downsample.0.weight", "layer4.2.bn3.running_mean"} <= set(r50)
    assert "layer1.0.downsample.0.weight" not in names  # BasicBlock keeps 64 channels in layer1


@pytest.mark.parametrize(
    "make,count,width",
    [(resnet18, 11_176_512, 512), (resnet34, 21_284_672, 512), (resnet50, 23_508_032, 2048)],
)
def test_parameter_counts_and_trunk_width(make, count, width):
    net = make(None, input_shape=(3, 64, 64))
    assert net.num_parameters() == count and net.output_shape() == (width,)


def test_bad_arguments():
    with pytest.raises(ValueError, match="embed_dim"):
        resnet18(0)
    with pytest.raises(TypeError, match="embed_dim"):
        resnet34("128")
