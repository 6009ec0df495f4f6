"""Argument checks of the optimizer steps (``src/engine_c/optim.c``): SGD and Adam / AdamW."""

from __future__ import annotations

import numpy as np

from .arrays import check_bool, check_f32, check_inplace, check_int, check_kernel_input, check_outs


def check_sgd_args(p, g, v, lr, momentum, dampening, weight_decay, nesterov, first):
    p = check_inplace(p, "p")
    g = check_kernel_input(g, "g")
    if g.shape != p.shape:
        raise ValueError(f"g must have the shape of p {p.shape}, got {g.shape}")
    lr = check_f32(lr, "lr")
    momentum = check_f32(momentum, "momentum")
    dampening = check_f32(dampening, "dampening")
    weight_decay = check_f32(weight_decay, "weight_decay")
    nesterov = check_bool(nesterov, "nesterov")
    first = check_bool(first, "first")
    if momentum != 0.0:
        if v is None:
            raise ValueError("v (the momentum buffer) is required when momentum != 0")
        v = check_inplace(v, "v", p.shape)
        check_outs([(v, "v")], [(p, "p"), (g, "g")])
    check_outs([(p, "p")], [(g, "g")], inplace_ok=("g",))
    return p, g, v, lr, momentum, dampening, weight_decay, nesterov, first


def check_adam_args(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decoupled: bool = False):
    p = check_inplace(p, "p")
    g = check_kernel_input(g, "g")
    if g.shape != p.shape:
        raise ValueError(f"g must have the shape of p {p.shape}, got {g.shape}")
    m = check_inplace(m, "m", p.shape)
    v = check_inplace(v, "v", p.shape)
    check_outs([(m, "m"), (v, "v")], [(p, "p"), (g, "g")])
    check_outs([(p, "p")], [(g, "g")], inplace_ok=("g",))
    t = check_int(t, "t", minimum=1)
    if t > 2**62:
        raise ValueError(f"t must be <= 2**62, got {t}")
    lr = check_f32(lr, "lr")
    beta1 = check_f32(beta1, "beta1")
    beta2 = check_f32(beta2, "beta2")
    eps = check_f32(eps, "eps", minimum=0.0)
    for name, b in (("beta1", beta1), ("beta2", beta2)):  # 1 - beta**t is a divisor
        if not 0.0 <= float(np.float32(b)) < 1.0:
            raise ValueError(f"{name} must be in [0, 1) (as a float32), got {b}")
    weight_decay = check_f32(weight_decay, "weight_decay")
    decoupled = check_bool(decoupled, "decoupled")
    return p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decoupled
