"""Global average pooling: ``GlobalAvgPool2D``."""

from __future__ import annotations

from .._workspace import Workspace
from .base_layer import Layer, check_shape

__all__ = ["GlobalAvgPool2D"]


class GlobalAvgPool2D(Layer):
    """The mean of every feature map: (N, C, H, W) float32 -> (N, C), as
    ``torch.nn.AdaptiveAvgPool2d(1)`` followed by ``Flatten()`` (Lin et al. 2014, "Network In
    Network", ICLR). No parameters. Kernels: ``engine.global_avgpool2d_forward`` /
    ``global_avgpool2d_backward``. Raises ValueError for a non 4-D input.
    """

    input_ndim = 3

    def __init__(self) -> None:
        super().__init__()
        self._out = Workspace()
        self._dx = Workspace()

    def output_shape(self, input_shape):
        shape = check_shape(input_shape)
        if len(shape) != 3:
            raise ValueError(
                f"GlobalAvgPool2D expects per-sample input (C, H, W) (X of shape (N, C, H, W)), got {shape}"
            )
        return (shape[0],)

    def _forward(self, X):
        out = self._backend().global_avgpool2d_forward(X, out=self._out.get(X.shape[:2]))
        self._x_shape, self._y = X.shape, out
        return out

    def _backward(self, dY, need_dx):
        if not need_dx:
            return None
        return self._backend().global_avgpool2d_backward(dY, self._x_shape, dx=self._dx.get(self._x_shape))
