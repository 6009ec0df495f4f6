"""Rectified linear unit: ``ReLU``."""

from __future__ import annotations

from .._workspace import Workspace
from .base_layer import Layer, check_shape

__all__ = ["ReLU"]


class ReLU(Layer):
    """Element-wise ``max(0, x)``, any shape. The backward passes dY where the output is > 0."""

    def __init__(self) -> None:
        super().__init__()
        self._out = Workspace()
        self._dx = Workspace()

    def output_shape(self, input_shape):
        return check_shape(input_shape)

    def _forward(self, X):
        out = self._backend().relu_forward(X, out=self._out.get(X.shape))
        self._y = out
        return out

    def _backward(self, dY, need_dx):
        if not need_dx:
            return None
        return self._backend().relu_backward(dY, self._y, dx=self._dx.get(dY.shape))
