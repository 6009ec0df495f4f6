"""Layers and the ``Sequential`` container: explicit forward and backward, no autograd.

Every layer computes through a backend module (``"mantissa"``: the C engine,
``mantissa_embed.engine``; ``"numpy"``: the numpy twins), both with the same functions.

- Images are float32 NCHW; shapes are inferred at the first forward (or ``build``).
  ``input_shape`` / ``output_shape`` are per-sample shapes, without the batch axis.
- ``forward(X) -> Y`` caches what the backward needs; ``backward(dY) -> dX`` uses the cache of
  the last forward and accumulates into every ``Parameter.grad`` (as PyTorch does).
- A layer reuses its output, gradient and scratch arrays (``Workspace``)
  while the batch does not grow: the array a layer's ``forward`` or ``backward`` returns is
  overwritten by its next call. ``Sequential.forward`` / ``Sequential.backward``
  return fresh arrays.
- Initialization: PyTorch's defaults for ``nn.Conv2d`` / ``nn.Linear`` (Kaiming-uniform with
  ``a = sqrt(5)``, He et al. 2015, "Delving Deep into Rectifiers", ICCV): weight and bias
  ``~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))``, drawn from the Sequential's seeded
  ``numpy.random.Generator`` layer by layer, weight then bias.
- A Sequential runs its passes as plans of engine calls (``.fusion``): at inference a
  Conv2D and the MaxPool2D(2) after it are one call, and a MaxPool2D after a ReLU output
  applies the ReLU's backward in its own.
"""

from .avg_pool2d import AvgPool2D
from .base_layer import Layer
from .batch_norm import BatchNorm1D, BatchNorm2D
from .conv2d import Conv2D
from .dense import Dense
from .dropout import Dropout
from .flatten import Flatten
from .global_avg_pool2d import GlobalAvgPool2D
from .leaky_relu import LeakyReLU
from .max_pool2d import MaxPool2D
from .relu import ReLU
from .residual import Residual
from .resnet_blocks import BasicBlock, Bottleneck
from .sequential import Sequential

__all__ = [
    "Layer",
    "Conv2D",
    "MaxPool2D",
    "Flatten",
    "Dense",
    "ReLU",
    "Sequential",
    "AvgPool2D",
    "GlobalAvgPool2D",
    "LeakyReLU",
    "Dropout",
    "Residual",
    "BatchNorm2D",
    "BatchNorm1D",
    "BasicBlock",
    "Bottleneck",
]
