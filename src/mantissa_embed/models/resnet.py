"""torchvision's ResNet-18/34/50, layer for layer and name for name: ``resnet18``, ``resnet34``,
``resnet50``."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from .._validation import check_int
from ..layers import (
    BasicBlock,
    BatchNorm2D,
    Bottleneck,
    Conv2D,
    Dense,
    GlobalAvgPool2D,
    Layer,
    MaxPool2D,
    Sequential,
)
from .weights import load_weights

__all__ = ["resnet18", "resnet34", "resnet50"]

_WIDTHS = (64, 128, 256, 512)

#: ImageNet's per-channel mean and std, the input normalization of torchvision's pretrained
#: ResNets (their ``transforms.Normalize``): the ResNets carry them as ``input_mean`` /
#: ``input_std``, applied by ``Embedder`` to images in [0, 1], not by ``forward``.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _resnet(
    block: type[BasicBlock] | type[Bottleneck],
    depths: Sequence[int],
    embed_dim: int | None,
    weights: str | os.PathLike[str] | None,
    seed: int | np.random.Generator,
    backend: str,
    input_shape: Sequence[int] | None,
) -> Sequential:
    if embed_dim is not None:
        embed_dim = check_int(embed_dim, "embed_dim", minimum=1)
    layers: list[tuple[str, Layer]] = [
        ("conv1", Conv2D(64, 7, stride=2, pad=3, bias=False)),
        ("bn1", BatchNorm2D(act="relu")),  # torchvision's bn1 then relu (which has no parameters)
        ("maxpool", MaxPool2D(3, stride=2, pad=1)),
    ]
    for i, (planes, n) in enumerate(zip(_WIDTHS, depths)):
        for j in range(n):
            layers.append((f"layer{i + 1}.{j}", block(planes, stride=2 if i > 0 and j == 0 else 1)))
    layers.append(("avgpool", GlobalAvgPool2D()))  # AdaptiveAvgPool2d(1) + flatten: (N, C)
    if embed_dim is not None:
        layers.append(("head", Dense(embed_dim)))
    net = Sequential(layers, seed=seed, backend=backend, input_mean=IMAGENET_MEAN, input_std=IMAGENET_STD)
    if input_shape is None and weights is not None:
        input_shape = (3, 224, 224)
    if input_shape is not None:
        net.build(input_shape)
    if weights is not None:
        load_weights(net, weights)
    return net


def resnet18(
    embed_dim: int | None = 128,
    *,
    weights: str | os.PathLike[str] | None = None,
    seed: int | np.random.Generator = 0,
    backend: str = "mantissa",
    input_shape: Sequence[int] | None = None,
) -> Sequential:
    """torchvision's ResNet-18 (He et al. 2016, "Deep Residual Learning for Image Recognition",
    CVPR) as a named ``Sequential``, with torchvision's architecture and parameter names.

    Layers (names as torchvision's modules): ``conv1`` = Conv2D(64, 7, stride=2, pad=3,
    bias=False); ``bn1`` = BatchNorm2D(act="relu") (torchvision's ``bn1`` + ``relu``);
    ``maxpool`` = MaxPool2D(3, stride=2, pad=1); ``layer1`` .. ``layer4`` = 2, 2, 2, 2 blocks of
    BasicBlock (widths 64, 128, 256, 512; the first block of ``layer2`` .. ``layer4`` has stride 2
    and a ``downsample`` shortcut), named ``layer1.0``, ``layer1.1``, ...; ``avgpool`` =
    GlobalAvgPool2D() (torchvision's AdaptiveAvgPool2d(1) and flatten: any input size, odd
    ones included); then, unless ``embed_dim`` is None, ``head`` = Dense(embed_dim) in place of
    torchvision's ``fc``. ``named_parameters()`` / ``named_buffers()`` give torchvision's
    state-dict names (``conv1.weight``, ``bn1.running_mean``, ``layer1.0.conv1.weight``,
    ``layer2.0.downsample.0.weight``, ...) minus ``fc.*`` and ``*.num_batches_tracked``.
    Input normalization is not part of the network: ``forward(x)`` equals torchvision's
    ``forward`` on the same (N, 3, H, W) float32 tensor (H, W >= 1). The model carries
    ImageNet's ``input_mean`` / ``input_std`` (``IMAGENET_MEAN``, ``IMAGENET_STD``) in its
    config, which ``Embedder`` applies to images in [0, 1] in ``fit`` and ``embed``.

    Parameters
    ----------
    embed_dim : int >= 1 or None, default 128
        Size of the ``head`` embedding; None returns the trunk up to the global pooling,
        output (N, 512) float32.
    weights : str, os.PathLike or None, default None
        A weights file for ``mantissa_embed.models.weights.load_weights`` (strict), loaded
        into the model built for ``input_shape``.
    seed : int >= 0 or numpy.random.Generator, default 0
        Initialization seed (PyTorch's default Conv2d/Linear initialization; BatchNorm weight 1,
        bias 0).
    backend : {"mantissa", "numpy"}, default "mantissa"
    input_shape : sequence of 3 ints or None, default None
        Build the model for this per-sample shape (C, H, W); None leaves it unbuilt (built at
        the first forward), or builds it for (3, 224, 224) when ``weights`` is given. A built
        Sequential takes only its input shape.

    Returns a ``Sequential`` (11,176,512 parameters without the head, as torchvision's
    ResNet-18 without ``fc``). Raises TypeError / ValueError for bad arguments; what
    ``load_weights`` raises for a bad weights file.
    """
    return _resnet(BasicBlock, (2, 2, 2, 2), embed_dim, weights, seed, backend, input_shape)


def resnet34(
    embed_dim: int | None = 128,
    *,
    weights: str | os.PathLike[str] | None = None,
    seed: int | np.random.Generator = 0,
    backend: str = "mantissa",
    input_shape: Sequence[int] | None = None,
) -> Sequential:
    """torchvision's ResNet-34 (He et al. 2016, "Deep Residual Learning for Image Recognition",
    CVPR) as a named ``Sequential``, with torchvision's architecture and parameter names.

    Layers (names as torchvision's modules): ``conv1`` = Conv2D(64, 7, stride=2, pad=3,
    bias=False); ``bn1`` = BatchNorm2D(act="relu") (torchvision's ``bn1`` + ``relu``);
    ``maxpool`` = MaxPool2D(3, stride=2, pad=1); ``layer1`` .. ``layer4`` = 3, 4, 6, 3 blocks of
    BasicBlock (widths 64, 128, 256, 512; the first block of ``layer2`` .. ``layer4`` has stride 2
    and a ``downsample`` shortcut), named ``layer1.0``, ``layer1.1``, ...; ``avgpool`` =
    GlobalAvgPool2D() (torchvision's AdaptiveAvgPool2d(1) and flatten: any input size, odd
    ones included); then, unless ``embed_dim`` is None, ``head`` = Dense(embed_dim) in place of
    torchvision's ``fc``. ``named_parameters()`` / ``named_buffers()`` give torchvision's
    state-dict names (``conv1.weight``, ``bn1.running_mean``, ``layer1.0.conv1.weight``,
    ``layer2.0.downsample.0.weight``, ...) minus ``fc.*`` and ``*.num_batches_tracked``.
    Input normalization is not part of the network: ``forward(x)`` equals torchvision's
    ``forward`` on the same (N, 3, H, W) float32 tensor (H, W >= 1). The model carries
    ImageNet's ``input_mean`` / ``input_std`` (``IMAGENET_MEAN``, ``IMAGENET_STD``) in its
    config, which ``Embedder`` applies to images in [0, 1] in ``fit`` and ``embed``.

    Parameters
    ----------
    embed_dim : int >= 1 or None, default 128
        Size of the ``head`` embedding; None returns the trunk up to the global pooling,
        output (N, 512) float32.
    weights : str, os.PathLike or None, default None
        A weights file for ``mantissa_embed.models.weights.load_weights`` (strict), loaded
        into the model built for ``input_shape``.
    seed : int >= 0 or numpy.random.Generator, default 0
        Initialization seed (PyTorch's default Conv2d/Linear initialization; BatchNorm weight 1,
        bias 0).
    backend : {"mantissa", "numpy"}, default "mantissa"
    input_shape : sequence of 3 ints or None, default None
        Build the model for this per-sample shape (C, H, W); None leaves it unbuilt (built at
        the first forward), or builds it for (3, 224, 224) when ``weights`` is given. A built
        Sequential takes only its input shape.

    Returns a ``Sequential`` (21,284,672 parameters without the head, as torchvision's
    ResNet-34 without ``fc``). Raises TypeError / ValueError for bad arguments; what
    ``load_weights`` raises for a bad weights file.
    """
    return _resnet(BasicBlock, (3, 4, 6, 3), embed_dim, weights, seed, backend, input_shape)


def resnet50(
    embed_dim: int | None = 128,
    *,
    weights: str | os.PathLike[str] | None = None,
    seed: int | np.random.Generator = 0,
    backend: str = "mantissa",
    input_shape: Sequence[int] | None = None,
) -> Sequential:
    """torchvision's ResNet-50 (He et al. 2016, "Deep Residual Learning for Image Recognition",
    CVPR) as a named ``Sequential``, with torchvision's architecture and parameter names.

    Layers (names as torchvision's modules): ``conv1`` = Conv2D(64, 7, stride=2, pad=3,
    bias=False); ``bn1`` = BatchNorm2D(act="relu") (torchvision's ``bn1`` + ``relu``);
    ``maxpool`` = MaxPool2D(3, stride=2, pad=1); ``layer1`` .. ``layer4`` = 3, 4, 6, 3 blocks of
    Bottleneck (expansion 4) (widths 64, 128, 256, 512; the first block of ``layer2`` .. ``layer4`` has stride 2
    and a ``downsample`` shortcut; the stride sits on the 3x3 convolution, torchvision's "v1.5"), named ``layer1.0``, ``layer1.1``, ...; ``avgpool`` =
    GlobalAvgPool2D() (torchvision's AdaptiveAvgPool2d(1) and flatten: any input size, odd
    ones included); then, unless ``embed_dim`` is None, ``head`` = Dense(embed_dim) in place of
    torchvision's ``fc``. ``named_parameters()`` / ``named_buffers()`` give torchvision's
    state-dict names (``conv1.weight``, ``bn1.running_mean``, ``layer1.0.conv1.weight``,
    ``layer2.0.downsample.0.weight``, ...) minus ``fc.*`` and ``*.num_batches_tracked``.
    Input normalization is not part of the network: ``forward(x)`` equals torchvision's
    ``forward`` on the same (N, 3, H, W) float32 tensor (H, W >= 1). The model carries
    ImageNet's ``input_mean`` / ``input_std`` (``IMAGENET_MEAN``, ``IMAGENET_STD``) in its
    config, which ``Embedder`` applies to images in [0, 1] in ``fit`` and ``embed``.

    Parameters
    ----------
    embed_dim : int >= 1 or None, default 128
        Size of the ``head`` embedding; None returns the trunk up to the global pooling,
        output (N, 2048) float32.
    weights : str, os.PathLike or None, default None
        A weights file for ``mantissa_embed.models.weights.load_weights`` (strict), loaded
        into the model built for ``input_shape``.
    seed : int >= 0 or numpy.random.Generator, default 0
        Initialization seed (PyTorch's default Conv2d/Linear initialization; BatchNorm weight 1,
        bias 0).
    backend : {"mantissa", "numpy"}, default "mantissa"
    input_shape : sequence of 3 ints or None, default None
        Build the model for this per-sample shape (C, H, W); None leaves it unbuilt (built at
        the first forward), or builds it for (3, 224, 224) when ``weights`` is given. A built
        Sequential takes only its input shape.

    Returns a ``Sequential`` (23,508,032 parameters without the head, as torchvision's
    ResNet-50 without ``fc``). Raises TypeError / ValueError for bad arguments; what
    ``load_weights`` raises for a bad weights file.
    """
    return _resnet(Bottleneck, (3, 4, 6, 3), embed_dim, weights, seed, backend, input_shape)
