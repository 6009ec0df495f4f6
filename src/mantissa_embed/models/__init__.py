"""Ready-made trunks (embedding networks) built from ``mantissa_embed.layers``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._validation import check_bool, check_int
from ..layers import (
    BatchNorm2D,
    Conv2D,
    Dense,
    Flatten,
    GlobalAvgPool2D,
    Layer,
    MaxPool2D,
    Residual,
    Sequential,
)
from .resnet import resnet18, resnet34, resnet50
from .weights import load_weights, save_weights

__all__ = ["cnn_embedder", "resnet_embedder", "small_cnn_embedder", "mlp_embedder"]
__all__ += ["load_weights", "save_weights"]  # models.weights


def __dir__() -> list[str]:
    # the API and the private names: not the names imported to build the trunks (numpy, Sequence,
    # check_int, the layer classes) nor ``annotations`` (the __future__ import)
    return sorted(set(__all__) | {n for n in globals() if n.startswith("_")})


def _widths(widths: Sequence[int], name: str = "widths") -> tuple[int, ...]:
    if isinstance(widths, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of ints")
    try:
        widths = tuple(widths)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of ints, got {type(widths).__name__}") from None
    if not widths:
        raise ValueError(f"{name} must not be empty")
    return tuple(check_int(w, f"{name}[{i}]", minimum=1) for i, w in enumerate(widths))


def _conv_block(width: int, batch_norm: bool, stride: int = 1) -> list[Layer]:
    if batch_norm:
        return [Conv2D(width, 3, stride=stride, pad=1, bias=False), BatchNorm2D(act="relu")]
    return [Conv2D(width, 3, stride=stride, pad=1, act="relu")]


def cnn_embedder(
    embed_dim: int = 64,
    widths: Sequence[int] = (32, 64, 128),
    batch_norm: bool = True,
    *,
    seed: int | np.random.Generator = 0,
    backend: str = "mantissa",
) -> Sequential:
    """The default trunk: 3x3 convolutions, 2x2 max pooling, global average pooling, a linear head.

    For each width ``w`` of ``widths``: ``Conv2D(w, 3, pad=1)`` then (``batch_norm``)
    ``BatchNorm2D`` and a ReLU, followed by ``MaxPool2D(2)`` after every block but the last;
    then ``GlobalAvgPool2D() -> Dense(embed_dim)``. With ``batch_norm`` the convolutions have
    no bias (the BatchNorm's beta replaces it). On 1x28x28 images with the defaults: 101,152
    parameters (with BatchNorm) and 7.45 M multiply-adds per image.

    Parameters
    ----------
    embed_dim : int >= 1, default 64
    widths : sequence of int >= 1, default (32, 64, 128)
    batch_norm : bool, default True
    seed : int >= 0 or numpy.random.Generator, default 0
    backend : {"mantissa", "numpy"}, default "mantissa"

    Returns an unbuilt ``Sequential``; inputs (N, C, H, W) with
    H, W >= 2 ** (len(widths) - 1) (4x4 for the default widths; 8x8 and larger are what it is
    meant for). Raises TypeError / ValueError for bad arguments.
    """
    embed_dim = check_int(embed_dim, "embed_dim", minimum=1)
    widths = _widths(widths)
    batch_norm = check_bool(batch_norm, "batch_norm")
    layers = []
    for i, w in enumerate(widths):
        layers += _conv_block(w, batch_norm)
        if i < len(widths) - 1:
            layers.append(MaxPool2D(2))
    layers += [GlobalAvgPool2D(), Dense(embed_dim)]
    return Sequential(layers, seed=seed, backend=backend)


def resnet_embedder(
    embed_dim: int = 64,
    widths: Sequence[int] = (32, 64, 128),
    blocks: Sequence[int] = (1, 1, 1),
    *,
    seed: int | np.random.Generator = 0,
    backend: str = "mantissa",
) -> Sequential:
    """A small ResNet trunk (He et al. 2016, "Deep Residual Learning", basic blocks).

    A stem ``Conv2D(widths[0], 3, pad=1, bias=False) -> BatchNorm2D(act="relu")``; then for
    each stage ``i``, ``blocks[i]`` residual blocks ``Residual([Conv2D(w, 3, stride, pad=1,
    bias=False), BatchNorm2D(act="relu"), Conv2D(w, 3, pad=1, bias=False), BatchNorm2D()])``,
    the first of every stage after the first with stride 2 (its shortcut a strided 1x1
    convolution + BatchNorm2D); then ``GlobalAvgPool2D() -> Dense(embed_dim)``.

    Parameters: ``embed_dim`` int >= 1; ``widths`` and ``blocks`` sequences of the same length
    (ints >= 1); ``seed``; ``backend``. Returns an unbuilt Sequential. Raises TypeError /
    ValueError for bad arguments.
    """
    embed_dim = check_int(embed_dim, "embed_dim", minimum=1)
    widths = _widths(widths)
    blocks = _widths(blocks, "blocks")
    if len(blocks) != len(widths):
        raise ValueError(f"blocks must have one entry per width ({len(widths)}), got {len(blocks)}")
    layers = _conv_block(widths[0], True)
    for i, (w, n) in enumerate(zip(widths, blocks)):
        for j in range(n):
            stride = 2 if i > 0 and j == 0 else 1
            layers.append(
                Residual(_conv_block(w, True, stride) + [Conv2D(w, 3, pad=1, bias=False), BatchNorm2D()])
            )
    layers += [GlobalAvgPool2D(), Dense(embed_dim)]
    return Sequential(layers, seed=seed, backend=backend)


def small_cnn_embedder(
    embed_dim: int = 16, *, seed: int | np.random.Generator = 0, backend: str = "mantissa"
) -> Sequential:
    """The small CNN trunk of the mantissa-embed README.

    ``Conv2D(8, 3, pad=1, act="relu") -> MaxPool2D(2) -> Conv2D(16, 3, pad=1, act="relu")
    -> MaxPool2D(2) -> Flatten() -> Dense(64, act="relu") -> Dense(embed_dim)``.

    Parameters
    ----------
    embed_dim : int >= 1, default 16
        Size of the embedding (the last Dense layer, no activation).
    seed : int >= 0 or numpy.random.Generator, default 0
        Initialization seed (see ``Sequential``).
    backend : {"mantissa", "numpy"}, default "mantissa"

    Returns
    -------
    Sequential
        Unbuilt: shapes are inferred at the first forward. Input (N, C, H, W) float32 with
        H, W >= 4 (two 2x2 poolings); on 1x28x28 images with ``embed_dim=16`` it has exactly
        52,528 parameters (80 + 1,168 + 50,240 + 1,040). 8x8 images (scikit-learn digits)
        also work as they are (flatten size 64), or padded/upsampled to 28x28.

    Raises TypeError / ValueError for a bad ``embed_dim``, ``seed`` or ``backend``.
    """
    embed_dim = check_int(embed_dim, "embed_dim", minimum=1)
    return Sequential(
        [
            Conv2D(8, 3, pad=1, act="relu"),
            MaxPool2D(2),
            Conv2D(16, 3, pad=1, act="relu"),
            MaxPool2D(2),
            Flatten(),
            Dense(64, act="relu"),
            Dense(embed_dim),
        ],
        seed=seed,
        backend=backend,
    )


def mlp_embedder(
    embed_dim: int = 16,
    hidden: Sequence[int] = (64,),
    *,
    seed: int | np.random.Generator = 0,
    backend: str = "mantissa",
) -> Sequential:
    """A fully connected trunk: ``Flatten() -> Dense(h, act="relu") for h in hidden -> Dense(embed_dim)``.

    A baseline for small inputs (e.g. 8x8 digits) and for tests. ``hidden``: a sequence of
    positive ints (may be empty). Returns an unbuilt ``Sequential``.
    """
    embed_dim = check_int(embed_dim, "embed_dim", minimum=1)
    if isinstance(hidden, (str, bytes)):
        raise TypeError("hidden must be a sequence of ints")
    hidden = [check_int(h, f"hidden[{i}]", minimum=1) for i, h in enumerate(hidden)]
    return Sequential(
        [Flatten()] + [Dense(h, act="relu") for h in hidden] + [Dense(embed_dim)], seed=seed, backend=backend
    )


__all__ += ["resnet18", "resnet34", "resnet50"]
