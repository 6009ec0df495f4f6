"""AdamW, as ``torch.optim.AdamW``: Adam with decoupled weight decay."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .adam import Adam

if TYPE_CHECKING:
    from ..parameter import Parameter

__all__ = ["AdamW"]


class AdamW(Adam):
    """AdamW (Loshchilov & Hutter 2019, "Decoupled Weight Decay Regularization", ICLR), with
    ``torch.optim.AdamW`` semantics (amsgrad=False).

    Parameters and state as ``Adam``, but for the default
    ``weight_decay=1e-2`` (torch's), which is decoupled from the gradient.

    Update at step t (1, 2, ...): ``p *= 1 - lr * weight_decay`` (decoupled: the gradient is
    not touched), then the Adam update with ``g' = g``: ``m = beta1*m + (1-beta1)*g``,
    ``v = beta2*v + (1-beta2)*g^2``, ``p -= lr/(1-beta1^t) * m / (sqrt(v)/sqrt(1-beta2^t) + eps)``;
    one fused in-place kernel per parameter (``engine.adam_step(..., decoupled=True)``).
    State as ``Adam``. Raises ValueError with torch's messages for out-of-range arguments.
    """

    _decoupled = True

    def __init__(
        self,
        params: Iterable[Parameter | dict[str, Any]],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        *,
        backend: str = "mantissa",
    ) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, backend=backend)
