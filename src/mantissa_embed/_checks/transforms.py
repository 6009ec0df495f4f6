"""Argument checks of the transforms kernels (``src/engine_c/transforms.c``), shared by the
engine module and its numpy twin."""

from __future__ import annotations

import numpy as np

from .arrays import check_bool, check_kernel_input, check_kernel_output, check_outs


def check_affine_args(x, theta):
    """x (N,C,H,W) and theta (N,2,3) as float32 C-contiguous; theta finite."""
    x = check_kernel_input(x, "x", 4)
    theta = check_kernel_input(theta, "theta", 3)
    if theta.shape != (x.shape[0], 2, 3):
        raise ValueError(
            f"theta must have shape ({x.shape[0]}, 2, 3) (one 2x3 matrix per image of x "
            f"{x.shape}), got {theta.shape}"
        )
    if theta.size and not np.isfinite(theta).all():
        raise ValueError("theta contains NaN or Inf")
    return x, theta


def check_affine_forward(x, theta, out):
    x, theta = check_affine_args(x, theta)
    out = check_kernel_output(out, "out", x.shape)
    check_outs([(out, "out")], [(x, "x"), (theta, "theta")])
    return x, theta, out


def check_affine_backward(x, theta, dy, need_dx, need_dtheta, dx, dtheta):
    """Validated (x, theta, dy, dx, dtheta); dx / dtheta None when not needed."""
    x, theta = check_affine_args(x, theta)
    dy = check_kernel_input(dy, "dy", 4)
    if dy.shape != x.shape:
        raise ValueError(f"dy must have the shape of x {x.shape}, got {dy.shape}")
    dx = check_kernel_output(dx, "dx", x.shape) if check_bool(need_dx, "need_dx") else None
    dtheta = (
        check_kernel_output(dtheta, "dtheta", theta.shape) if check_bool(need_dtheta, "need_dtheta") else None
    )
    check_outs([(dx, "dx"), (dtheta, "dtheta")], [(x, "x"), (theta, "theta"), (dy, "dy")])
    return x, theta, dy, dx, dtheta
