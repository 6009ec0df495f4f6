"""Numpy twins of the fully connected layer's kernels (``mantissa_embed._engine._dense``). Same names,
signatures, checks and errors as the engine.
"""

from __future__ import annotations

import numpy as np

from .._checks.activations import act_flag, check_negative_slope
from .._checks.arrays import check_kernel_output, check_outs, store_grad
from .._checks.dense import check_dense_args, check_dense_backward_args
from ._activations import _act

__all__ = [
    "dense_forward",
    "dense_backward",
]


def _dense(x, w, b):
    y = x @ w.T
    if b is not None:
        y = y + b
    return y


def dense_forward(x, w, b, out=None, act=None, negative_slope: float = 0.01):
    """Fully connected layer, as ``torch.nn.functional.linear``: x (N,I), w (O,I), b (O,) or
    None -> out (N,O) = x @ w.T + b (float32); ``act``: None/"identity", "relu" for max(., 0)
    or "leaky_relu" (``negative_slope`` >= 0) in the same call (TypeError/ValueError otherwise)."""
    code = act_flag(act)
    slope = check_negative_slope(negative_slope)
    x, w, b = check_dense_args(x, w, b)
    out = check_kernel_output(out, "out", (x.shape[0], w.shape[0]))
    check_outs([(out, "out")], [(x, "x"), (w, "w"), (b, "b")])
    out[...] = _act(_dense(x, w, b).astype(np.float32), code, slope)
    return out


def dense_backward(x, w, dy, dx=None, dw=None, db=None, need_dx: bool = True, accumulate: bool = False):
    """Gradients of ``dense_forward`` for dy (N,O): ``(dx, dw, db)`` with dx = dy @ w (N,I)
    (None when ``need_dx`` is False), dw = dy.T @ x (O,I), db = dy.sum(0) (O,); dw/db are new
    arrays when None, else overwritten, or added to when ``accumulate`` is True."""
    x, w, dy, dx, dw, db, need_dx, accumulate = check_dense_backward_args(
        x, w, dy, dx, dw, db, need_dx, accumulate
    )
    if need_dx:
        dx[...] = dy @ w
    store_grad(dw, dy.T @ x, accumulate)
    store_grad(db, dy.sum(axis=0), accumulate)
    return dx, dw, db
