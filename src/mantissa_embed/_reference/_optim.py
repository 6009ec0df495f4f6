"""Numpy twins of the optimizer-step kernels (``mantissa_embed._engine._optim``): SGD and Adam / AdamW.
Same names, signatures, checks and errors as the engine.
"""

from __future__ import annotations

import numpy as np

from .._checks.optim import check_adam_args, check_sgd_args

__all__ = [
    "sgd_step",
    "adam_step",
]


def sgd_step(
    p,
    g,
    v,
    lr,
    momentum: float = 0.0,
    dampening: float = 0.0,
    weight_decay: float = 0.0,
    nesterov: bool = False,
    first: bool = False,
) -> None:
    """One in-place ``torch.optim.SGD`` step on the parameter array p with gradient g.

    p, v: float32 C-contiguous writeable arrays of one shape (v, the momentum buffer, may be
    None when momentum == 0); g: same shape. With ``g' = g + weight_decay * p``: the buffer
    becomes ``v = g'`` on the ``first`` step and ``momentum * v + (1 - dampening) * g'`` after;
    the update is ``p -= lr * d`` with ``d = g' + momentum * v`` (nesterov), ``v`` (momentum)
    or ``g'``. Source: torch/optim/sgd.py (_single_tensor_sgd). Returns None.
    """
    p, g, v, lr, momentum, dampening, weight_decay, nesterov, first = check_sgd_args(
        p, g, v, lr, momentum, dampening, weight_decay, nesterov, first
    )
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
        p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decoupled
    )
    f = np.float32
    step_size = f(
        float(f(lr)) / (1.0 - float(f(beta1)) ** t)
    )  # as optim.c: float args, double bias corrections
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
