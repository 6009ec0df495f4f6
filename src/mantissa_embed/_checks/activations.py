"""Argument checks of the element-wise activation kernels (``src/engine_c/activations.c``): ReLU,
leaky ReLU, dropout, and the activation codes of the conv / dense epilogues."""

from __future__ import annotations

from .arrays import F32_MAX, check_f32, check_kernel_input, check_kernel_output, check_outs

#: the activation codes of the conv / dense kernels (engine.h's ME_ACT_*)
ACT_CODES = {"identity": 0, "relu": 1, "leaky_relu": 2}


def act_flag(act, name: str = "act"):
    """None/"identity" -> 0, "relu" -> 1, "leaky_relu" -> 2 (engine.h's ME_ACT_*); anything
    else raises (naming ``name``)."""
    if act is None:
        return 0
    if isinstance(act, str) and act in ACT_CODES:
        return ACT_CODES[act]
    if not isinstance(act, str):
        raise TypeError(f"{name} must be None, 'identity', 'relu' or 'leaky_relu', got {type(act).__name__}")
    raise ValueError(f"{name} must be None, 'identity', 'relu' or 'leaky_relu', got {act!r}")


def check_negative_slope(v, name: str = "negative_slope"):
    """The leaky ReLU's slope for x < 0: a finite float >= 0 (the backward reads the sign of the
    output, which is the sign of the input only for a slope >= 0). Raises TypeError/ValueError."""
    if type(v) is float and 0.0 <= v <= F32_MAX:
        return v
    return check_f32(v, name, minimum=0.0)


def check_act_args(x, out):
    """Validated (x, out) of an element-wise activation forward (``out`` may be ``x``)."""
    x = check_kernel_input(x, "x")
    out = check_kernel_output(out, "out", x.shape)
    check_outs([(out, "out")], [(x, "x")], inplace_ok=("x",))
    return x, out


def check_act_backward_args(dy, y, dx):
    """Validated (dy, y, dx) of an activation backward from its output y (``dx`` may be ``dy``)."""
    dy = check_kernel_input(dy, "dy")
    y = check_kernel_input(y, "y")
    if y.shape != dy.shape:
        raise ValueError(f"y must have the shape of dy {dy.shape}, got {y.shape}")
    dx = check_kernel_output(dx, "dx", dy.shape)
    check_outs([(dx, "dx")], [(dy, "dy"), (y, "y")], inplace_ok=("dy", "y"))
    return dy, y, dx


def check_dropout_args(x, mask, out, xname: str = "x", outname: str = "out"):
    """Validated (x, mask, out) of a dropout pass: mask float32 of x's shape; ``out`` may be ``x``."""
    x = check_kernel_input(x, xname)
    mask = check_kernel_input(mask, "mask")
    if mask.shape != x.shape:
        raise ValueError(f"mask must have the shape of {xname} {x.shape}, got {mask.shape}")
    out = check_kernel_output(out, outname, x.shape)
    check_outs([(out, outname)], [(x, xname), (mask, "mask")], inplace_ok=(xname,))
    return x, mask, out
