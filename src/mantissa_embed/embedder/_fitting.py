"""The body of ``Embedder.fit``: the run plan
(validation split, parameter groups, schedule, augmentation), the work at every epoch end
(validation metrics, callbacks, early stopping, the checkpoint state) and resuming.

The loop itself is ``_training.train_epochs``; the data checks ``_fit_data``.
"""

from __future__ import annotations

import math

import numpy as np

from ..datasets.image_dataset import ImageDataset
from ..evaluation.retrieval import retrieval_metrics
from ..samplers import MPerClassSampler
from . import _recipe
from ._batch_sources import ArrayBatches, FileBatches
from ._fit_data import sample_shape, split_validation, take_rows
from ._hooks import EpochCallback, HookList, Profiler, ProgressBar, ThreadAdapter, TrainingHook
from ._param_groups import param_groups
from ._training import DeferredInterrupt, train_epochs

__all__ = ["fit"]


def _call_callback(c, emb, epoch, history):
    f = getattr(c, "on_epoch_end", None)
    return bool((f if callable(f) else c)(emb, epoch, history))


def _validate(emb, Xv, yv, metrics):
    Z = emb.embed(Xv)
    emb.net.train()
    return retrieval_metrics(Z, yv, include=metrics, backend=emb.backend)


def fit(emb, X, y, settings):
    """Train ``emb`` on the checked ``X``, ``y`` with the options ``settings`` (a ``FitSettings``,
    checked; documented by ``Embedder.fit``)."""
    opt_name = _recipe.resolve_optimizer(emb.optimizer, settings.lr)
    lr = _recipe.DEFAULTS["lr"].get(opt_name, 1e-3) if settings.lr is None else settings.lr
    files = isinstance(X, ImageDataset)
    augment_fn = None if files else _recipe.make_augment(settings.augment)
    state = _checkpoint_to_resume(emb, settings) if settings.resume else None
    epochs, batch_size, metrics = settings.epochs, settings.batch_size, settings.metrics

    Xt, yt, Xv, yv = (
        split_validation(X, y, settings.validation, emb._rng)
        if state is None
        else (_resume_split(X, y, settings.validation, state))
    )
    if state is not None and (state["batch_size"] != batch_size or state["n_train"] != len(Xt)):
        raise ValueError(
            f"resume=True needs the same X and batch_size as the checkpointed fit "
            f"({state['n_train']} training images, batch_size {state['batch_size']})"
        )
    classes, y_idx = np.unique(yt, return_inverse=True)
    n_classes = classes.shape[0]
    if n_classes < 2:
        raise ValueError(f"y must contain at least 2 classes for metric learning, got {n_classes}")
    m = _recipe.choose_m(batch_size, n_classes, emb.m_per_class)
    n_batches = math.ceil(len(Xt) / batch_size)
    sampler = MPerClassSampler(
        y_idx, m, batch_size=batch_size, length_before_new_iter=n_batches * batch_size, seed=emb._rng
    )
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
    if settings.schedule is not None and not hasattr(opt, "param_groups"):
        raise ValueError(
            "schedule needs an optimizer with param_groups (a custom optimizer: pass schedule=None)"
        )
    history = emb.history_
    for name in metrics if Xv is not None else ():
        history.setdefault("val_" + name, [])
    emb.profile_ = None
    emb.input_shape_ = shape
    emb.embed_dim_ = embed_dim
    emb.fitted_ = True
    emb.classes_ = classes
    bar = ProgressBar(batch_size) if settings.verbose else None
    hooks = [bar] if bar is not None else []
    if settings.callback is not None:
        hooks.append(EpochCallback(settings.callback))
    hooks.append(ThreadAdapter())
    profiler = Profiler(net) if settings.profile else None
    if profiler is not None:
        hooks.append(profiler)
    guard = CheckpointGuard()
    tracker = {
        "best": best,
        "best_epoch": None if best is None else state.get("best_epoch"),
        "weights": None,
        "bad_epochs": 0 if state is None else state.get("bad_epochs", 0),
    }
    plan = {
        **settings.checkpointed(),
        "n_train": len(Xt),
        "base_lrs": base_lrs,
        "optimizer": opt_name if state is None else state.get("optimizer"),
        "validation": None if Xv is None else settings.validation_kind,
        "val_classes": None if Xv is None else [int(c) for c in np.unique(yv)],
    }

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
                if settings.restore_best:
                    tracker["weights"] = net.state_arrays()
            else:
                tracker["bad_epochs"] += 1
                patience = settings.early_stopping
                stop = patience is not None and tracker["bad_epochs"] >= patience
        emb.train_state_ = {
            **plan,
            "epoch": epoch + 1,
            "step": step,
            "sampler_labels": list(sampler.labels),
            "best": tracker["best"],
            "best_epoch": tracker["best_epoch"],
            "bad_epochs": tracker["bad_epochs"],
        }
        guard.current = True
        for c in settings.callbacks:
            stop = _call_callback(c, emb, epoch, history) or stop
        return stop

    if state is None:
        emb.train_state_ = None  # a new fit: an earlier fit's checkpoint no longer matches the weights
    hooks.append(guard)
    try:
        with DeferredInterrupt() as interrupt:
            source = FileBatches(Xt, batch_size) if files else ArrayBatches(Xt, augment_fn, batch_size)
            train_epochs(
                net,
                emb.miner_func,
                emb.loss_func,
                opt,
                source,
                y_idx,
                sampler,
                settings,
                n_batches=n_batches,
                lr=lr,
                losses=history["loss"],
                hooks=HookList(hooks),
                first_epoch=first_epoch,
                step=step,
                rng=emb._rng,
                base_lrs=base_lrs,
                epoch_end=epoch_end,
                interrupt=interrupt,
            )
    except BaseException as exc:
        if not guard.current and emb.train_state_ is not None:  # stopped between two checkpoints
            emb.train_state_ = {**emb.train_state_, "stale": f"{type(exc).__name__}: {exc}"[:200]}
        raise
    finally:
        net.eval()
    if profiler is not None:
        emb.profile_ = profiler.result(epochs - first_epoch)
    if settings.restore_best and tracker["weights"] is not None:
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


