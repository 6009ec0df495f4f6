"""numpy twins of the thread count and CPU-feature wrappers (``mantissa_embed._engine._cpu``).

Same names, signatures, argument checks and error messages as the engine. The thread functions only
record the value (numpy's own BLAS threads are not touched).
"""

from __future__ import annotations

import os

from .._checks.cpu import check_num_threads, env_num_threads

__all__ = ["set_num_threads", "get_num_threads", "gemm_kernel_name", "cpu_features"]


def _default_threads():
    env = env_num_threads()  # RuntimeWarning for an invalid value, as the engine's import gives
    if env is not None:
        return env
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


_num_threads = None  # recorded by set_num_threads; None: the default, computed at first use


def get_num_threads():
    """The recorded thread count (int >= 1); the numpy backend does not use it."""
    global _num_threads
    if _num_threads is None:
        _num_threads = _default_threads()
    return _num_threads


def set_num_threads(n) -> None:
    """Record the thread count (no effect on numpy). Same checks as the engine.

    Raises ``TypeError`` when ``n`` is not an int, ``ValueError`` when ``n < 1`` or ``n > 4096``.
    """
    global _num_threads
    _num_threads = check_num_threads(n)


def gemm_kernel_name() -> str:
    """``'numpy'``: the reference backend computes products with numpy (float64)."""
    return "numpy"


def cpu_features():
    """The same keys as the engine's; all False (the reference backend uses no CPU kernel)."""
    return dict.fromkeys(
        ("avx2", "fma", "avx512f", "avx512vl", "f16c", "avx512bw", "avx512vnni", "avx512bf16"), False
    )
