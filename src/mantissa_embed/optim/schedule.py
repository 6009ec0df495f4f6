"""Learning-rate schedules stepped per batch: the ``Schedule`` contract, the factory
``make_schedule`` and the config round trip ``schedule_from_config``."""

from __future__ import annotations

import inspect
from typing import Any

from .._validation import check_int

__all__ = ["Schedule", "make_schedule", "schedule_from_config"]

_REGISTRY: dict[str, type[Schedule]] = {}


def check_step(step: int, total_steps: int) -> tuple[int, int]:
    """``(step, total_steps)`` as ints: step >= 0 (0-based), total_steps >= 1."""
    return check_int(step, "step", minimum=0), check_int(total_steps, "total_steps", minimum=1)


class Schedule:
    """A learning-rate schedule: a pure multiplier of each group's base learning rate.

    ``factor(step, total_steps) -> float`` is the factor for optimizer step ``step``
    (0-based: the first batch of the run is step 0) of a run of ``total_steps`` steps. It
    depends on nothing else, so resuming at step k only needs k. It equals the lr sequence
    of the torch scheduler named in each subclass when that scheduler is stepped once after
    every ``optimizer.step()``.

    A subclass sets ``name`` (the string ``make_schedule`` accepts; it registers itself)
    and implements ``factor`` and ``_config`` (its constructor's keyword arguments).
    """

    name: str | None = None

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name and "name" in cls.__dict__:
            _REGISTRY[cls.name] = cls

    def factor(self, step: int, total_steps: int) -> float:
        raise NotImplementedError

    def _config(self):
        return {}

    def get_config(self) -> dict[str, Any]:
        """``{"name": ..., <constructor arguments>}``, JSON-able; ``schedule_from_config``
        rebuilds the schedule from it."""
        return {"name": self.name, **self._config()}

    def apply(self, optimizer: Any, step: int, total_steps: int) -> list[float]:
        """Set each group's ``lr`` to its base lr times ``factor(step, total_steps)``; return
        the new lrs (one per group).

        The base lr is ``group["initial_lr"]``, set from the group's ``lr`` the first time (as
        torch's schedulers do), and saved by ``optimizer.state_dict()``. Call it before the
        optimizer step ``step``. Raises TypeError for an object without ``param_groups``.
        """
        groups = getattr(optimizer, "param_groups", None)
        if not isinstance(groups, list) or not all(isinstance(g, dict) and "lr" in g for g in groups):
            raise TypeError("optimizer must have param_groups, a list of dicts holding 'lr'")
        f = self.factor(step, total_steps)
        for group in groups:
            group.setdefault("initial_lr", group["lr"])
            group["lr"] = group["initial_lr"] * f
        return [group["lr"] for group in groups]

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.get_config() == other.get_config()

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(self._config().items()))))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._config().items())
        return f"{type(self).__name__}({args})"


def _names():
    return ", ".join(repr(n) for n in sorted(_REGISTRY))


def schedule_from_config(config: dict[str, Any]) -> Schedule:
    """The schedule a ``Schedule.get_config`` dict describes.

    Raises TypeError for a non-dict, ValueError naming ``schedule`` for a missing or unknown
    name or an argument the schedule does not take.
    """
    if not isinstance(config, dict):
        raise TypeError(f"schedule config must be a dict, got {type(config).__name__}")
    name = config.get("name")
    if name not in _REGISTRY:
        raise ValueError(f"schedule must be one of {_names()}, got {name!r}")
    cls = _REGISTRY[name]
    kwargs = {k: v for k, v in config.items() if k != "name"}
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self"}
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        raise ValueError(f"schedule {name!r} does not take {unknown}; it takes {sorted(accepted)}")
    return cls(**kwargs)


def make_schedule(spec: str | dict[str, Any] | Schedule | None = None) -> Schedule:
    """A schedule from a user argument: a ``Schedule`` (returned as is), a name
    (``"constant"``, ``"cosine"``, ``"step"``: that schedule with its defaults), a config dict
    (``schedule_from_config``) or None (``ConstantSchedule()``).

    Raises ValueError naming ``schedule`` for an unknown name, TypeError for another type.
    """
    if isinstance(spec, Schedule):
        return spec
    if spec is None:
        return _REGISTRY["constant"]()
    if isinstance(spec, str):
        if spec not in _REGISTRY:
            raise ValueError(f"schedule must be one of {_names()} or a Schedule, got {spec!r}")
        return _REGISTRY[spec]()
    if isinstance(spec, dict):
        return schedule_from_config(spec)
    raise TypeError(f"schedule must be a Schedule, a name or a config dict, got {type(spec).__name__}")
