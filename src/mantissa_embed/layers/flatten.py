"""Flattening: ``Flatten``."""

from __future__ import annotations

import numpy as np

from .base_layer import Layer, check_shape

__all__ = ["Flatten"]


class Flatten(Layer):
    """Flatten every sample: (N, d1, d2, ...) -> (N, d1*d2*...). A view, no copy."""

    def output_shape(self, input_shape):
        shape = check_shape(input_shape)
        return (int(np.prod(shape)),)

    def _forward(self, X):
        self._y = X.reshape(X.shape[0], -1)
        self._x_shape = X.shape
        return self._y

    def _backward(self, dY, need_dx):
        return dY.reshape(self._x_shape) if need_dx else None
