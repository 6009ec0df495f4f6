"""Fully connected layer: ``Dense``."""

from __future__ import annotations

import numpy as np

from .._validation import check_int
from ..parameter import Parameter
from .base_layer import AffineLayer, check_shape, kaiming_uniform_default

__all__ = ["Dense"]


class Dense(AffineLayer):
    """Fully connected layer (as ``torch.nn.Linear``) with bias and an optional activation.

    Parameters
    ----------
    units : int >= 1
        Output features.
    act : None, "identity", "relu" or "leaky_relu", default None
    negative_slope : float >= 0, default 0.01
        The slope of ``act="leaky_relu"`` below 0 (torch's default; ignored otherwise).

    Input (N, in_features) float32 -> (N, units) = X @ weight.T + bias. Parameters:
    ``weight`` (units, in_features) (torch's layout) and ``bias`` (units,), torch's default
    initialization. Kernels: ``engine.dense_forward`` / ``dense_backward``. Raises ValueError
    for an input that is not 2-D (put ``Flatten()`` first).
    """

    input_ndim = 1

    def __init__(self, units: int, act: str | None = None, negative_slope: float = 0.01) -> None:
        self.units = check_int(units, "units", minimum=1)
        super().__init__(act, negative_slope)

    def _config(self):
        return {"units": self.units, **self._act_config()}

    def _describe(self) -> str:
        return f"Dense({self.units}{self._act_describe()})"

    def output_shape(self, input_shape):
        shape = check_shape(input_shape)
        if len(shape) != 1:
            raise ValueError(
                f"Dense expects 2-D input (N, features); put Flatten() before it "
                f"(got per-sample shape {shape})"
            )
        return (self.units,)

    def _param_shapes(self, input_shape):
        return {"weight": (self.units, input_shape[0]), "bias": (self.units,)}

    def _build(self, input_shape, rng) -> None:
        w, b = kaiming_uniform_default(rng, (self.units, input_shape[0]), input_shape[0])
        self.weight = Parameter(w, name="weight")
        self.bias = Parameter(b, name="bias")

    def _forward(self, X):
        out = self._backend().dense_forward(
            X,
            self.weight.data,
            self.bias.data,
            out=self._out.get((X.shape[0], self.units)),
            **self._act_kwargs(),
        )
        self._x, self._y = X, out
        return out

    def _backward_preact(self, dY, need_dx):
        """The backward from dY = d loss / d(pre-activation), the activation's already applied."""
        trainable = self._trainable()
        if not need_dx and not trainable:
            return None
        dx = self._dx.get(self._x.shape) if need_dx else None
        if not trainable:  # frozen: dx = dY @ W only, no weight gradient
            return np.matmul(dY, self.weight.data, out=dx)
        dw, db, acc = self._grad_targets()
        dx, _, _ = self._backend().dense_backward(
            self._x, self.weight.data, dY, dx=dx, dw=dw, db=db, need_dx=need_dx, accumulate=acc
        )
        self._grads_done(dw, db)
        return dx
