"""The training loop of ``Embedder.fit``: ``train_epochs`` runs the batches of a batch source
(``_batch_sources``), calling its hooks (``_hooks``) at fixed points; ``DeferredInterrupt``
holds a Ctrl-C back to the next batch boundary.
"""

from __future__ import annotations

import signal
import threading
import warnings
from typing import Literal

import numpy as np

__all__ = ["DeferredInterrupt", "train_epochs"]


class DeferredInterrupt:
    """Holds a Ctrl-C (SIGINT) back to the next batch boundary, so that an interrupted fit
    keeps the weights of its last completed step. ``pending`` tells whether one came. Only in
    the main thread (elsewhere a no-op: signals are delivered to the main thread)."""

    def __init__(self) -> None:
        self.pending = False
        self._old = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            try:
                self._old = signal.signal(signal.SIGINT, self._handle)
            except ValueError:  # pragma: no cover - not the main interpreter
                self._old = None
        return self

    def _handle(self, signum, frame) -> None:
        self.pending = True

    def __exit__(self, *exc) -> Literal[False]:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
        return False


def train_epochs(
    net,
    miner,
    loss_func,
    optimizer,
    source,
    y,
    sampler,
    settings,
    *,
    n_batches,
    lr,
    losses,
    hooks,
    first_epoch=0,
    step=0,
    rng=None,
    base_lrs=None,
    epoch_end=None,
    interrupt=None,
):
    """Train ``net`` for epochs ``first_epoch .. settings.epochs - 1`` of ``n_batches`` batches
    drawn from ``sampler``; returns the number of optimizer steps taken in all (``step`` + new
    ones). ``settings``: the fit's ``FitSettings`` (its ``epochs`` and ``schedule``); ``lr``: the
    trunk's learning rate the fit resolved (named in the divergence errors).

    Per batch: ``(idx, xb)`` from ``source.epoch(iter(sampler), rng)`` (``ArrayBatches``:
    ``augment(X[idx], rng)``; ``FileBatches``: decoded files); ``E = net.forward(xb)``;
    ``tuples = miner(E, y[idx])`` (None: no miner); ``optimizer.zero_grad()``;
    ``out = loss_func(E, y[idx], indices_tuple=tuples)`` (after the zeroing: a loss with its own
    parameters writes their gradients here); ``net.backward(out.grad)``; with a schedule,
    each parameter group's lr is ``base_lrs[g] * schedule.factor(step, epochs * n_batches)``;
    ``optimizer.step()``. Appends each epoch's mean batch loss to ``losses``, then calls
    ``epoch_end(epoch, mean_loss, step)``; a true result stops training. ``interrupt``: a
    ``DeferredInterrupt``, checked after every batch (raises KeyboardInterrupt there).
    ``hooks``: a ``TrainingHook``. Raises FloatingPointError when the embeddings or the
    loss stop being finite.
    """
    epochs, schedule = settings.epochs, settings.schedule
    total_steps = epochs * n_batches
    groups = getattr(optimizer, "param_groups", None) if schedule is not None else None
    try:
        hooks.begin()
        for epoch in range(first_epoch, epochs):
            data = source.epoch(iter(sampler), rng)
            try:
                done = _run_batches(
                    net,
                    miner,
                    loss_func,
                    optimizer,
                    data,
                    y,
                    hooks.epoch_begin(epoch, epochs, range(n_batches), n_batches),
                    hooks,
                    epoch=epoch,
                    lr=lr,
                    groups=groups,
                    schedule=schedule,
                    base_lrs=base_lrs,
                    step=step,
                    total_steps=total_steps,
                    interrupt=interrupt,
                )
            finally:
                data.close()
            step, total, no_pairs = done
            if no_pairs == n_batches:
                warnings.warn(
                    f"epoch {epoch + 1} saw no positive pair (every batch has distinct labels): "
                    "the loss cannot learn; check y and m_per_class",
                    RuntimeWarning,
                    stacklevel=3,
                )
            losses.append(total / n_batches)
            hooks.epoch_end(epoch, losses[-1])
            if epoch_end is not None and epoch_end(epoch, losses[-1], step):
                break
    finally:
        hooks.end()
    return step


def _run_batches(
    net,
    miner,
    loss_func,
    optimizer,
    data,
    y,
    batches,
    hooks,
    *,
    epoch,
    lr,
    groups,
    schedule,
    base_lrs,
    step,
    total_steps,
    interrupt,
):
    """One epoch's batches: ``(step, loss sum, batches without a positive pair)``."""
    total = 0.0
    no_pairs = 0
    for i in batches:
        hooks.start()
        item = next(data, None)
        if item is None:
            break
        idx, xbi = item
        xbi = net.normalize_input(xbi)  # the trunk's input_mean / input_std, after augmenting
        yb = y[idx]
        hooks.lap("data")
        emb = net.forward(xbi)
        if not np.isfinite(emb).all():  # X is finite: the weights diverged
            raise FloatingPointError(
                f"the embeddings became NaN/Inf at epoch {epoch + 1}, batch {i + 1}; lower lr (got {lr})"
            )
        hooks.start()
        tuples = None if miner is None else miner(emb, yb)
        hooks.lap("miner")
        optimizer.zero_grad()
        hooks.lap("optimizer")
        out = loss_func(emb, yb, indices_tuple=tuples)
        hooks.lap("loss")
        loss = float(out.loss)
        if not np.isfinite(loss):
            raise FloatingPointError(
                f"the loss became {loss} at epoch {epoch + 1}, batch {i + 1}; lower lr (got {lr})"
            )
        if np.unique(yb).shape[0] == yb.shape[0]:
            no_pairs += 1
        net.backward(out.grad, need_dx=False)
        hooks.start()
        if groups is not None:
            f = schedule.factor(step, total_steps)
            for g, base in zip(groups, base_lrs):
                g["lr"] = base * f
        optimizer.step()
        step += 1
        hooks.lap("optimizer")
        total += loss
        hooks.batch_end(i, total)
        if interrupt is not None and interrupt.pending:
            raise KeyboardInterrupt
    return step, total, no_pairs
