"""2-D max pooling: ``MaxPool2D``."""

from __future__ import annotations

import numpy as np

from .._checks.pool import check_pool_pad
from .._workspace import Workspace
from ._pool_base import _Pool2D
from .base_layer import check_shape
from .fusion import Fusion

__all__ = ["MaxPool2D"]


class MaxPool2D(_Pool2D):
    """2-D max pooling, as ``torch.nn.MaxPool2d(size, stride, padding=pad)`` (floor mode).

    Parameters
    ----------
    size : int >= 1
        Window height and width.
    stride : int >= 1 or None, default None (= ``size``)
    pad : int >= 0, default 0
        Implicit padding on every side, with torch's semantics: padded positions hold -inf and
        never win a maximum. ``2 * pad <= size`` (torch's rule; ValueError otherwise). ResNet's
        stem pooling is ``MaxPool2D(3, stride=2, pad=1)``.

    Input (N, C, H, W) float32 -> (N, C, (H + 2*pad - size)//stride + 1, (W + 2*pad - size)//stride + 1).
    The backward routes each gradient to the argmax of its window (int32 offsets into the
    input plane kept by the forward; ties: the first maximum); after a layer whose output is a
    ReLU it applies that ReLU's mask in the same call (``maxpool2d_relu_backward``). With
    ``pad > 0`` the taps outside the plane never win (as torch's -inf padding). Configs saved before
    ``pad`` existed load as ``pad=0``. Raises TypeError/ValueError for bad arguments and a
    window larger than the (padded) input.
    """

    backward_fusions = (Fusion("maxpool2d_relu_backward", ("relu_output",), "_backward_relu"),)

    def __init__(self, size, stride: int | tuple[int, int] | None = None, pad: int = 0) -> None:
        super().__init__(size, stride)
        self.pad = check_pool_pad(pad, self.size)
        self._out = Workspace()
        self._arg = Workspace(np.int32)
        self._dx = Workspace()

    def fusion_tags(self):
        return ("maxpool2",) if self.size == 2 and self.stride == 2 and self.pad == 0 else ()

    def _config(self):
        cfg = super()._config()
        if self.pad:  # pad=0 is left out: configs stay as they were before pad existed
            cfg["pad"] = self.pad
        return cfg

    def _describe(self) -> str:
        base = super()._describe()
        return base[:-1] + f", pad={self.pad})" if self.pad else base

    def output_shape(self, input_shape):
        if self.pad == 0:
            return super().output_shape(input_shape)
        shape = check_shape(input_shape)
        if len(shape) != 3:
            raise ValueError(
                f"MaxPool2D expects per-sample input (C, H, W) (X of shape (N, C, H, W)), got {shape}"
            )
        C, H, W = shape
        p, k, s = self.pad, self.size, self.stride
        if H + 2 * p < k or W + 2 * p < k:
            raise ValueError(f"MaxPool2D window {k}x{k} is larger than the input {H}x{W} padded by {p}")
        return (C, (H + 2 * p - k) // s + 1, (W + 2 * p - k) // s + 1)

    def _forward(self, X):
        oshape = (X.shape[0],) + self._out_shape
        kw = {"pad": self.pad} if self.pad else {}
        out, arg = self._backend().maxpool2d_forward(
            X, self.size, self.stride, out=self._out.get(oshape), argmax=self._arg.get(oshape), **kw
        )
        self._x_shape, self._y, self._argmax = X.shape, out, arg
        self._x = None
        return out

    def _backward(self, dY, need_dx):
        if not need_dx:
            return None
        return self._backend().maxpool2d_backward(
            dY, self._argmax, self._x_shape, dx=self._dx.get(self._x_shape)
        )

    def _backward_relu(self, dY):
        """``backward(dY)`` followed by the backward of the ReLU whose output was pooled, in one
        kernel call: returns d loss / d(that layer's pre-activation), a layer-owned buffer.
        Exact (the mask at each argmax is ``y > 0``)."""
        dY = self._check_dy(dY)
        return self._backend().maxpool2d_relu_backward(
            dY, self._argmax, self._y, self._x_shape, dx=self._dx.get(self._x_shape)
        )
