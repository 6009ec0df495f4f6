"""Stochastic gradient descent, as ``torch.optim.SGD``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import check_bool
from .optimizer import Optimizer, nonnegative, real

if TYPE_CHECKING:
    from ..parameter import Parameter

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum (``torch.optim.SGD`` semantics).

    Parameters
    ----------
    params : iterable of Parameter, or of parameter-group dicts (see ``Optimizer``)
    lr : float >= 0, default 1e-3 (torch's default)
    momentum : float >= 0, default 0
    dampening : float, default 0
    weight_decay : float >= 0, default 0 (L2 penalty added to the gradient)
    nesterov : bool, default False (requires momentum > 0 and dampening == 0)
    backend : {"mantissa", "numpy"}, keyword-only, default "mantissa"

    Update per parameter p with gradient g (torch/optim/sgd.py; Sutskever et al. 2013 for
    the momentum/Nesterov form): ``g' = g + weight_decay * p``; if momentum: ``b = g'`` on the
    first step, ``b = momentum * b + (1 - dampening) * g'`` afterwards, and
    ``g' = g' + momentum * b`` (nesterov) or ``g' = b``; then ``p -= lr * g'``. One fused
    in-place kernel per parameter (``engine.sgd_step``). State: ``"momentum_buffer"``.

    Raises ValueError with torch's messages for a negative lr / momentum / weight_decay and
    for nesterov without momentum or with dampening (in the constructor or in a group).
    """

    _state_arrays = ("momentum_buffer",)

    def __init__(
        self,
        params: Iterable[Parameter | dict[str, Any]],
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        backend: str = "mantissa",
    ) -> None:
        super().__init__(
            params,
            dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov),
            backend,
        )

    def _check_options(self, o, where):
        nesterov = o["nesterov"]
        check_bool(nesterov, f"{where}nesterov")
        out = dict(
            lr=nonnegative(o["lr"], where, "lr", "learning rate"),
            momentum=nonnegative(o["momentum"], where, "momentum", "momentum value"),
            dampening=real(o["dampening"], f"{where}dampening"),
            weight_decay=nonnegative(o["weight_decay"], where, "weight_decay", "weight_decay value"),
            nesterov=bool(nesterov),
        )
        if out["nesterov"] and (out["momentum"] <= 0 or out["dampening"] != 0):
            raise ValueError(f"{where}Nesterov momentum requires a momentum and zero dampening")
        return out

    def _update(self, p, st, o) -> None:
        buf = None
        first = False
        if o["momentum"] != 0.0:
            buf = st.get("momentum_buffer")
            if buf is None:
                buf = st["momentum_buffer"] = np.zeros_like(p.data)
                first = True
        self._be.sgd_step(
            p.data,
            p.grad,
            buf,
            o["lr"],
            o["momentum"],
            o["dampening"],
            o["weight_decay"],
            o["nesterov"],
            first,
        )
