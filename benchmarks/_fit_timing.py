"""Steady-state epoch timing shared by the side-by-side fit benchmarks.

The protocol of ``compare_torch.py``, ``compare_torch_fit.py`` and ``compare_torch_cnn_fit.py``,
on both sides:

1. **Setup, untimed**: imports (torch, pytorch-metric-learning, mantissa_embed), the model, the
   loss, the miner, the optimizer (the first ``torch.optim`` optimizer of a process imports
   ``torch._dynamo``: seconds), the data arrays and tensors.
2. **Warm-up, untimed**: one training step on the shapes of the epoch. torch:
   ``_torch_reference.Trainer.warm_up`` (one step per batch size of an epoch). mantissa:
   ``mantissa_epochs`` below fits the same ``Embedder`` on one batch first (the layers' buffers,
   the lazy imports and the first-call plans of the batch shape are made there).
3. **Timed**: ``epochs`` (>= 2) consecutive epochs, each timed on its own. torch: around each
   ``Trainer.epoch()``; mantissa: one ``fit(X, y, epochs=epochs)`` whose ``callback`` stamps the
   end of every epoch, the clock started right before the call (so the first epoch also carries
   ``fit``'s per-call setup: the sampler, the optimizer's state arrays; about 2 ms).

``check_steady`` then asserts that the first timed epoch is not more than ``STEADY_TOL`` (25%)
slower than the median of the later ones. The one-time costs this catches are far larger than
that: the torch side's imports + first optimizer were 3.6 s + 1.7 s against a 1.5 s epoch (4.5x);
the first epoch of the first, un-warmed ``Embedder.fit`` of a process (lazy imports, first-call
plans, the layers' buffers) took 0.64 s against 0.39 s for the next ones (1.6x). Consecutive
epochs of one process run the same work on the same shapes (the batches differ only in which
images they hold and, with a semihard miner, in the number of triplets): their CPU times on one
thread differed by 5-10% on a 2-vCPU VM with other work running, less on an idle machine. The
check compares medians over the rounds, so one interrupted epoch does not trip it; 25% is well
above the noise and well below the defects. A machine busy with other work does trip it (2-thread
OpenMP epochs then swing by up to 10x): re-run on an idle one.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

#: the first timed epoch may be at most this much slower than the median of the later ones
STEADY_TOL = 0.25
#: compare_torch.py's torch-side epoch and an inline plain torch loop must agree within this
PLAIN_TOL = 0.15


def warm_slice(X, y, n):
    """``n`` samples taken round-robin over the classes (every class present when ``n`` >= the
    number of classes, class counts as equal as possible): a one-batch fit of the same shapes."""
    y = np.asarray(y)
    rank = np.empty(len(y), dtype=np.int64)
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        rank[idx] = np.arange(len(idx))
    order = np.lexsort((y, rank))[:n]
    return X[order], y[order]


def mantissa_epochs(emb, X, y, epochs, batch_size=64, **fit_kw):
    """Seconds of each of ``epochs`` consecutive epochs of ``emb.fit(X, y, ...)``, after an untimed
    warm-up fit of the same ``Embedder`` on one batch of ``(X, y)`` (same batch shape, same
    keyword arguments). Epoch times come from ``fit``'s ``callback`` timestamps."""
    Xw, yw = warm_slice(X, y, batch_size)
    emb.fit(Xw, yw, epochs=1, batch_size=batch_size, **fit_kw)
    stamps = []
    t0 = time.perf_counter()
    emb.fit(
        X,
        y,
        epochs=epochs,
        batch_size=batch_size,
        callback=lambda epoch, loss: stamps.append(time.perf_counter()),
        **fit_kw,
    )
    if len(stamps) != epochs:
        raise RuntimeError(f"fit's callback ran {len(stamps)} times for {epochs} epochs")
    return np.diff([t0] + stamps).tolist()


def torch_epochs(trainer, epochs):
    """(seconds of each epoch, last mean loss) of ``epochs`` consecutive ``trainer.epoch()`` calls
    (a ``_torch_reference.Trainer`` already set up and warmed up)."""
    times, loss = [], float("nan")
    for _ in range(epochs):
        t = time.perf_counter()
        loss = trainer.epoch()
        times.append(time.perf_counter() - t)
    return times, loss


def split(rounds):
    """(median first epoch, median later epoch, all epochs) over ``rounds`` (lists of epoch times)."""
    first = statistics.median(r[0] for r in rounds)
    later = statistics.median(x for r in rounds for x in r[1:])
    return first, later, [x for r in rounds for x in r]


def check_steady(name, rounds, tol=STEADY_TOL):
    """(message, ok): is the median first timed epoch at most ``1 + tol`` times the median of the
    later epochs? ``rounds``: one list of >= 2 consecutive epoch times (seconds) per round."""
    if not rounds or any(len(r) < 2 for r in rounds):
        return f"{name}: steady-state check needs >= 2 timed epochs per round", False
    first, later, _ = split(rounds)
    ratio = first / later
    ok = ratio <= 1.0 + tol
    verdict = (
        "ok"
        if ok
        else (
            f"FAILED: more than {tol:.0%} slower than the later epochs, a one-time "
            "cost is inside the timed region"
        )
    )
    return (
        f"{name}: first timed epoch {first * 1e3:.1f} ms, later epochs {later * 1e3:.1f} ms "
        f"(medians over {len(rounds)} round(s)), first/later {ratio:.2f} - {verdict}"
    ), ok


def check_agree(name, value, reference, tol=PLAIN_TOL):
    """(message, ok): does ``value`` agree with ``reference`` within ``tol`` (relative)?"""
    ratio = value / reference
    ok = abs(ratio - 1.0) <= tol
    verdict = "ok" if ok else f"FAILED: they differ by more than {tol:.0%}"
    return f"{name}: {value * 1e3:.1f} ms vs {reference * 1e3:.1f} ms, ratio {ratio:.2f} - {verdict}", ok


def finish(messages):
    """Print the check lines; return the exit status (1 when any check failed, else 0)."""
    failed = [m for m, ok in messages if not ok]
    print("\nchecks:")
    for m, _ in messages:
        print("  " + m)
    if failed:
        import sys

        print(
            f"CHECK FAILED ({len(failed)} of {len(messages)}); the timings above do not measure "
            "steady-state epochs. On a busy machine re-run on an idle one.",
            file=sys.stderr,
        )
        return 1
    return 0
