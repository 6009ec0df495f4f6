"""Leaky rectified linear unit: ``LeakyReLU``."""

from __future__ import annotations

from .._checks.activations import check_negative_slope
from .._workspace import Workspace
from .base_layer import Layer, check_shape

__all__ = ["LeakyReLU"]


class LeakyReLU(Layer):
    """Element-wise ``x`` for ``x >= 0`` and ``negative_slope * x`` below, any shape, as
    ``torch.nn.LeakyReLU`` (Maas et al. 2013, "Rectifier Nonlinearities Improve Neural Network
    Acoustic Models", ICML workshop).

    Parameters
    ----------
    negative_slope : float >= 0, default 0.01 (torch's)
        A negative slope is refused (ValueError): the backward reads the sign of the output.

    The backward passes dY where the output is > 0 and ``negative_slope * dY`` elsewhere
    (torch's gradient at 0). Kernels: ``engine.leaky_relu_forward`` / ``leaky_relu_backward``;
    ``Conv2D`` and ``Dense`` take ``act="leaky_relu"`` to apply it in their own kernel.
    """

    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__()
        self.negative_slope = check_negative_slope(negative_slope)
        self._out = Workspace()
        self._dx = Workspace()

    def _config(self):
        return {"negative_slope": self.negative_slope}

    def output_shape(self, input_shape):
        return check_shape(input_shape)

    def _forward(self, X):
        out = self._backend().leaky_relu_forward(X, self.negative_slope, out=self._out.get(X.shape))
        self._y = out
        return out

    def _backward(self, dY, need_dx):
        if not need_dx:
            return None
        return self._backend().leaky_relu_backward(
            dY, self._y, self.negative_slope, dx=self._dx.get(dY.shape)
        )
