"""The training loop of ``Embedder.fit`` and its hooks.

``train_epochs`` runs the batches; everything that only observes the loop (the tqdm bar,
the per-epoch callback, the profiler) is a ``TrainingHook`` called at fixed points.
"""
from __future__ import annotations

import signal
import threading
import warnings
from time import perf_counter
from typing import Any, Literal

import numpy as np

from ..datasets._stream import stream_batches
from ._threads import AdaptiveThreads

__all__ = ["TrainingHook", "HookList", "ProgressBar", "EpochCallback", "Profiler", "DeferredInterrupt",
           "train_epochs", "profile_table"]


class TrainingHook:
    """Observer of ``train_epochs``; every method is a no-op by default.

    ``begin()`` / ``end()`` bracket the loop (``end`` also runs when it raises);
    ``epoch_begin(epoch, epochs, batches, n_batches)`` returns the batch iterator to use;
    ``start()`` and ``lap(phase)`` mark the start and end of a timed phase ("data", "miner",
    "loss", "optimizer"); ``batch_end(batch, loss_sum)`` follows every completed batch
    (``loss_sum``: the epoch's loss so far); ``epoch_end(epoch, mean_loss)`` every epoch.
    """

    def begin(self) -> None:
        pass

    def epoch_begin(self, epoch, epochs, batches, n_batches):
        return batches

    def start(self) -> None:
        pass

    def lap(self, phase) -> None:
        pass

    def batch_end(self, batch, loss_sum) -> None:
        pass

    def epoch_end(self, epoch, mean_loss) -> None:
        pass

    def end(self) -> None:
        pass


def _overriding(hooks, name):
    return tuple(getattr(h, name) for h in hooks if getattr(type(h), name) is not getattr(TrainingHook, name))


class HookList(TrainingHook):
    """Several hooks as one, called in order; methods no hook overrides cost one empty loop."""

    def __init__(self, hooks=()) -> None:
        self.hooks = tuple(hooks)
        self._begin, self._epoch_begin, self._start, self._lap, self._batch_end, self._epoch_end, self._end = (
            _overriding(self.hooks, name) for name in
            ("begin", "epoch_begin", "start", "lap", "batch_end", "epoch_end", "end"))

    def begin(self) -> None:
        for f in self._begin:
            f()

    def epoch_begin(self, epoch, epochs, batches, n_batches):
        for f in self._epoch_begin:
            batches = f(epoch, epochs, batches, n_batches)
        return batches

    def start(self) -> None:
        for f in self._start:
            f()

    def lap(self, phase) -> None:
        for f in self._lap:
            f(phase)

    def batch_end(self, batch, loss_sum) -> None:
        for f in self._batch_end:
            f(batch, loss_sum)

    def epoch_end(self, epoch, mean_loss) -> None:
        for f in self._epoch_end:
            f(epoch, mean_loss)

    def end(self):
        """Every hook's end, even when one raises (the first error is re-raised after)."""
        err = None
        for f in self._end:
            try:
                f()
            except Exception as e:  # noqa: BLE001 - re-raised below
                err = err or e
        if err is not None:
            raise err


class ProgressBar(TrainingHook):
    """A tqdm bar per epoch showing the running mean batch loss, images/s (``batch_size``
    images per batch) and ``last``, the text of the last validation metric (set by the fit)."""

    last = None

    def __init__(self, batch_size: int = 0) -> None:
        self.batch_size = batch_size

    def epoch_begin(self, epoch, epochs, batches, n_batches):
        from tqdm.auto import tqdm

        self.bar = tqdm(batches, total=n_batches, desc=f"epoch {epoch + 1}/{epochs}", leave=True)
        return self.bar

    def batch_end(self, batch, loss_sum) -> None:
        extra: dict[str, Any] = {} if self.last is None else {"val": self.last}
        elapsed = self.bar.format_dict.get("elapsed") or 0.0
        if self.batch_size and elapsed > 0:
            extra["img/s"] = f"{(batch + 1) * self.batch_size / elapsed:.0f}"
        self.bar.set_postfix(loss=f"{loss_sum / (batch + 1):.4f}", **extra, refresh=False)

    def epoch_end(self, epoch, mean_loss) -> None:
        self.bar.close()


