"""torchvision's ResNet-18/34/50 written in torch, with torchvision's module names (torchvision
itself does not load here): the layout of ``tests/oracle/test_resnet_torch.py``, with an
embedding ``head`` (``nn.Linear``) in place of ``fc``, as ``mantissa_embed.models.resnet*`` have
it. ``state_dict()`` names equal ``mantissa_embed``'s ``state_names(net)`` plus torch's
``*.num_batches_tracked``. Imports torch: the benchmark scripts import this module lazily.
"""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["SPECS", "TvBasicBlock", "TvBottleneck", "TvResNet", "torch_resnet"]


def _conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


def _conv1x1(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, 1, stride=stride, bias=False)


class TvBasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = _conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class TvBottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = _conv1x1(inplanes, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = _conv3x3(planes, planes, stride)  # v1.5: the stride on the 3x3
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = _conv1x1(planes, planes * 4)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class TvResNet(nn.Module):
    """torchvision's ``ResNet`` without ``fc``: ``forward`` is the trunk up to the flattened
    global average pooling, then ``head`` (``Linear(512 * expansion, embed_dim)``) unless
    ``embed_dim`` is None."""

    def __init__(self, block, layers, embed_dim=128):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.head = None if embed_dim is None else nn.Linear(512 * block.expansion, embed_dim)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(_conv1x1(self.inplanes, planes * block.expansion, stride),
                                       nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return x if self.head is None else self.head(x)


SPECS = {"resnet18": (TvBasicBlock, (2, 2, 2, 2)), "resnet34": (TvBasicBlock, (3, 4, 6, 3)),
         "resnet50": (TvBottleneck, (3, 4, 6, 3))}


def torch_resnet(name, embed_dim=128):
    """The torch twin of ``mantissa_embed.models.<name>(embed_dim)`` (torch's default init)."""
    block, depths = SPECS[name]
    return TvResNet(block, depths, embed_dim)
