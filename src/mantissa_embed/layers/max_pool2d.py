"""2-D max pooling: :class:`MaxPool2D`."""
from __future__ import annotations

import numpy as np

from .._validation import check_int
from .._workspace import Workspace
from .base_layer import Layer, check_shape
from .fusion import Fusion

__all__ = ["MaxPool2D"]


class MaxPool2D(Layer):
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

    input_ndim = 3
    backward_fusions = (Fusion("maxpool2d_relu_backward", ("relu_output",), "_backward_relu"),)

    def __init__(self, size, stride=None):
        super().__init__()
        self.size = check_int(size, "size", minimum=1)
        self.stride = self.size if stride is None else check_int(stride, "stride", minimum=1)
        self._stride_arg = stride
        self._out = Workspace()
        self._arg = Workspace(np.int32)
        self._dx = Workspace()

    def fusion_tags(self):
        return ("maxpool2",) if self.size == 2 and self.stride == 2 else ()

    def _config(self):
        return {"size": self.size, "stride": self._stride_arg}

    def _describe(self):
        extra = f", stride={self.stride}" if self.stride != self.size else ""
        return f"MaxPool2D({self.size}{extra})"

    def output_shape(self, input_shape):
        shape = check_shape(input_shape)
        if len(shape) != 3:
            raise ValueError(f"MaxPool2D expects per-sample input (C, H, W) (X of shape (N, C, H, W)), got {shape}")
        C, H, W = shape
        if H < self.size or W < self.size:
            raise ValueError(f"MaxPool2D window {self.size}x{self.size} is larger than the input {H}x{W}")
        return (C, (H - self.size) // self.stride + 1, (W - self.size) // self.stride + 1)

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