class EpochCallback(TrainingHook):
    """Calls ``callback(epoch, mean_loss)`` after every epoch."""

    def __init__(self, callback) -> None:
        self.callback = callback

    def epoch_end(self, epoch, mean_loss) -> None:
        self.callback(epoch, mean_loss)


class ThreadAdapter(TrainingHook):
    """Lets ``AdaptiveThreads`` adjust the engine's thread count
    for the machine's load at every batch boundary (begin / end bracket it)."""

    def __init__(self) -> None:
        self._ctl = AdaptiveThreads()
        self._entered = False

    def begin(self) -> None:
        self._ctl.__enter__()
        self._entered = True
        self._ctl.step()

    def batch_end(self, batch, loss_sum) -> None:
        self._ctl.step()

    def end(self) -> None:
        if self._entered:
            self._entered = False
            self._ctl.__exit__(None, None, None)


class Profiler(TrainingHook):
    """Wall-clock seconds of every trunk layer's forward and backward (through the Sequential's
    timed plans), of the timed phases, and of the whole loop. ``result`` gives the dict
    ``Embedder.profile_`` documents."""

    def __init__(self, net) -> None:
        self.net = net
        self.phases = {"miner": 0.0, "loss": 0.0, "optimizer": 0.0, "data": 0.0}
        self.batches = 0
        self.layer_times = None
        self.total = 0.0
        self._t = 0.0

    def begin(self) -> None:
        self.net._set_profile([[0.0, 0.0] for _ in self.net.layers])
        self._t_begin = perf_counter()

    def start(self) -> None:
        self._t = perf_counter()

    def lap(self, phase) -> None:
        now = perf_counter()
        self.phases[phase] += now - self._t
        self._t = now

    def batch_end(self, batch, loss_sum) -> None:
        self.batches += 1

    def end(self) -> None:
        if not hasattr(self, "_t_begin"):  # begin never ran (an earlier hook's begin raised)
            return
        self.total = perf_counter() - self._t_begin
        self.layer_times = self.net._profile
        self.net._set_profile(None)

    def result(self, epochs):
        layers = [{"index": i, "layer": layer._describe(), "forward_s": float(f), "backward_s": float(b)}
                  for i, (layer, (f, b)) in enumerate(zip(self.net.layers, self.layer_times))]
        known = sum(d["forward_s"] + d["backward_s"] for d in layers) + sum(self.phases.values())
        p = self.phases
        return {"epochs": epochs, "batches": self.batches, "total_s": float(self.total), "layers": layers,
                "miner_s": float(p["miner"]), "loss_s": float(p["loss"]), "optimizer_s": float(p["optimizer"]),
                "data_s": float(p["data"]), "other_s": float(max(self.total - known, 0.0))}


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


class ArrayBatches:
    """``fit``'s batches from an in-memory ``X``: ``X[idx]`` gathered into one reused buffer,
    then ``augment(xb, rng)`` when given (``rng`` drawn after each batch's indices)."""

    def __init__(self, X, augment, batch_size) -> None:
        self.X, self.augment = X, augment
        self.buf = np.empty((batch_size,) + X.shape[1:], dtype=np.float32)

    def epoch(self, index_batches, rng):
        for idx in index_batches:
            xb = self.buf[:idx.shape[0]]
            np.take(self.X, idx, axis=0, out=xb)
            yield idx, (xb if self.augment is None else self.augment(xb, rng))


class FileBatches:
    """``fit``'s batches from an ``ImageDataset``: each batch's indices, then its images'
    ``train_transform`` parameters, drawn in the main thread in that order (``ds.prefetch``
    batches ahead), the images decoded on ``ds.workers()`` threads
    (``datasets._stream.stream_batches``): the same batches for any thread count."""

    def __init__(self, ds, batch_size) -> None:
        self.ds, self.batch_size = ds, batch_size

    def epoch(self, index_batches, rng):
        ds, t = self.ds, self.ds.train_transform

        def draws():
            for idx in index_batches:
                yield idx, [t.draw(rng, ds.source_size(int(i))) for i in idx]

        return stream_batches(ds, draws(), self.batch_size)


