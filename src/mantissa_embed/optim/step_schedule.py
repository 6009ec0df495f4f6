"""Step decay: the learning rate times ``gamma`` every ``step_size`` steps."""

from __future__ import annotations

import math

from .._validation import check_float, check_int
from .schedule import Schedule, check_step

__all__ = ["StepSchedule"]


class StepSchedule(Schedule):
    """``factor = gamma ** (step // step_size)``, counting optimizer steps (batches), not
    epochs: ``torch.optim.lr_scheduler.StepLR(optimizer, step_size, gamma)`` stepped once per
    batch.

    Parameters
    ----------
    step_size : int >= 1 or None, default None
        Steps between decays. None (a departure: torch requires it) means
        ``ceil(total_steps / 3)``, three plateaus over the run; ``make_schedule("step")`` is
        ``StepSchedule()``.
    gamma : float > 0, default 0.1

    Raises TypeError/ValueError naming ``step_size`` / ``gamma``; ``factor`` raises them for a
    negative or non-int ``step`` or ``total_steps < 1``.
    """

    name = "step"

    def __init__(self, step_size: int | None = None, gamma: float = 0.1) -> None:
        self.step_size = None if step_size is None else check_int(step_size, "step_size", minimum=1)
        self.gamma = check_float(gamma, "gamma", 0.0, strict=True)

    def factor(self, step: int, total_steps: int) -> float:
        step, total_steps = check_step(step, total_steps)
        size = self.step_size if self.step_size is not None else math.ceil(total_steps / 3)
        return float(self.gamma ** (step // size))

    def _config(self):
        return {"step_size": self.step_size, "gamma": self.gamma}
