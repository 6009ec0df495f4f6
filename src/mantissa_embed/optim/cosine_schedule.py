"""Cosine decay with an optional linear warmup, stepped per batch."""

from __future__ import annotations

import math

from .._validation import check_float, check_int
from .schedule import Schedule, check_step

__all__ = ["CosineSchedule"]


class CosineSchedule(Schedule):
    """Linear warmup from 0, then a half cosine from 1 down to ``min_factor`` at the last step
    (Loshchilov & Hutter 2017, "SGDR", ICLR, without restarts; warmup as Goyal et al. 2017).

    Parameters
    ----------
    warmup : int >= 0, default 0
        Steps of linear warmup: ``factor = step / warmup`` for ``step < warmup`` (0 at step 0).
    min_factor : float in [0, 1], default 0.0
        The factor at the last step (``total_steps - 1``) and after it.

    After the warmup, with ``T = total_steps - 1 - warmup`` and ``t = min(step - warmup, T)``:
    ``factor = min_factor + (1 - min_factor) * (1 + cos(pi * t / T)) / 2`` (1 when ``T <= 0``).
    torch equivalent, stepped once per batch: ``CosineAnnealingLR(optimizer, T_max=T,
    eta_min=min_factor * lr)`` when warmup is 0; with a warmup, ``SequentialLR(optimizer,
    [LambdaLR(optimizer, lambda k: k / warmup), CosineAnnealingLR(...)], milestones=[warmup])``.
    ``make_schedule("cosine")`` is ``CosineSchedule()``.

    Raises TypeError/ValueError naming ``warmup`` / ``min_factor``; ``factor`` raises them for a
    negative or non-int ``step`` or ``total_steps < 1``.
    """

    name = "cosine"

    def __init__(self, warmup: int = 0, min_factor: float = 0.0) -> None:
        self.warmup = check_int(warmup, "warmup", minimum=0)
        self.min_factor = check_float(min_factor, "min_factor", minimum=0.0)
        if self.min_factor > 1.0:
            raise ValueError(f"min_factor must be <= 1, got {self.min_factor}")

    def factor(self, step: int, total_steps: int) -> float:
        step, total_steps = check_step(step, total_steps)
        if step < self.warmup:
            return step / self.warmup
        span = total_steps - 1 - self.warmup
        if span <= 0:
            return 1.0
        t = min(step - self.warmup, span)
        return self.min_factor + (1.0 - self.min_factor) * (1.0 + math.cos(math.pi * t / span)) / 2.0

    def _config(self):
        return {"warmup": self.warmup, "min_factor": self.min_factor}
