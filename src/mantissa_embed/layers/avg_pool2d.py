"""2-D average pooling: ``AvgPool2D``."""

from __future__ import annotations

from .._workspace import Workspace
from ._pool_base import _Pool2D

__all__ = ["AvgPool2D"]


class AvgPool2D(_Pool2D):
    """2-D average pooling (as ``torch.nn.AvgPool2d(size, stride)`` with no padding, floor mode).

    Parameters
    ----------
    size : int >= 1
        Window height and width.
    stride : int >= 1 or None, default None (= ``size``)

    Input (N, C, H, W) float32 -> (N, C, (H - size)//stride + 1, (W - size)//stride + 1), each
    output the mean of its ``size x size`` window. Kernels: ``engine.avgpool2d_forward`` /
    ``avgpool2d_backward``. Raises ValueError/TypeError for bad arguments, a non 4-D input or a
    window larger than the input.
    """

    def __init__(self, size, stride: int | tuple[int, int] | None = None) -> None:
        super().__init__(size, stride)
        self._out = Workspace()
        self._dx = Workspace()

    def _forward(self, X):
        out = self._backend().avgpool2d_forward(
            X, self.size, self.stride, out=self._out.get((X.shape[0],) + self._out_shape)
        )
        self._x_shape, self._y = X.shape, out
        return out

    def _backward(self, dY, need_dx):
        if not need_dx:
            return None
        return self._backend().avgpool2d_backward(
            dY, self._x_shape, self.size, self.stride, dx=self._dx.get(self._x_shape)
        )
