"""The observers of ``train_epochs``: a ``TrainingHook`` is called at fixed points of the loop
(the tqdm bar, the per-epoch callback, the thread adapter, the profiler) and only observes it.
"""

from __future__ import annotations

from time import perf_counter
from typing import Any

from ._threads import AdaptiveThreads

__all__ = [
    "TrainingHook",
    "HookList",
    "ProgressBar",
    "EpochCallback",
    "ThreadAdapter",
    "Profiler",
    "profile_table",
]


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
        (
            self._begin,
            self._epoch_begin,
            self._start,
            self._lap,
            self._batch_end,
            self._epoch_end,
            self._end,
        ) = (
            _overriding(self.hooks, name)
            for name in ("begin", "epoch_begin", "start", "lap", "batch_end", "epoch_end", "end")
        )

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
        layers = [
            {"index": i, "layer": layer._describe(), "forward_s": float(f), "backward_s": float(b)}
            for i, (layer, (f, b)) in enumerate(zip(self.net.layers, self.layer_times))
        ]
        known = sum(d["forward_s"] + d["backward_s"] for d in layers) + sum(self.phases.values())
        p = self.phases
        return {
            "epochs": epochs,
            "batches": self.batches,
            "total_s": float(self.total),
            "layers": layers,
            "miner_s": float(p["miner"]),
            "loss_s": float(p["loss"]),
            "optimizer_s": float(p["optimizer"]),
            "data_s": float(p["data"]),
            "other_s": float(max(self.total - known, 0.0)),
        }


def profile_table(p):
    """A text table of a ``Profiler`` result: seconds and share of the total per row."""
    total = p["total_s"] or 1e-12
    rows = []
    for d in p["layers"]:
        rows.append((f"{d['index']}: {d['layer']} forward", d["forward_s"]))
        rows.append((f"{d['index']}: {d['layer']} backward", d["backward_s"]))
    rows += [
        ("miner", p["miner_s"]),
        ("loss (forward + backward)", p["loss_s"]),
        ("optimizer (zero_grad + step)", p["optimizer_s"]),
        ("batch gathering", p["data_s"]),
        ("other (Python, checks)", p["other_s"]),
    ]
    w = max(len(r[0]) for r in rows)
    out = [f"{'where':<{w}}  {'seconds':>9}  {'share':>6}", "-" * (w + 19)]
    out += [f"{name:<{w}}  {sec:>9.4f}  {100 * sec / total:>5.1f}%" for name, sec in rows]
    label = f"total ({p['epochs']} epochs, {p['batches']} batches)"
    out += ["-" * (w + 19), f"{label:<{w}}  {total:>9.4f}"]
    return "\n".join(out)
