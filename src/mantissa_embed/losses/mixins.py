"""WeightRegularizerMixin (pytorch-metric-learning ``losses/mixins.py``)."""

from __future__ import annotations

import numpy as np

from .._validation import check_array, check_float


def _reg64(reg, x):
    """(value, grad) of a regularizer at the float64 rows x."""
    if hasattr(reg, "forward64"):
        v, g = reg.forward64(x)
        return float(v), np.asarray(g, dtype=np.float64)
    out = reg(x.astype(np.float32))
    g = check_array(out.grad, "weight_regularizer(...).grad", ndim=2, finite=False)
    if g.shape != x.shape:
        raise ValueError(f"weight_regularizer returned a gradient of shape {g.shape}, expected {x.shape}")
    return float(out.loss), g.astype(np.float64)


class WeightRegularizerMixin:
    """``weight_regularizer`` / ``weight_reg_weight`` (PML's mixin): the regularizer sees the (K, D)
    weight rows; its loss times ``weight_reg_weight`` is the term ``weight_reg_loss``.
    """

    def _init_weight_regularizer(self, weight_regularizer, weight_reg_weight):
        if weight_regularizer is not None and not callable(weight_regularizer):
            raise TypeError(
                "weight_regularizer must be callable (weights -> object with .loss and .grad), "
                f"got {type(weight_regularizer).__name__}"
            )
        self.weight_regularizer = weight_regularizer
        self.weight_reg_weight = check_float(weight_reg_weight, "weight_reg_weight")

    def weight_regularization64(self, rows):
        """(weight_reg_weight * reg(rows), its gradient wrt rows), float64; (0, zeros) without one."""
        if self.weight_regularizer is None:
            return 0.0, np.zeros_like(rows)
        v, g = _reg64(self.weight_regularizer, rows)
        w = self.weight_reg_weight
        return w * v, w * g

    def regularization_loss_names(self):
        return ["weight_reg_loss"] if self.weight_regularizer is not None else []
