"""2-D max pooling: ``MaxPool2D``."""
from __future__ import annotations

import numpy as np

from .._workspace import Workspace
from ._pool_base import _Pool2D
from .fusion import Fusion

__all__ = ["MaxPool2D"]


class MaxPool2D(_Pool2D):
    """2-D max pooling (as ``torch.nn.MaxPool2d`` with no padding, floor mode).

    Parameters
    ----------
    size : int >= 1
        Window height and width.
    stride : int >= 1 or None, default None (= ``size``)

    Input (N, C, H, W) -> (N, C, (H - size)//stride + 1, (W - size)//stride + 1). The backward
    routes each gradient to the argmax of its window (int32 offsets kept by the forward;
    ties: the first maximum); after a layer whose output is a ReLU it applies that ReLU's
    mask in the same call (``maxpool2d_relu_backward``). Raises ValueError for a window
    larger than the input.
    """

    backward_fusions = (Fusion("maxpool2d_relu_backward", ("relu_output",), "_backward_relu"),)

    def __init__(self, size, stride: int | tuple[int, int] | None = None) -> None:
        super().__init__(size, stride)
        self._out = Workspace()
        self._arg = Workspace(np.int32)
        self._dx = Workspace()

    def fusion_tags(self):
        return ("maxpool2",) if self.size == 2 and self.stride == 2 else ()

    def _forward(self, X):
        oshape = (X.shape[0],) + self._out_shape
        out, arg = self._backend().maxpool2d_forward(X, self.size, self.stride, out=self._out.get(oshape),
                                                     argmax=self._arg.get(oshape))
        self._x_shape, self._y, self._argmax = X.shape, out, arg
        self._x = None
        return out

    def _backward(self, dY, need_dx):
        if not need_dx:
            return None
        return self._backend().maxpool2d_backward(dY, self._argmax, self._x_shape,
                                                  dx=self._dx.get(self._x_shape))

    def _backward_relu(self, dY):
        """``backward(dY)`` followed by the backward of the ReLU whose output was pooled, in one
        kernel call: returns d loss / d(that layer's pre-activation), a layer-owned buffer.
        Exact (the mask at each argmax is ``y > 0``)."""
        dY = self._check_dy(dY)
        return self._backend().maxpool2d_relu_backward(dY, self._argmax, self._y, self._x_shape,
                                                       dx=self._dx.get(self._x_shape))
