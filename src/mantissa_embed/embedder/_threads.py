"""Busy-aware thread count for ``fit`` and ``embed``.

The engine's parallel regions end in barriers: when another process holds one of the cores,
every region waits for the engine thread that process has descheduled, and a two-thread fit on
a machine with one busy core runs slower than the same fit on one thread (docs/performance.md,
"Zen 3: busy neighbour (adaptive threads)"). So while ``fit`` or ``embed`` runs, the engine's thread count follows the
CPU time the *other* processes take on the CPUs this process may use:

    others = (busy CPU time of those CPUs - this process's CPU time) / wall time   (in cores)
    threads = clamp(round(len(CPUs) - others), 1, the thread count set by the user)

sampled from ``/proc/stat`` (Linux) at batch boundaries, over windows of at least ``WINDOW_S``
seconds (between them, and in a short ``embed`` that follows, the last choice holds);
steal time (a hypervisor's other guests) counts as busy. The engine's results are bitwise the
same for any thread count (tests/engine/test_threads.py, tests/embedder/test_threads_adaptive.py), so
the adaptation changes timings, never numbers. The user's count is restored when the last
running ``fit`` / ``embed`` returns. ``MANTISSA_EMBED_ADAPTIVE_THREADS=0`` turns it off; it is
also off where ``/proc/stat`` cannot be read.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from typing import Any, Literal

from .. import engine

#: the shortest window (seconds) over which the other processes' CPU use is measured: /proc/stat
#: counts in clock ticks (usually 10 ms), so shorter windows are mostly rounding.
WINDOW_S = 0.2
#: a measurement older than this (seconds) no longer describes the machine: start a new window
STALE_S = 10.0

_lock = threading.Lock()
_clock = time.monotonic  # the clock of the samples and of the windows
#: user: the ceiling (the count set outside); set: the count this module last applied (None:
#: none since the user's); gen: engine.set_num_threads's call count when "user" was read (a
#: call since is the user's new choice)
_state: dict[str, Any] = {"active": 0, "user": None, "set": None, "gen": None, "last": None, "choice": None}


_ON = ("1", "true", "on", "yes")
_OFF = ("0", "false", "off", "no")


def enabled() -> bool:
    """False when ``MANTISSA_EMBED_ADAPTIVE_THREADS`` is ``0`` / ``false`` / ``off`` / ``no``; an
    unset or on value (``1`` / ``true`` / ``on`` / ``yes``) is True; any other value warns
    (naming the variable) and counts as on."""
    v = os.environ.get("MANTISSA_EMBED_ADAPTIVE_THREADS")
    if v is None or v.strip().lower() in _ON:
        return True
    if v.strip().lower() in _OFF:
        return False
    warnings.warn(
        f"MANTISSA_EMBED_ADAPTIVE_THREADS={v!r} is not one of {_ON + _OFF}; adaptive threads stay on",
        RuntimeWarning,
        stacklevel=3,
    )
    return True


def _sample():
    """(monotonic s, busy CPU-seconds of this process's CPUs, this process's CPU-seconds, CPUs),
    or None where /proc/stat or the affinity mask cannot be read."""
    try:
        cpus = os.sched_getaffinity(0)
        hz = os.sysconf("SC_CLK_TCK")
        with open("/proc/stat", "rb") as f:
            lines = f.read().split(b"\n")
    except (AttributeError, OSError, ValueError):
        return None
    busy = 0
    for line in lines:
        if not (line.startswith(b"cpu") and line[3:4].isdigit()):
            continue
        name, *vals = line.split()
        if int(name[3:]) not in cpus or len(vals) < 7:
            continue
        v = [int(t) for t in vals[:8]]
        busy += v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)  # not idle, iowait
    t = os.times()
    return _clock(), busy / hz, t.user + t.system, len(cpus)


def others_cores(a, b):
    """Cores the other processes used between samples ``a`` and ``b`` (from ``_sample``)."""
    dt = b[0] - a[0]
    return max(0.0, ((b[1] - a[1]) - (b[2] - a[2])) / dt) if dt > 0 else 0.0


def choose(user, ncpu, others):
    """The thread count for ``others`` busy cores out of ``ncpu``, at most ``user``, at least 1."""
    return max(1, min(user, int(ncpu - others + 0.5)))


class AdaptiveThreads:
    """Context manager around a ``fit`` or ``embed``: ``step()`` at each batch boundary. A
    ``set_num_threads`` made meanwhile (a callback, another thread) becomes the new ceiling and
    is never undone; on exit the user's count comes back only if this module changed it."""

    def __enter__(self):
        with _lock:
            if _state["active"] == 0:
                _state["user"], _state["set"] = engine.get_num_threads(), None
                _state["gen"] = engine._num_threads_generation()
            _state["active"] += 1
            self.on = enabled()
        return self

    def _adopt_outside_change(self):
        cur, gen = engine.get_num_threads(), engine._num_threads_generation()
        if gen != _state["gen"]:
            _state["user"], _state["set"], _state["gen"] = cur, None, gen
        return cur

    def step(self) -> None:
        """Re-measure when the last window is ``WINDOW_S`` old (``/proc/stat`` is read only then),
        and set the engine's count."""
        if not self.on:
            return
        with _lock:
            cur = self._adopt_outside_change()
            if _state["user"] <= 1:
                return
            last, t = _state["last"], _clock()
            if last is None or not 0 <= t - last[0] < WINDOW_S:
                now = _sample()
                if now is None:
                    self.on = False
                    return
                if last is None or now[0] - last[0] > STALE_S:
                    _state["last"], _state["choice"] = now, None  # no usable window yet: the user's count
                    return
                _state["last"] = now
                _state["choice"] = choose(_state["user"], now[3], others_cores(last, now))
            if _state["choice"] is not None and _state["active"] > 0:
                n = min(_state["choice"], _state["user"])
                if n != cur:
                    engine._adapt_num_threads(n)
                    _state["set"] = n

    def __exit__(self, *exc) -> Literal[False]:
        with _lock:
            _state["active"] -= 1
            if _state["active"] == 0:
                if _state["set"] is not None and engine._num_threads_generation() == _state["gen"]:
                    engine._adapt_num_threads(_state["user"])
                _state["user"] = _state["set"] = _state["gen"] = None
        return False
