"""Argument checks and geometry of the convolution kernels (``src/engine_c/conv.c``): the plain
convolution, its fused 2x2 pooling and two-stage chain, its backward and its workspace."""

from __future__ import annotations

import numpy as np

from .arrays import (
    MAX_FLOATS,
    check_bias,
    check_bool,
    check_int,
    check_kernel_input,
    check_kernel_output,
    check_shape,
    grad_buf,
)


def conv_geometry(x_shape, w_shape, stride, pad, suffix: str = ""):
    """(N, C, H, W, F, KH, KW, HO, WO) of a convolution, validated; ``suffix`` is appended to the
    names of w, stride and pad in the errors (the stages of a chain: "1", "2")."""
    N, C, H, W = check_shape(x_shape, "x.shape", 4)
    F, Cw, KH, KW = check_shape(w_shape, f"w{suffix}.shape", 4)
    stride = check_int(stride, f"stride{suffix}", 1)
    pad = check_int(pad, f"pad{suffix}", 0)
    if Cw != C:
        raise ValueError(
            f"w{suffix} has {Cw} input channels but x has {C} (w{suffix}: {tuple(w_shape)}, "
            f"x: {tuple(x_shape)})"
        )
    if KH < 1 or KW < 1:
        raise ValueError(f"kernel size must be >= 1, got w.shape {tuple(w_shape)}")
    if H + 2 * pad < KH or W + 2 * pad < KW:
        raise ValueError(
            f"kernel {KH}x{KW} is larger than the padded input {H + 2 * pad}x{W + 2 * pad} "
            f"(x.shape {tuple(x_shape)}, pad {pad})"
        )
    if stride > MAX_FLOATS:
        raise ValueError(f"stride must be <= 2**56, got {stride}")
    HO = (H + 2 * pad - KH) // stride + 1
    WO = (W + 2 * pad - KW) // stride + 1
    Hp, Wp = H + 2 * pad, W + 2 * pad
    if max(C * Hp * Wp, N * F * HO * WO, C * KH * KW * HO * Wp, F * HO * Wp) > MAX_FLOATS:
        raise ValueError(
            f"the convolution is too large (x.shape {tuple(x_shape)}, w.shape {tuple(w_shape)}, "
            f"stride {stride}, pad {pad}): its buffers would exceed 2**56 floats"
        )
    return N, C, H, W, F, KH, KW, HO, WO


def check_workspace(workspace, need, size_fn: str = "conv2d_workspace_size"):
    if workspace is None:
        return np.empty(need, dtype=np.float32)
    if not isinstance(workspace, np.ndarray):
        raise TypeError(f"workspace must be a numpy.ndarray, got {type(workspace).__name__}")
    if workspace.dtype != np.float32:
        raise TypeError(f"workspace must have dtype float32, got {workspace.dtype}")
    if workspace.ndim != 1 or not workspace.flags.c_contiguous or not workspace.flags.writeable:
        raise ValueError("workspace must be a writeable C-contiguous 1-D array")
    if workspace.shape[0] < need:
        raise ValueError(f"workspace must hold at least {need} floats ({size_fn}), got {workspace.shape[0]}")
    return workspace


def check_conv_args(x, w, b, stride, pad, wname: str = "w", bname: str = "b"):
    x = check_kernel_input(x, "x", 4)
    w = check_kernel_input(w, wname, 4)
    geo = conv_geometry(x.shape, w.shape, stride, pad)
    b = check_bias(b, geo[4], bname)
    return x, w, b, geo


def check_chain_args(x, w1, b1, stride1, pad1, w2, b2, stride2, pad2):
    """Validated arguments of a two-stage conv + pool chain and both stages' geometries."""
    x = check_kernel_input(x, "x", 4)
    w1 = check_kernel_input(w1, "w1", 4)
    w2 = check_kernel_input(w2, "w2", 4)
    g1, g2 = chain_geometries(x.shape, w1.shape, stride1, pad1, w2.shape, stride2, pad2)
    b1 = check_bias(b1, g1[4], "b1")
    b2 = check_bias(b2, g2[4], "b2")
    return x, w1, b1, w2, b2, g1, g2


def chain_geometries(x_shape, w1_shape, stride1, pad1, w2_shape, stride2, pad2):
    g1 = conv_geometry(x_shape, w1_shape, stride1, pad1, "1")
    if g1[7] < 2 or g1[8] < 2:
        raise ValueError(f"the first stage needs a convolution output of at least 2x2, got {g1[7]}x{g1[8]}")
    w2_shape = check_shape(w2_shape, "w2.shape", 4)
    if w2_shape[1] != g1[4]:
        raise ValueError(f"w2 must have {g1[4]} input channels (the filters of w1), got shape {w2_shape}")
    try:
        g2 = conv_geometry((g1[0], g1[4], g1[7] // 2, g1[8] // 2), w2_shape, stride2, pad2, "2")
    except ValueError as e:  # "x" there is the first stage's pooled output
        raise ValueError(f"the second stage (on the first stage's pooled output): {e}") from None
    if g2[7] < 2 or g2[8] < 2:
        raise ValueError(f"the second stage needs a convolution output of at least 2x2, got {g2[7]}x{g2[8]}")
    return g1, g2


def check_pool2_output(HO, WO):
    """The fused 2x2 pooling needs a convolution output of at least 2x2 (``ValueError``)."""
    if HO < 2 or WO < 2:
        raise ValueError(f"conv2d_pool2_forward needs a convolution output of at least 2x2, got {HO}x{WO}")


def check_conv_backward_args(x, w, dy, stride, pad, dx, dw, db, need_dx, accumulate, need_db: bool = True):
    """Validated (x, w, dy, geometry, dx, dw, db, need_dx, accumulate) of ``conv2d_backward``
    (the workspace is checked by the caller); db is None when ``need_db`` is False."""
    x, w, _, geo = check_conv_args(x, w, None, stride, pad)
    N, C, H, W, F, KH, KW, HO, WO = geo
    dy = check_kernel_input(dy, "dy", 4)
    if dy.shape != (N, F, HO, WO):
        raise ValueError(f"dy must have shape {(N, F, HO, WO)}, got {dy.shape}")
    need_dx = check_bool(need_dx, "need_dx")
    accumulate = check_bool(accumulate, "accumulate")
    dx = check_kernel_output(dx, "dx", x.shape) if need_dx else None
    dw = grad_buf(dw, "dw", w.shape, accumulate)
    db = grad_buf(db, "db", (F,), accumulate) if check_bool(need_db, "need_db") else None
    return x, w, dy, geo, dx, dw, db, need_dx, accumulate
