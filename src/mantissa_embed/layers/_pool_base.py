"""The window arguments, config and output shape shared by the pooling layers."""

from __future__ import annotations

from .._validation import check_int
from .base_layer import Layer, check_shape

__all__ = ["_Pool2D"]


class _Pool2D(Layer):
    """A ``size x size`` window moved by ``stride`` (None: ``size``), no padding, floor mode."""

    input_ndim = 3

    def __init__(self, size, stride: int | tuple[int, int] | None = None) -> None:
        super().__init__()
        self.size = check_int(size, "size", minimum=1)
        self.stride = self.size if stride is None else check_int(stride, "stride", minimum=1)
        self._stride_arg = stride

    def _config(self):
        return {"size": self.size, "stride": self._stride_arg}

    def _describe(self) -> str:
        extra = f", stride={self.stride}" if self.stride != self.size else ""
        return f"{type(self).__name__}({self.size}{extra})"

    def output_shape(self, input_shape):
        shape = check_shape(input_shape)
        name = type(self).__name__
        if len(shape) != 3:
            raise ValueError(
                f"{name} expects per-sample input (C, H, W) (X of shape (N, C, H, W)), got {shape}"
            )
        C, H, W = shape
        if H < self.size or W < self.size:
            raise ValueError(f"{name} window {self.size}x{self.size} is larger than the input {H}x{W}")
        return (C, (H - self.size) // self.stride + 1, (W - self.size) // self.stride + 1)