def train_epochs(net, miner, loss_func, optimizer, source, y, sampler, *, epochs, n_batches, batch_size, lr,
                 losses, hooks, first_epoch=0, step=0, rng=None, schedule=None, base_lrs=None,
                 epoch_end=None, interrupt=None):
    """Train ``net`` for epochs ``first_epoch .. epochs - 1`` of ``n_batches`` batches drawn
    from ``sampler``; returns the number of optimizer steps taken in all (``step`` + new ones).

    Per batch: ``(idx, xb)`` from ``source.epoch(iter(sampler), rng)`` (``ArrayBatches``:
    ``augment(X[idx], rng)``; ``FileBatches``: decoded files); ``E = net.forward(xb)``;
    ``tuples = miner(E, y[idx])`` (None: no miner); ``optimizer.zero_grad()``;
    ``out = loss_func(E, y[idx], indices_tuple=tuples)`` (after the zeroing: a loss with its own
    parameters writes their gradients here); ``net.backward(out.grad)``; with a ``schedule``,
    each parameter group's lr is ``base_lrs[g] * schedule.factor(step, epochs * n_batches)``;
    ``optimizer.step()``. Appends each epoch's mean batch loss to ``losses``, then calls
    ``epoch_end(epoch, mean_loss, step)``; a true result stops training. ``interrupt``: a
    ``DeferredInterrupt``, checked after every batch (raises KeyboardInterrupt there).
    ``hooks``: a ``TrainingHook``. Raises FloatingPointError when the embeddings or the
    loss stop being finite.
    """
    total_steps = epochs * n_batches
    groups = getattr(optimizer, "param_groups", None) if schedule is not None else None
    try:
        hooks.begin()
        for epoch in range(first_epoch, epochs):
            data = source.epoch(iter(sampler), rng)
            try:
                done = _run_batches(net, miner, loss_func, optimizer, data, y, hooks.epoch_begin(
                    epoch, epochs, range(n_batches), n_batches), hooks, epoch=epoch, lr=lr, groups=groups,
                    schedule=schedule, base_lrs=base_lrs, step=step, total_steps=total_steps, interrupt=interrupt)
            finally:
                data.close()
            step, total, no_pairs = done
            if no_pairs == n_batches:
                warnings.warn(f"epoch {epoch + 1} saw no positive pair (every batch has distinct labels): "
                              "the loss cannot learn; check y and m_per_class", RuntimeWarning, stacklevel=3)
            losses.append(total / n_batches)
            hooks.epoch_end(epoch, losses[-1])
            if epoch_end is not None and epoch_end(epoch, losses[-1], step):
                break
    finally:
        hooks.end()
    return step


def _run_batches(net, miner, loss_func, optimizer, data, y, batches, hooks, *, epoch, lr, groups, schedule, base_lrs,
         step, total_steps, interrupt):
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
                f"the embeddings became NaN/Inf at epoch {epoch + 1}, batch {i + 1}; lower lr (got {lr})")
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
                f"the loss became {loss} at epoch {epoch + 1}, batch {i + 1}; lower lr (got {lr})")
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


def profile_table(p):
    """A text table of a ``Profiler`` result: seconds and share of the total per row."""
    total = p["total_s"] or 1e-12
    rows = []
    for d in p["layers"]:
        rows.append((f"{d['index']}: {d['layer']} forward", d["forward_s"]))
        rows.append((f"{d['index']}: {d['layer']} backward", d["backward_s"]))
    rows += [("miner", p["miner_s"]), ("loss (forward + backward)", p["loss_s"]),
             ("optimizer (zero_grad + step)", p["optimizer_s"]), ("batch gathering", p["data_s"]),
             ("other (Python, checks)", p["other_s"])]
    w = max(len(r[0]) for r in rows)
    out = [f"{'where':<{w}}  {'seconds':>9}  {'share':>6}", "-" * (w + 19)]
    out += [f"{name:<{w}}  {sec:>9.4f}  {100 * sec / total:>5.1f}%" for name, sec in rows]
    out += ["-" * (w + 19),
            f"{'total (' + str(p['epochs']) + ' epochs, ' + str(p['batches']) + ' batches)':<{w}}  {total:>9.4f}"]
    return "\n".join(out)
