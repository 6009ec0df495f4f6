"""The constant schedule: every step at the base learning rate."""

from __future__ import annotations

from .schedule import Schedule, check_step

__all__ = ["ConstantSchedule"]


class ConstantSchedule(Schedule):
    """Factor 1 at every step: the base learning rate throughout (torch: no scheduler, or
    ``LambdaLR(optimizer, lambda k: 1.0)``). ``make_schedule("constant")``.

    ``factor(step, total_steps)`` raises ValueError/TypeError for a negative or non-int step,
    or total_steps < 1.
    """

    name = "constant"

    def factor(self, step: int, total_steps: int) -> float:
        check_step(step, total_steps)
        return 1.0
