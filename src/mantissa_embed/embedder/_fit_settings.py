"""``FitSettings``: the options of one ``Embedder.fit`` call, checked once, in one frozen object.

``Embedder.fit`` builds it from its arguments before anything else runs (after ``X`` and ``y``
are checked); the plan (``_fitting``), the loop (``_training``), the checkpoint state that
``save`` writes and ``resume=True`` compares against, and the profile read it, and none of them
checks an option again.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import InitVar, dataclass
from typing import Any

import numpy as np

from .._validation import check_bool, check_float, check_int
from ..datasets.image_dataset import ImageDataset
from ._fit_data import check_validation_data
from ._recipe import AUGMENTS, MAX_BATCH_SIZE, make_schedule

__all__ = ["METRICS", "FitSettings"]

#: the validation metrics ``fit(..., metrics=...)`` accepts (higher is better)
METRICS = ("precision_at_1", "r_precision", "mean_average_precision_at_r")


@dataclass(frozen=True)
class FitSettings:
    """The options of ``Embedder.fit``, checked and normalized at construction (``fit``'s
    docstring is the user's documentation of each).

    Every invalid value raises the TypeError / ValueError ``fit`` raises, naming the argument.
    The defaults are ``fit``'s.

    Attributes
    ----------
    epochs : int >= 1, default 1
        The epochs of the fit (a resumed fit: of the whole run, as checkpointed).
    batch_size : int, 2 <= batch_size <= ``MAX_BATCH_SIZE`` (65536), default 64
        Images per batch; the P x K layout is chosen for it by ``_recipe.choose_m``.
    lr : float > 0 or None, default None
        The trunk's learning rate as given; None: the optimizer's default
        (``DEFAULTS["lr"]``), resolved by the fit with the optimizer it runs.
    verbose : bool, default False
        A tqdm bar per epoch.
    validation : None, float in (0, 1), (X_val, y_val) or ImageDataset, default None
        None: no validation. A float: the fraction of the classes held out. A pair: checked
        against ``X``'s per-sample shape and stored converted (float32 images or feature
        vectors, int64 labels). A dataset: checked likewise, stored as is.
    metrics : tuple of str, default ("precision_at_1", "mean_average_precision_at_r")
        Validation metrics among ``METRICS`` (one name is taken as a 1-tuple); the first
        decides ``restore_best`` and ``early_stopping``.
    restore_best : bool, default False
        End with the weights of the best epoch (needs ``validation``).
    early_stopping : int >= 1 or None, default None
        Stop after that many epochs without a better first metric (needs ``validation``).
    callbacks : tuple, default ()
        Objects with ``on_epoch_end(embedder, epoch, history)`` or such callables (one given
        alone is taken as a 1-tuple; None as ()).
    callback : callable or None, default None
        ``callback(epoch, mean_loss)`` after every epoch.
    augment : str, callable or None, default "default"
        The batch augmentation of array inputs: ``"default"`` (``DEFAULTS["augment"]``), a
        preset of ``_recipe.AUGMENTS``, None or a callable ``t(X_batch, rng)``; built by
        ``_recipe.make_augment`` at every fit. Read for ``X``: feature vectors turn
        ``"default"`` into None (a preset is a ValueError: presets transform images); a dataset
        accepts only ``"default"`` and None, stored as None (its ``train_transform`` augments).
    schedule : schedule object or None, default "default"
        The learning-rate schedule, stored built (``_recipe.make_schedule``: ``"default"`` is
        ``DEFAULTS["schedule"]``, a name of ``optim.make_schedule``, or an object with
        ``factor(step, total_steps)`` kept as is); None: a constant lr.
    resume : bool, default False
        Continue the checkpointed fit (``Embedder.train_state_``).
    profile : bool, default False
        Time the fit into ``Embedder.profile_``.
    X : init-only, default None
        ``fit``'s checked ``X`` (an array or an ImageDataset), not stored: it decides what
        ``augment`` means and the shape ``validation`` data must have. None: the options
        alone are checked.
    """

    epochs: int = 1
    batch_size: int = 64
    lr: float | None = None
    verbose: bool = False
    validation: Any = None
    metrics: Sequence[str] = ("precision_at_1", "mean_average_precision_at_r")
    restore_best: bool = False
    early_stopping: int | None = None
    callbacks: Sequence[Any] = ()
    callback: Callable[[int, float], Any] | None = None
    augment: str | Callable[..., Any] | None = "default"
    schedule: Any = "default"
    resume: bool = False
    profile: bool = False
    X: InitVar[Any] = None

    def __post_init__(self, X: Any) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)  # normalizing at construction of a frozen object

        put("epochs", check_int(self.epochs, "epochs", minimum=1))
        batch_size = check_int(self.batch_size, "batch_size", minimum=2)
        if batch_size > MAX_BATCH_SIZE:
            raise ValueError(f"batch_size must be <= {MAX_BATCH_SIZE}, got {batch_size}")
        put("batch_size", batch_size)
        put("verbose", check_bool(self.verbose, "verbose"))
        if self.callback is not None and not callable(self.callback):
            raise TypeError(
                f"callback must be callable(epoch, loss) or None, got {type(self.callback).__name__}"
            )
        put("profile", check_bool(self.profile, "profile"))
        put("metrics", _check_metrics(self.metrics))
        put("callbacks", _check_callbacks(self.callbacks))
        if self.early_stopping is not None:
            put("early_stopping", check_int(self.early_stopping, "early_stopping", minimum=1))
        put("restore_best", check_bool(self.restore_best, "restore_best"))
        put("resume", check_bool(self.resume, "resume"))
        if self.lr is not None:
            put("lr", check_float(self.lr, "lr", minimum=0.0, strict=True))
        put("augment", _check_augment(self.augment, X))
        put("schedule", make_schedule(self.schedule))
        if (self.restore_best or self.early_stopping) and self.validation is None:
            raise ValueError("restore_best and early_stopping need validation data (validation=...)")
        put("validation", _check_validation(self.validation, X))

    @property
    def validation_kind(self) -> str | None:
        """What ``validation`` is, as the checkpoint records it: None, ``"fraction"`` (of the
        classes, held out by the fit) or ``"given"`` (a pair or a dataset)."""
        if self.validation is None:
            return None
        return "fraction" if isinstance(self.validation, float) else "given"

    def checkpointed(self) -> dict[str, int]:
        """The options a checkpoint records and ``resume=True`` must be given again:
        ``{"epochs", "batch_size"}`` (the checkpoint state's keys)."""
        return {"epochs": self.epochs, "batch_size": self.batch_size}


def _check_metrics(metrics: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(metrics, str):
        metrics = (metrics,)
    try:
        metrics = tuple(metrics)
    except TypeError:
        raise TypeError(f"metrics must be a sequence of metric names, got {type(metrics).__name__}") from None
    if not metrics:
        raise ValueError("metrics must name at least one metric")
    for m in metrics:
        if m not in METRICS:
            raise ValueError(f"metrics must be among {METRICS}, got {m!r}")
    return metrics


def _check_callbacks(callbacks: Any) -> tuple[Any, ...]:
    if callbacks is None:
        return ()
    if hasattr(callbacks, "on_epoch_end") or callable(callbacks):
        callbacks = (callbacks,)
    try:
        callbacks = tuple(callbacks)
    except TypeError:
        raise TypeError(
            f"callbacks must be a sequence of callbacks, got {type(callbacks).__name__}"
        ) from None
    for i, c in enumerate(callbacks):
        if not (callable(getattr(c, "on_epoch_end", None)) or callable(c)):
            raise TypeError(
                f"callbacks[{i}] must have on_epoch_end(embedder, epoch, history) or be callable "
                f"with those arguments, got {type(c).__name__}"
            )
    return callbacks


def _check_augment(augment: Any, X: Any) -> str | Callable[..., Any] | None:
    """``augment`` for the input ``X`` (None: images): see ``FitSettings.augment``."""
    if isinstance(X, ImageDataset):
        if not (augment is None or (isinstance(augment, str) and augment == "default")):
            raise ValueError(
                "augment applies to array inputs; X is a dataset, whose train_transform "
                "augments its images (ImageFolder / ImageCSV train_transform=...): pass "
                'augment="default" or None'
            )
        return None
    if X is not None and X.ndim == 2 and isinstance(augment, str):  # the presets transform images
        if augment in AUGMENTS:
            raise ValueError(
                f"augment={augment!r} transforms images; X holds feature vectors (N, F): pass "
                'augment=None, "default" (no augmentation for feature vectors) or a '
                "callable(X, rng)"
            )
        if augment == "default":
            return None
    if isinstance(augment, str):
        if augment != "default" and augment not in AUGMENTS:
            raise ValueError(
                f"augment must be one of {('default',) + AUGMENTS}, None or a callable(X, rng), "
                f"got {augment!r}"
            )
        return augment
    if augment is not None and not callable(augment):
        raise TypeError(f"augment must be a string, None or a callable(X, rng), got {type(augment).__name__}")
    return augment


def _check_validation(validation: Any, X: Any) -> Any:
    """``validation`` checked: a fraction in (0, 1) as a float, a pair or a dataset (checked
    against ``X`` when given), or None."""
    if validation is None:
        return None
    if isinstance(validation, numbers.Real) and not isinstance(validation, (bool, np.bool_)):
        frac = check_float(validation, "validation")
        if not 0.0 < frac < 1.0:
            raise ValueError(f"validation must be in (0, 1) as a fraction of the classes, got {frac}")
        return frac
    if isinstance(validation, ImageDataset) or (
        isinstance(validation, (tuple, list)) and len(validation) == 2
    ):
        return validation if X is None else check_validation_data(validation, X)
    raise TypeError(
        "validation must be None, a fraction of the classes in (0, 1), a pair (X_val, y_val) or "
        f"an ImageDataset, got {type(validation).__name__}"
    )