def _checkpoint_to_resume(emb, settings):
    """The checkpoint state ``resume=True`` continues, after checking that it can: there is one,
    ``settings`` has its epochs (its batch size is compared once the training set is known), and
    it matches the weights (not stale)."""
    state = emb.train_state_
    if state is None or emb.optimizer_ is None:
        raise ValueError(
            "resume=True needs a checkpoint: a fit interrupted or stopped early in this "
            "process, or an Embedder.load of a file saved during or after a fit"
        )
    if state["epochs"] != settings.epochs:
        raise ValueError(
            f"epochs must be the epochs of the checkpointed fit ({state['epochs']}) to resume it, "
            f"got {settings.epochs}"
        )
    if state.get("stale"):
        raise ValueError(
            f"resume=True: the checkpointed fit stopped inside epoch {state['epoch'] + 1} "
            f"({state['stale']}), after its checkpoint at the end of epoch {state['epoch']}; the "
            "weights, optimizer and random streams have moved past that checkpoint, so resuming "
            "would not equal an uninterrupted run. Resume from a file saved at an epoch end "
            "(Embedder.save in a callback), or start a new fit"
        )
    return state


def _resume_split(X, y, validation, state):
    """The split of the checkpointed fit: a fraction's held-out classes are the recorded ones."""
    if validation is None or state.get("val_classes") is None:
        return split_validation(X, y, None if isinstance(validation, float) else validation, None)
    if isinstance(validation, float):
        mask = np.isin(y, np.asarray(state["val_classes"]))
        return take_rows(X, ~mask), y[~mask], take_rows(X, mask), y[mask]
    return split_validation(X, y, validation, None)
