"""Numpy twins of the ReLU, leaky ReLU, dropout and finiteness kernels and of the checked row copy
(``mantissa_embed._engine._activations``). Same names, signatures, checks and errors as the engine.
``_act`` (the activation of the conv / dense epilogues) keeps its input dtype.
"""

from __future__ import annotations

import numpy as np

from .._checks.activations import (
    check_act_args,
    check_act_backward_args,
    check_dropout_args,
    check_negative_slope,
)
from .._checks.arrays import check_int, check_kernel_output, check_no_overlap

__all__ = [
    "relu_forward",
    "relu_backward",
    "all_finite",
    "copy_rows_finite",
    "leaky_relu_forward",
    "leaky_relu_backward",
    "dropout_forward",
    "dropout_backward",
]


def _act(y, code, slope):
    """The activation ``code`` (``act_flag``: 0 identity, 1 ReLU, 2 leaky ReLU with ``slope``)
    of y, in its dtype; NaN stays NaN."""
    if code == 1:
        return np.maximum(y, y.dtype.type(0))
    if code == 2:
        return np.where(y < 0, y * y.dtype.type(slope), y)
    return y


def relu_forward(x, out=None):
    """out = max(x, 0), any shape, float32; ``out`` may be ``x`` itself (in place)."""
    x, out = check_act_args(x, out)
    np.maximum(x, np.float32(0), out=out)
    return out


def relu_backward(dy, y, dx=None):
    """dx = dy * (y > 0) where y is the forward *output*; ``dx`` may be ``dy`` itself."""
    dy, y, dx = check_act_backward_args(dy, y, dx)
    np.copyto(dx, np.where(y > 0, dy, np.float32(0)))
    return dx


def all_finite(x, out=None):
    """True when no value of x (float32, C-contiguous, any shape) is NaN or +-Inf; with ``out``
    (float32, C-contiguous, writeable, x's shape, not sharing memory with x) x is also copied
    into it, whatever the answer. Raises TypeError for another dtype or layout of x, TypeError /
    ValueError for a wrong ``out``."""
    if not (isinstance(x, np.ndarray) and x.dtype == np.float32 and x.flags.c_contiguous):
        raise TypeError("x must be a C-contiguous float32 numpy.ndarray")
    if out is not None:
        check_kernel_output(out, "out", x.shape)
        check_no_overlap(out, "out", (x, "x"))
        np.copyto(out, x)
    return bool(np.isfinite(x).all())


def _plain_f32_rows(a):
    """a is a C-contiguous, aligned, native-byte-order float32 numpy array of 2 dimensions."""
    return (
        isinstance(a, np.ndarray)
        and a.dtype == np.float32  # False for a byte-swapped float32
        and a.ndim == 2
        and a.flags.c_contiguous
        and a.flags.aligned
    )


def copy_rows_finite(x, rows, start):
    """Copy x (n, d) into rows ``start`` to ``start + n`` of ``rows`` (m, d): 1 when no value of
    x is NaN or +-Inf, 0 when one is (written either way), -1 (nothing written) when x is not a
    C-contiguous, aligned, native-byte-order float32 numpy array of shape (n, d) or does not fit
    from ``start``. TypeError for ``rows`` that is not such a 2-D array, writeable, or a ``start``
    that is not an int; ValueError for ``start`` outside [0, m] or rows ``start`` to ``start + n``
    overlapping x."""
    if not (_plain_f32_rows(rows) and rows.flags.writeable):
        raise TypeError(
            "rows must be a C-contiguous, aligned, writeable float32 numpy.ndarray of 2 dimensions"
        )
    start = check_int(start, "start")
    m, d = rows.shape
    if not 0 <= start <= m:
        raise ValueError(f"start must be in [0, {m}], got {start}")
    if not (_plain_f32_rows(x) and x.shape[1] == d):
        return -1
    n = x.shape[0]
    if n > m - start:
        return -1
    if n * d == 0:
        return 1
    if np.shares_memory(x, rows[start : start + n]):
        raise ValueError("rows must not share memory with x")
    rows[start : start + n] = x
    return int(bool(np.isfinite(x).all()))


def leaky_relu_forward(x, negative_slope: float = 0.01, out=None):
    """out = x where x >= 0, else ``negative_slope * x`` (``torch.nn.functional.leaky_relu``), any
    shape, float32; ``out`` may be ``x`` itself. ``negative_slope``: finite, >= 0."""
    slope = check_negative_slope(negative_slope)
    x, out = check_act_args(x, out)
    np.copyto(out, _act(x, 2, slope))
    return out


def leaky_relu_backward(dy, y, negative_slope: float = 0.01, dx=None):
    """dx = dy where y > 0, else ``negative_slope * dy`` (y the forward *output*; torch's rule,
    the slope at 0); ``dx`` may be ``dy`` itself."""
    slope = check_negative_slope(negative_slope)
    dy, y, dx = check_act_backward_args(dy, y, dx)
    np.copyto(dx, np.where(y > 0, dy, dy * np.float32(slope)))
    return dx


def dropout_forward(x, mask, out=None):
    """Inverted dropout with a drawn mask (0 or ``1/(1 - p)``): out = x * mask, float32;
    ``out`` may be ``x``."""
    x, mask, out = check_dropout_args(x, mask, out)
    np.multiply(x, mask, out=out)
    return out


def dropout_backward(dy, mask, dx=None):
    """Gradient of ``dropout_forward``: dx = dy * mask; ``dx`` may be ``dy``."""
    dy, mask, dx = check_dropout_args(dy, mask, dx, "dy", "dx")
    np.multiply(dy, mask, out=dx)
    return dx
