"""Numpy twins of the ReLU, leaky ReLU, dropout, finiteness, dense and optimizer-step kernels
(``mantissa_embed._engine._dense``). Same names, signatures, checks and errors as the engine.
"""
from __future__ import annotations

import numpy as np

from .._checks.activations import (act_flag, check_act_args, check_act_backward_args, check_dropout_args,
                                   check_negative_slope)
from .._checks.arrays import check_kernel_output, check_outs, store_grad
from .._checks.dense import check_dense_args, check_dense_backward_args
from .._checks.optim import check_adam_args, check_sgd_args

__all__ = [
    "relu_forward",
    "relu_backward",
    "all_finite",
    "dense_forward",
    "dense_backward",
    "sgd_step",
    "adam_step",
    "leaky_relu_forward",
    "leaky_relu_backward",
    "dropout_forward",
    "dropout_backward",
]


def _dense(x, w, b):
    y = x @ w.T
    if b is not None:
        y = y + b
    return y


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


def all_finite(x):
    """True when no value of x (float32, C-contiguous, any shape) is NaN or +-Inf.
    Raises TypeError for another dtype or layout."""
    if not (isinstance(x, np.ndarray) and x.dtype == np.float32 and x.flags.c_contiguous):
        raise TypeError("x must be a C-contiguous float32 numpy.ndarray")
    return bool(np.isfinite(x).all())


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
        x, w, dy, dx, dw, db, need_dx, accumulate)
    if need_dx:
        dx[...] = dy @ w
    store_grad(dw, dy.T @ x, accumulate)
    store_grad(db, dy.sum(axis=0), accumulate)
    return dx, dw, db


def sgd_step(p, g, v, lr, momentum: float = 0.0, dampening: float = 0.0, weight_decay: float = 0.0,
             nesterov: bool = False, first: bool = False) -> None:
    """One in-place ``torch.optim.SGD`` step on the parameter array p with gradient g.

    p, v: float32 C-contiguous writeable arrays of one shape (v, the momentum buffer, may be
    None when momentum == 0); g: same shape. With ``g' = g + weight_decay * p``: the buffer
    becomes ``v = g'`` on the ``first`` step and ``momentum * v + (1 - dampening) * g'`` after;
    the update is ``p -= lr * d`` with ``d = g' + momentum * v`` (nesterov), ``v`` (momentum)
    or ``g'``. Source: torch/optim/sgd.py (_single_tensor_sgd). Returns None.
    """
    p, g, v, lr, momentum, dampening, weight_decay, nesterov, first = check_sgd_args(
        p, g, v, lr, momentum, dampening, weight_decay, nesterov, first)
    f = np.float32
    gi = g + f(weight_decay) * p if weight_decay != 0.0 else g
    if momentum != 0.0:
        if first:
            v[...] = gi
        else:
            v[...] = v * f(momentum) + f(f(1.0) - f(dampening)) * gi
        d = gi + f(momentum) * v if nesterov else v
    else:
        d = gi
    p[...] = p + f(-lr) * d


def adam_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decoupled: bool = False) -> None:
    """One in-place ``torch.optim.Adam`` step (amsgrad=False) at step number t >= 1, or
    ``torch.optim.AdamW`` with ``decoupled=True``.

    p, m, v: float32 C-contiguous writeable arrays of one shape (m, v the first and second
    moment buffers, zero before the first step); g: same shape. Adam: ``g' = g + weight_decay * p``
    (L2 penalty); AdamW: ``g' = g`` and ``p *= 1 - lr * weight_decay`` first. Then
    ``m = lerp(m, g', 1 - beta1)``, ``v = beta2 * v + (1 - beta2) * g'^2``,
    ``p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``.
    Source: Kingma & Ba (2015), "Adam", ICLR; Loshchilov & Hutter (2019), "Decoupled Weight Decay
    Regularization", ICLR; torch/optim/adam.py (_single_tensor_adam). Returns None.
    """
    p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decoupled = check_adam_args(
        p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decoupled)
    f = np.float32
    step_size = f(float(f(lr)) / (1.0 - float(f(beta1)) ** t))  # as optim.c: float args, double bias corrections
    bc2_sqrt = f(np.sqrt(1.0 - float(f(beta2)) ** t))
    w1, w2 = f(1) - f(beta1), f(1) - f(beta2)
    pd = p  # AdamW: p * (1 - lr*wd), the factor in double from the float32 arguments (as optim.c)
    if decoupled and weight_decay != 0.0:
        pd = p * f(1.0 - float(f(lr)) * float(f(weight_decay)))
    gi = g + f(weight_decay) * p if weight_decay != 0.0 and not decoupled else g
    if w1 < 0.5:
        m[...] = m + w1 * (gi - m)
    else:
        m[...] = gi - (gi - m) * (f(1) - w1)
    v[...] = v * f(beta2) + w2 * (gi * gi)
    denom = np.sqrt(v) / bc2_sqrt + f(eps)
    p[...] = pd + (-step_size) * (m / denom)


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
