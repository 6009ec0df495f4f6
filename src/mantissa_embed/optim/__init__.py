"""Optimizers over ``Parameter`` objects and learning-rate
schedules.

Optimizers (``torch.optim`` names, defaults and update rules; single-tensor code paths, no
``maximize`` / ``amsgrad`` / ``foreach``): ``SGD``, ``Adam``, ``AdamW``. Each
takes parameters or parameter groups (dicts with their own ``lr``, ``weight_decay``, ...),
exposes ``param_groups``, and updates each parameter in one fused, in-place backend kernel
(``engine.sgd_step`` / ``adam_step``, or their numpy twins with ``backend="numpy"``).
``state_dict()`` / ``load_state_dict()`` hold only numpy arrays and JSON-able scalars;
``flatten_state_dict`` / ``unflatten_state_dict`` turn them into ``.npz`` entries.

Schedules, stepped per batch: ``ConstantSchedule``, ``CosineSchedule``,
``StepSchedule``: ``schedule.factor(step, total_steps)`` is a pure function and
``schedule.apply(optimizer, step, total_steps)`` sets each group's lr to its
``initial_lr`` times it. ``make_schedule`` takes a name, a config dict or a schedule;
``get_config()`` / ``schedule_from_config`` round-trip.
"""

from .adam import Adam
from .adamw import AdamW
from .constant_schedule import ConstantSchedule
from .cosine_schedule import CosineSchedule
from .optimizer import Optimizer
from .schedule import Schedule, make_schedule, schedule_from_config
from .sgd import SGD
from .state import flatten_state_dict, unflatten_state_dict
from .step_schedule import StepSchedule

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "Schedule",
    "ConstantSchedule",
    "CosineSchedule",
    "StepSchedule",
    "make_schedule",
    "schedule_from_config",
    "flatten_state_dict",
    "unflatten_state_dict",
]
