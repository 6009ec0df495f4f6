"""The body of ``Embedder.fit``: the run plan
(validation split, parameter groups, schedule, augmentation), the work at every epoch end
(validation metrics, callbacks, early stopping, the checkpoint state) and resuming.

The loop itself is ``mantissa_embed._training.train_epochs``.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

import numpy as np

from . import _recipe
from ._inference import labels_for
from ._training import (ArrayBatches, DeferredInterrupt, EpochCallback, FileBatches, HookList, Profiler, ProgressBar,
                        ThreadAdapter, TrainingHook, train_epochs)
from ._validation import check_array, check_bool, check_float, check_int, check_labels
from .datasets.image_dataset import ImageDataset
from .evaluation.retrieval import retrieval_metrics
from .samplers import MPerClassSampler

__all__ = ["METRICS", "INPUT_NDIMS", "check_inputs", "sample_shape", "take_rows", "check_dataset", "check_fit_data",
           "split_validation", "check_lr_groups", "param_groups", "fit"]

#: the validation metrics ``fit(..., metrics=...)`` accepts (higher is better)
METRICS = ("precision_at_1", "r_precision", "mean_average_precision_at_r")


#: the ranks of ``fit``'s ``X``: 4 for images (N, C, H, W), 2 for feature vectors (N, F)
INPUT_NDIMS = (4, 2)


def check_inputs(X: object, name: str, input_shape: tuple[int, ...] | None = None) -> np.ndarray:
    """``X`` as float32, checked as ``fit``'s input: numeric, non-empty, finite, 4-D images
    (N, C, H, W) or 2-D feature vectors (N, F), and of per-sample shape ``input_shape`` when
    given (the trunk's, once built). TypeError / ValueError naming ``name``."""
    X = check_array(X, name, allow_empty=False)
    if input_shape is None and X.ndim not in INPUT_NDIMS:
        raise ValueError(f"{name} must be 4-D images (N, C, H, W) or 2-D feature vectors (N, F), "
                         f"got {X.ndim}-D shape {X.shape}")
    if input_shape is not None and tuple(X.shape[1:]) != tuple(input_shape):
        kind = "feature vectors" if len(input_shape) == 1 else "images"
        raise ValueError(f"{name} must have shape (N, {', '.join(map(str, input_shape))}) ({kind}: the trunk was "
                         f"built for that input), got {X.shape}")
    return X


def sample_shape(X) -> tuple[int, ...]:
    """The per-sample shape of ``fit``'s input: an array's ``shape[1:]``, a dataset's
    ``image_shape``."""
    return tuple(X.image_shape) if isinstance(X, ImageDataset) else tuple(X.shape[1:])


def take_rows(X, mask):
    """Rows ``mask`` (bool) of an array or an ``ImageDataset`` (its ``subset``)."""
    return X.subset(mask) if isinstance(X, ImageDataset) else X[mask]


def check_dataset(ds, name, input_shape=None):
    """A non-empty ``ImageDataset`` whose ``image_shape`` is ``input_shape`` (when given)."""
    if len(ds) == 0:
        raise ValueError(f"{name} is an empty dataset")
    if input_shape is not None and tuple(ds.image_shape) != tuple(input_shape):
        raise ValueError(f"{name} gives images of shape {tuple(ds.image_shape)}; the trunk was built for "
                         f"{tuple(input_shape)} (set the dataset's size= and channels= to match)")
    return ds


def check_fit_data(net, X, y):
    """``fit``'s ``(X, y)`` checked against the trunk ``net``: an array (with labels ``y``) or
    an ``ImageDataset`` (``y`` None: its labels), of a per-sample shape the trunk takes."""
    built_shape = tuple(net.input_shape) if net.built else None
    y = labels_for(X, y, "y")
    if isinstance(X, ImageDataset):
        X = check_dataset(X, "X", built_shape)
    else:
        X = check_inputs(X, "X", built_shape)
        y = check_labels(y, "y", n=X.shape[0])
    shape = sample_shape(X)
    try:  # the first fit decides the input rank; the trunk's layers say whether they take it
        net.output_shape(shape)
    except ValueError as exc:
        if len(shape) == 1:
            raise ValueError(f"X must be 4-D images (N, C, H, W) for this trunk, got feature vectors of shape "
                             f"{X.shape} ({exc})") from None
        what = f"images of shape {shape}" if isinstance(X, ImageDataset) else f"shape {X.shape}"
        raise ValueError(f"X of {what} does not fit the trunk ({exc})") from None
    return X, y


def split_validation(X, y, validation, rng):
    """``(X_train, y_train, X_val, y_val)`` for ``fit``'s ``validation`` argument.

    A float in (0, 1): that fraction of the *classes* (at least two, and at least two left for
    training), drawn with ``rng``, is held out with all its images, so that the validation
    metrics measure what metric learning is for: classes not trained on. A pair
    ``(X_val, y_val)``, or an ``ImageDataset`` (its labels): used as given. None: no
    validation (X_val None). ``X`` may be an ``ImageDataset`` (then the split is two subsets).
    """
    if validation is None:
        return X, y, None, None
    if isinstance(validation, numbers.Real) and not isinstance(validation, (bool, np.bool_)):
        frac = check_float(validation, "validation")
        if not 0.0 < frac < 1.0:
            raise ValueError(f"validation must be in (0, 1) as a fraction of the classes, got {frac}")
        classes = np.unique(y)
        n_val = max(2, int(round(frac * classes.shape[0])))
        if classes.shape[0] - n_val < 2:
            raise ValueError(f"validation={frac} leaves fewer than two of the {classes.shape[0]} classes to train on")
        held = rng.choice(classes, size=n_val, replace=False)
        mask = np.isin(y, held)
        return take_rows(X, ~mask), y[~mask], take_rows(X, mask), y[mask]
    shape = sample_shape(X)
    if isinstance(validation, ImageDataset):
        check_dataset(validation, "validation", shape)
        return X, y, validation, validation.labels
    if isinstance(validation, (tuple, list)) and len(validation) == 2:
        Xv = check_array(validation[0], "validation[0]", ndim=len(shape) + 1, allow_empty=False)
        if Xv.shape[1:] != shape:
            raise ValueError(f"validation[0] must have shape (n, {', '.join(map(str, shape))}) like X, "
                             f"got {Xv.shape}")
        yv = check_labels(validation[1], "validation[1]", n=Xv.shape[0])
        return X, y, Xv, yv
    raise TypeError("validation must be None, a fraction of the classes in (0, 1), a pair (X_val, y_val) or an "
                    "ImageDataset, "
                    f"got {type(validation).__name__}")


def _check_metrics(metrics):
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


def _check_callbacks(callbacks):
    if callbacks is None:
        return ()
    if hasattr(callbacks, "on_epoch_end") or callable(callbacks):
        callbacks = (callbacks,)
    try:
        callbacks = tuple(callbacks)
    except TypeError:
        raise TypeError(f"callbacks must be a sequence of callbacks, got {type(callbacks).__name__}") from None
    for i, c in enumerate(callbacks):
        if not (callable(getattr(c, "on_epoch_end", None)) or callable(c)):
            raise TypeError(f"callbacks[{i}] must have on_epoch_end(embedder, epoch, history) or be callable "
                            f"with those arguments, got {type(c).__name__}")
    return callbacks


def _call_callback(c, emb, epoch, history):
    f = getattr(c, "on_epoch_end", None)
    return bool((f if callable(f) else c)(emb, epoch, history))


def check_lr_groups(lr_groups):
    """``lr_groups`` as a new dict prefix -> float multiplier (None stays None). TypeError for a
    non-mapping or a non-str / empty prefix, ValueError for a negative or non-finite multiplier."""
    if lr_groups is None:
        return None
    if not isinstance(lr_groups, Mapping):
        raise TypeError(f"lr_groups must be a dict parameter-name prefix -> lr multiplier, "
                        f"got {type(lr_groups).__name__}")
    out = {}
    for prefix, m in lr_groups.items():
        if not isinstance(prefix, str) or not prefix:
            raise TypeError(f"lr_groups keys must be non-empty str (parameter name prefixes), got {prefix!r}")
        out[prefix] = check_float(m, f"lr_groups[{prefix!r}]", minimum=0.0)
    return out


def _prefix_of(name, prefixes):
    """The longest of ``prefixes`` that ``name`` is or starts with (then a dot), or None."""
    best = None
    for p in prefixes:
        if (name == p or name.startswith(p + ".")) and (best is None or len(p) > len(best)):
            best = p
    return best


def param_groups(emb, lr):
    """The optimizer's parameter groups: the trunk's trainable parameters (``requires_grad``;
    frozen ones are left out) at ``lr`` times their ``emb.lr_groups`` multiplier (the longest
    matching name prefix; 1 for the others), one group per multiplier in the order the
    parameters come, then the loss's at ``lr * loss_lr_factor``. Raises ValueError for an
    ``lr_groups`` prefix that names no parameter of the trunk."""
    mults = emb.lr_groups or {}
    named = emb.net.named_parameters()
    for prefix in mults:
        if not any(n == prefix or n.startswith(prefix + ".") for n, _ in named):
            raise ValueError(f"lr_groups: prefix {prefix!r} matches no parameter of the trunk "
                             f"(names like {named[0][0]!r})" if named else
                             f"lr_groups: prefix {prefix!r} matches no parameter: the trunk has none")
    by_mult = {}  # multiplier -> parameters, in the order they come
    for name, p in named:
        if p.requires_grad:
            prefix = _prefix_of(name, mults)
            by_mult.setdefault(1.0 if prefix is None else mults[prefix], []).append(p)
    groups = [{"params": params, "lr": lr * m} for m, params in by_mult.items()]
    loss_params = getattr(emb.loss_func, "parameters", None)
    loss_params = list(loss_params()) if callable(loss_params) else []
    if loss_params:
        groups.append({"params": loss_params, "lr": lr * emb.loss_lr_factor})
    return [g for g in groups if g["params"]]


def _validate(emb, Xv, yv, metrics):
    Z = emb.embed(Xv)
    emb.net.train()
    return retrieval_metrics(Z, yv, include=metrics, backend=emb.backend)


def fit(emb, X, y, *, epochs, batch_size, lr, verbose, validation, metrics, restore_best, early_stopping,
        callbacks, callback, augment, schedule, resume, profile):
    """Train ``emb`` (arguments validated and documented by ``Embedder.fit``)."""
    metrics = _check_metrics(metrics)
    callbacks = _check_callbacks(callbacks)
    if early_stopping is not None:
        early_stopping = check_int(early_stopping, "early_stopping", minimum=1)
    for name, v in (("restore_best", restore_best), ("resume", resume)):
        check_bool(v, name)
    if lr is not None:
        lr = check_float(lr, "lr", minimum=0.0, strict=True)
    opt_name = _recipe.resolve_optimizer(emb.optimizer, lr)
    lr = _recipe.DEFAULTS["lr"].get(opt_name, 1e-3) if lr is None else lr
    files = isinstance(X, ImageDataset)
    if files and not (augment is None or (isinstance(augment, str) and augment == "default")):
        raise ValueError("augment applies to array inputs; X is a dataset, whose train_transform augments its "
                         "images (ImageFolder / ImageCSV train_transform=...): pass augment=\"default\" or None")
    if not files and X.ndim == 2 and isinstance(augment, str):  # the presets transform images
        if augment in _recipe.AUGMENTS:
            raise ValueError(f"augment={augment!r} transforms images; X holds feature vectors (N, F): pass "
                             "augment=None, \"default\" (no augmentation for feature vectors) or a callable(X, rng)")
        if augment == "default":
            augment = None
    augment_fn = None if files else _recipe.make_augment(augment)
    schedule_obj = _recipe.make_schedule(schedule)
    state = emb.train_state_ if resume else None
    if resume:
        if state is None or emb.optimizer_ is None:
            raise ValueError("resume=True needs a checkpoint: a fit interrupted or stopped early in this "
                             "process, or an Embedder.load of a file saved during or after a fit")
        if state["epochs"] != epochs:
            raise ValueError(f"epochs must be the epochs of the checkpointed fit ({state['epochs']}) to resume it, "
                             f"got {epochs}")
        if state.get("stale"):
            raise ValueError(f"resume=True: the checkpointed fit stopped inside epoch {state['epoch'] + 1} "
                             f"({state['stale']}), after its checkpoint at the end of epoch {state['epoch']}; the "
                             "weights, optimizer and random streams have moved past that checkpoint, so resuming "
                             "would not equal an uninterrupted run. Resume from a file saved at an epoch end "
                             "(Embedder.save in a callback), or start a new fit")
    if (restore_best or early_stopping) and validation is None:
        raise ValueError("restore_best and early_stopping need validation data (validation=...)")

    Xt, yt, Xv, yv = split_validation(X, y, validation, emb._rng) if state is None else (
        _resume_split(X, y, validation, state))
    if state is not None and (state["batch_size"] != batch_size or state["n_train"] != len(Xt)):
        raise ValueError(f"resume=True needs the same X and batch_size as the checkpointed fit "
                         f"({state['n_train']} training images, batch_size {state['batch_size']})")
    classes, y_idx = np.unique(yt, return_inverse=True)
    n_classes = classes.shape[0]
    if n_classes < 2:
        raise ValueError(f"y must contain at least 2 classes for metric learning, got {n_classes}")
    m = _recipe.choose_m(batch_size, n_classes, emb.m_per_class)
    n_batches = math.ceil(len(Xt) / batch_size)
    sampler = MPerClassSampler(y_idx, m, batch_size=batch_size, length_before_new_iter=n_batches * batch_size,
                               seed=emb._rng)
    if state is not None and state.get("sampler_labels") is not None:
        sampler.labels = [int(c) for c in state["sampler_labels"]]
    emb.sampler_ = sampler
    net = emb.net
    net.train()
    shape = sample_shape(Xt)
    if not net.built:
        net.build(shape)
    embed_dim = int(net.output_shape(shape)[0])
    emb._ensure_loss(n_classes, embed_dim)
    if state is None:
        groups = param_groups(emb, lr)
        if not groups:
            raise ValueError("nothing to train: neither the trunk nor the loss has learnable parameters")
        emb.optimizer_ = emb._make_optimizer(groups, opt_name)
        emb.history_ = {"loss": []}
        base_lrs = [g["lr"] for g in getattr(emb.optimizer_, "param_groups", [{"lr": lr}])]
        first_epoch, step, best = 0, 0, None
    else:
        base_lrs = list(state["base_lrs"])
        first_epoch, step, best = state["epoch"], state["step"], state.get("best")
    opt = emb.optimizer_
    if schedule_obj is not None and not hasattr(opt, "param_groups"):
        raise ValueError("schedule needs an optimizer with param_groups (a custom optimizer: pass schedule=None)")
    history = emb.history_
    for name in metrics if Xv is not None else ():
        history.setdefault("val_" + name, [])
    emb.profile_ = None
    emb.input_shape_ = shape
    emb.embed_dim_ = embed_dim
    emb.fitted_ = True
    emb.classes_ = classes
    bar = ProgressBar(batch_size) if verbose else None
    hooks = ([bar] if bar is not None else []) + ([EpochCallback(callback)] if callback is not None else [])
    hooks.append(ThreadAdapter())
    profiler = Profiler(net) if profile else None
    if profiler is not None:
        hooks.append(profiler)
    guard = CheckpointGuard()
    tracker = {"best": best, "best_epoch": None if best is None else state.get("best_epoch"), "weights": None,
               "bad_epochs": 0 if state is None else state.get("bad_epochs", 0)}
    plan = {"epochs": epochs, "batch_size": batch_size, "n_train": len(Xt), "base_lrs": base_lrs,
            "optimizer": opt_name if state is None else state.get("optimizer"),
            "validation": None if Xv is None else ("fraction" if isinstance(validation, numbers.Real) and
                                                   not isinstance(validation, bool) else "given"),
            "val_classes": None if Xv is None else [int(c) for c in np.unique(yv)]}

    def epoch_end(epoch, mean_loss, step):
        stop = False
        if Xv is not None:
            scores = _validate(emb, Xv, yv, metrics)
            for name in metrics:
                history["val_" + name].append(float(scores[name]))
            if bar is not None:
                bar.last = f"{metrics[0]}={scores[metrics[0]]:.4f}"
            score = float(scores[metrics[0]])
            if tracker["best"] is None or score > tracker["best"]:
                tracker.update(best=score, best_epoch=epoch, bad_epochs=0)
                if restore_best:
                    tracker["weights"] = net.state_arrays()
            else:
                tracker["bad_epochs"] += 1
                stop = early_stopping is not None and tracker["bad_epochs"] >= early_stopping
        emb.train_state_ = {**plan, "epoch": epoch + 1, "step": step, "sampler_labels": list(sampler.labels),
                            "best": tracker["best"], "best_epoch": tracker["best_epoch"],
                            "bad_epochs": tracker["bad_epochs"]}
        guard.current = True
        for c in callbacks:
            stop = _call_callback(c, emb, epoch, history) or stop
        return stop

    if state is None:
        emb.train_state_ = None  # a new fit: an earlier fit's checkpoint no longer matches the weights
    hooks.append(guard)
    try:
        with DeferredInterrupt() as interrupt:
            source = FileBatches(Xt, batch_size) if files else ArrayBatches(Xt, augment_fn, batch_size)
            train_epochs(net, emb.miner_func, emb.loss_func, opt, source, y_idx, sampler, epochs=epochs,
                         n_batches=n_batches, batch_size=batch_size, lr=lr, losses=history["loss"],
                         hooks=HookList(hooks), first_epoch=first_epoch, step=step, rng=emb._rng, schedule=schedule_obj, base_lrs=base_lrs, epoch_end=epoch_end,
                         interrupt=interrupt)
    except BaseException as exc:
        if not guard.current and emb.train_state_ is not None:  # stopped between two checkpoints
            emb.train_state_ = {**emb.train_state_, "stale": f"{type(exc).__name__}: {exc}"[:200]}
        raise
    finally:
        net.eval()
    if profiler is not None:
        emb.profile_ = profiler.result(epochs - first_epoch)
    if restore_best and tracker["weights"] is not None:
        net.load_state_arrays(tracker["weights"])
    if emb.train_state_ is not None and emb.train_state_["epoch"] >= epochs:
        emb.train_state_ = {**emb.train_state_, "finished": True}
    return emb


class CheckpointGuard(TrainingHook):
    """Whether ``train_state_`` matches the weights: False from the start of an epoch until
    its checkpoint is written at its end (a fit stopped in between marks it stale)."""

    def __init__(self) -> None:
        self.current = True

    def epoch_begin(self, epoch, epochs, batches, n_batches):
        self.current = False
        return batches


def _resume_split(X, y, validation, state):
    if validation is None or state.get("val_classes") is None:
        return split_validation(X, y, validation if not isinstance(validation, numbers.Real) else None, None)
    if isinstance(validation, numbers.Real):
        mask = np.isin(y, np.asarray(state["val_classes"]))
        return take_rows(X, ~mask), y[~mask], take_rows(X, mask), y[mask]
    return split_validation(X, y, validation, None)
