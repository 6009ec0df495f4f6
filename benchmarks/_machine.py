"""What a benchmark run says about its machine, and the busy neighbour of ``--busy-neighbour``.

``describe(threads)``: the CPU model (``/proc/cpuinfo``), the ISA path the engine runs (its
SGEMM kernel, which the convolution and batch-norm paths follow) and the measured float32 FMA
peak (``fma_peak.py``). ``busy_neighbour()``: a context manager that starts one process pinned
to the last CPU spinning in a loop (stopped at exit, and by itself after ``limit_s`` seconds if
the benchmark dies), the "something else is running" case of a laptop.
"""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import sys

import fma_peak
from mantissa_embed import engine

_SPIN = "import os, time\n{pin}\nend = time.monotonic() + {limit}\nwhile time.monotonic() < end:\n    pass\n"


def cpu_model():
    """The CPU's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe(threads, peak=None):
    """One line: CPU model, logical CPUs, the engine's ISA path, the FMA peak on ``threads``
    (``peak`` GFLOP/s, measured by ``fma_peak.measure`` when None)."""
    feats = engine.cpu_features()
    isa = ", ".join(k for k in ("avx2", "fma", "avx512f", "avx512vl") if feats.get(k))
    if peak is None:
        peak = fma_peak.measure(threads)
    return (
        f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs; {isa or 'no AVX2'}); engine path: "
        f"{engine.gemm_kernel_name()}; float32 FMA peak {peak:.0f} GFLOP/s on {threads} thread(s)"
    )


@contextlib.contextmanager
def busy_neighbour(enabled=True, limit_s=3600):
    """Keep one core busy (the last CPU) while the block runs; a no-op when not ``enabled``."""
    if not enabled:
        yield None
        return
    cpu = (os.cpu_count() or 1) - 1
    pin = f"os.sched_setaffinity(0, {{{cpu}}})" if hasattr(os, "sched_setaffinity") else ""
    proc = subprocess.Popen([sys.executable, "-c", _SPIN.format(pin=pin, limit=float(limit_s))])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()
