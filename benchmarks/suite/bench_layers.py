"""Conv2D (+ReLU) and MaxPool2D forward / backward at the shapes of small_cnn_embedder, batch 64."""

from __future__ import annotations

import numpy as np

from mantissa_embed.layers import Conv2D, MaxPool2D

# per-sample input shape -> layer
CONV = {"conv1_1x28x28_to_8": ((1, 28, 28), 8), "conv2_8x14x14_to_16": ((8, 14, 14), 16)}
POOL = {"pool1_8x28x28": (8, 28, 28), "pool2_16x14x14": (16, 14, 14)}
BATCH = 64


def _input(shape):
    return np.random.default_rng(0).standard_normal((BATCH,) + shape).astype(np.float32)


class _LayerBench:
    """Shared setup and timings: ``make(layer) -> (Layer, per-sample input shape)``."""

    param_names = ["layer"]

    def setup(self, layer):
        self.layer, shape = self.make(layer)
        self.layer.build(shape, np.random.default_rng(0))
        self.X = _input(shape)
        Y = self.layer.forward(self.X)
        self.dY = np.random.default_rng(1).standard_normal(Y.shape).astype(np.float32)

    def time_forward(self, layer):
        self.layer.forward(self.X)

    def time_backward(self, layer):
        self.layer.backward(self.dY)

    def peakmem_forward_backward(self, layer):
        self.layer.forward(self.X)
        self.layer.backward(self.dY)


class Conv2d(_LayerBench):
    """Conv2D(out, 3, pad=1, act="relu"): forward, and backward (weights, bias and input)."""

    params = (list(CONV),)

    @staticmethod
    def make(layer):
        shape, out = CONV[layer]
        return Conv2D(out, 3, pad=1, act="relu"), shape


class MaxPool(_LayerBench):
    """MaxPool2D(2): forward, backward, and the backward fused with the ReLU mask of the conv
    before it (what ``Sequential.backward`` runs for ``Conv2D(act="relu") -> MaxPool2D``)."""

    params = (list(POOL),)

    @staticmethod
    def make(layer):
        return MaxPool2D(2), POOL[layer]

    def time_backward_relu(self, layer):
        self.layer._backward_relu(self.dY)
