"""Adam, as ``torch.optim.Adam``; ``AdamW`` is its decoupled form."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from .optimizer import Optimizer, nonnegative, real

if TYPE_CHECKING:
    from ..parameter import Parameter

__all__ = ["Adam"]


def _betas(betas, where):
    if isinstance(betas, (str, bytes)) or not isinstance(betas, Iterable):
        raise TypeError(f"{where}betas must be a pair of floats, got {type(betas).__name__}")
    betas = tuple(betas)
    if len(betas) != 2:
        raise ValueError(f"{where}betas must be a pair of floats, got {betas!r}")
    b = real(betas[0], f"{where}betas[0]"), real(betas[1], f"{where}betas[1]")
    for i, bi in enumerate(b):
        if not 0.0 <= bi < 1.0:
            raise ValueError(f"{where}Invalid beta parameter at index {i}: {bi}")
    return b


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015, "Adam: A Method for Stochastic Optimization", ICLR), with
    ``torch.optim.Adam`` semantics (amsgrad=False; weight decay as an L2 term added to the
    gradient, not decoupled as in ``AdamW``).

    Parameters
    ----------
    params : iterable of Parameter, or of parameter-group dicts (see ``Optimizer``)
    lr : float >= 0, default 1e-3
    betas : (float, float) in [0, 1), default (0.9, 0.999)
    eps : float >= 0, default 1e-8
    weight_decay : float >= 0, default 0
    backend : {"mantissa", "numpy"}, keyword-only, default "mantissa"

    Update at step t (1, 2, ...): ``g' = g + weight_decay * p``; ``m = beta1*m + (1-beta1)*g'``;
    ``v = beta2*v + (1-beta2)*g'^2``; ``p -= lr/(1-beta1^t) * m / (sqrt(v)/sqrt(1-beta2^t) + eps)``,
    one fused in-place kernel per parameter (``engine.adam_step``). State per parameter:
    ``"step"`` (int), ``"exp_avg"``, ``"exp_avg_sq"``.
    Raises ValueError with torch's messages for out-of-range arguments.
    """

    _state_arrays = ("exp_avg", "exp_avg_sq")
    _state_scalars = ("step",)
    _decoupled = False

    def __init__(
        self,
        params: Iterable[Parameter | dict[str, Any]],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        *,
        backend: str = "mantissa",
    ) -> None:
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay), backend)

    def _check_options(self, o, where):
        return dict(
            lr=nonnegative(o["lr"], where, "lr", "learning rate"),
            betas=_betas(o["betas"], where),
            eps=nonnegative(o["eps"], where, "eps", "epsilon value"),
            weight_decay=nonnegative(o["weight_decay"], where, "weight_decay", "weight_decay value"),
        )

    def _update(self, p, st, o) -> None:
        if "step" not in st:
            st["step"] = 0
            st["exp_avg"] = np.zeros_like(p.data)
            st["exp_avg_sq"] = np.zeros_like(p.data)
        st["step"] += 1
        b1, b2 = o["betas"]
        self._be.adam_step(
            p.data,
            p.grad,
            st["exp_avg"],
            st["exp_avg_sq"],
            st["step"],
            o["lr"],
            b1,
            b2,
            o["eps"],
            o["weight_decay"],
            self._decoupled,
        )

    def _complete_state(self, st, where):
        if st and set(st) != {"step", "exp_avg", "exp_avg_sq"}:
            raise ValueError(f"{where} must hold 'step', 'exp_avg' and 'exp_avg_sq', got {sorted(st)}")
        if st and st["step"] < 1:
            raise ValueError(f"{where}['step'] must be >= 1 when the moments are saved, got {st['step']}")
        return st
