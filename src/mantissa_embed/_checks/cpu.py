"""Argument checks of the thread count (``src/engine_c/cpu.c``): ``set_num_threads`` and the
``MANTISSA_EMBED_NUM_THREADS`` variable."""

from __future__ import annotations

import numbers
import os
import re
import warnings


def check_num_threads(n):
    """``n`` as an int in [1, 4096]; ``TypeError`` for a non-int (bool rejected), else ``ValueError``."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if n > 4096:
        raise ValueError(f"n must be <= 4096, got {n}")
    return int(n)


NUM_THREADS_ENV = "MANTISSA_EMBED_NUM_THREADS"
# what the engine's strtol parse accepts (src/engine_c/cpu.c): leading space, optional "+", digits
_THREADS_RE = re.compile(r"[ \t\n\r\f\v]*\+?[0-9]+[ \t\n]*")
_warned_values: set[str] = set()


def env_num_threads():
    """The thread count ``MANTISSA_EMBED_NUM_THREADS`` asks for (an int in [1, 4096]), or None
    when it is unset, blank or invalid. An invalid value (``"abc"``, ``"0"``, ``"-3"``, ``"1.5"``)
    gives a ``RuntimeWarning`` naming the variable and the value (once per value and process);
    the engine then uses its default, as the C side (``cpu.c``) does."""
    raw = os.environ.get(NUM_THREADS_ENV)
    if raw is None or not raw.strip():
        return None
    # the significant digits, at most 4 before int(): int() of over 4300 digits is a ValueError
    digits = raw.strip().lstrip("+").lstrip("0") or "0"
    if _THREADS_RE.fullmatch(raw) and len(digits) <= 4 and 1 <= int(digits) <= 4096:
        return int(digits)
    if raw not in _warned_values:
        _warned_values.add(raw)
        shown = repr(raw) if len(raw) <= 40 else repr(raw[:40]) + f"... ({len(raw)} characters)"
        warnings.warn(
            f"{NUM_THREADS_ENV}={shown} is not a thread count (an integer from 1 to 4096): it is "
            "ignored, the engine uses every processor available to the process",
            RuntimeWarning,
            stacklevel=2,
        )
    return None
