"""torchvision's ResNet-18/34/50 in torch, with torchvision's module names (torchvision itself
does not load here): the layout written in ``tests/models/test_resnet_torch.py`` (imported from
there, one copy), with an embedding ``head`` (``nn.Linear``) in place of ``fc``, as
``mantissa_embed.models.resnet*`` have it. ``state_dict()`` names equal ``mantissa_embed``'s
``state_names(net)`` plus torch's ``*.num_batches_tracked``. Imports torch and pytest: the
benchmark scripts import this module lazily.
"""

from __future__ import annotations

import os
import sys

from torch import nn

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "models")
)
from test_resnet_torch import (  # noqa: E402
    TvBasicBlock,
    TvBottleneck,
    TvResNet as _TvResNet,  # noqa: E402
)

__all__ = ["SPECS", "TvBasicBlock", "TvBottleneck", "TvResNet", "torch_resnet"]


class TvResNet(_TvResNet):
    """torchvision's ``ResNet`` without ``fc``: ``forward`` is the trunk up to the flattened
    global average pooling, then ``head`` (``Linear(512 * expansion, embed_dim)``) unless
    ``embed_dim`` is None."""

    def __init__(self, block, layers, embed_dim=128):
        super().__init__(block, layers)
        del self.fc
        self.head = None if embed_dim is None else nn.Linear(512 * block.expansion, embed_dim)

    def forward(self, x):
        x = self.trunk(x)
        return x if self.head is None else self.head(x)


SPECS = {
    "resnet18": (TvBasicBlock, (2, 2, 2, 2)),
    "resnet34": (TvBasicBlock, (3, 4, 6, 3)),
    "resnet50": (TvBottleneck, (3, 4, 6, 3)),
}


def torch_resnet(name, embed_dim=128):
    """The torch twin of ``mantissa_embed.models.<name>(embed_dim)`` (torch's default init)."""
    block, depths = SPECS[name]
    return TvResNet(block, depths, embed_dim)
