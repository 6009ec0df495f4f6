"""Numpy twins of the convolution kernels (``mantissa_embed._engine._conv``).

Same names, signatures, checks and errors as the engine. The convolution is an explicit im2col (a
strided copy per kernel tap) and a matmul, the algorithm of ``src/engine_c/conv.c``: the two agree up
to float32 rounding. ``_conv2d`` and ``_conv2d_grads`` keep their input dtype (float64 finite
differences in the tests). Scratch sizes are the engine's.
"""

from __future__ import annotations

import numpy as np

from .._checks.activations import act_flag, check_negative_slope
from .._checks.arrays import check_kernel_output, check_outs, store_grad
from .._checks.conv import (
    check_chain_args,
    check_conv_args,
    check_conv_backward_args,
    check_pool2_output,
    check_workspace,
)
from ..engine import conv2d_pool2_chain_workspace_size, conv2d_workspace_size
from ._activations import _act
from ._pool import _maxpool2d

__all__ = [
    "conv2d_workspace_size",
    "conv2d_forward",
    "conv2d_backward",
    "conv2d_pool2_forward",
    "conv2d_pool2_chain_workspace_size",
    "conv2d_pool2_chain_forward",
]


def _im2col(x, KH, KW, stride, pad, HO, WO):
    """x (N,C,H,W) -> cols (N, C, KH, KW, HO, WO), zero outside the image."""
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    cols = np.empty((N, C, KH, KW, HO, WO), dtype=x.dtype)
    for i in range(KH):
        for j in range(KW):
            cols[:, :, i, j] = xp[:, :, i : i + stride * HO : stride, j : j + stride * WO : stride]
    return cols


def _col2im(cols, x_shape, stride, pad):
    """cols (N, C, KH, KW, HO, WO) -> dx (N,C,H,W): each tap added back to its pixel."""
    N, C, H, W = x_shape
    _, _, KH, KW, HO, WO = cols.shape
    dxp = np.zeros((N, C, H + 2 * pad, W + 2 * pad), dtype=cols.dtype)
    for i in range(KH):
        for j in range(KW):
            dxp[:, :, i : i + stride * HO : stride, j : j + stride * WO : stride] += cols[:, :, i, j]
    return dxp[:, :, pad : pad + H, pad : pad + W]


def _conv2d(x, w, b, stride, pad):
    """y (N,F,HO,WO) = conv2d(x, w) + b, in the dtype of x."""
    N, C, H, W = x.shape
    F, _, KH, KW = w.shape
    HO = (H + 2 * pad - KH) // stride + 1
    WO = (W + 2 * pad - KW) // stride + 1
    cols = _im2col(x, KH, KW, stride, pad, HO, WO).reshape(N, C * KH * KW, HO * WO)
    y = np.matmul(w.reshape(F, C * KH * KW), cols)  # (N, F, P)
    if b is not None:
        y += b[:, None]
    return y.reshape(N, F, HO, WO)


def _conv2d_grads(x, w, dy, stride, pad):
    """(dx, dw, db) of conv2d for the upstream gradient dy (N,F,HO,WO), in the dtype of x."""
    N, C, H, W = x.shape
    F, _, KH, KW = w.shape
    HO, WO = dy.shape[2], dy.shape[3]
    cols = _im2col(x, KH, KW, stride, pad, HO, WO).reshape(N, C * KH * KW, HO * WO)
    dy2 = dy.reshape(N, F, HO * WO)
    w2 = w.reshape(F, C * KH * KW)
    dw = np.einsum("nfp,nkp->fk", dy2, cols).reshape(w.shape)
    db = dy2.sum(axis=(0, 2))
    dcols = np.matmul(w2.T, dy2).reshape(N, C, KH, KW, HO, WO)
    dx = _col2im(dcols, x.shape, stride, pad)
    return dx, dw, db


def conv2d_forward(x, w, b, stride, pad, out=None, workspace=None, act=None, negative_slope: float = 0.01):
    """2-D convolution (cross-correlation, as ``torch.nn.functional.conv2d``), NCHW.

    x (N,C,H,W), w (F,C,KH,KW), b (F,) or None -> out (N,F,HO,WO) float32 with
    ``HO = (H + 2*pad - KH) // stride + 1`` (zero padding). ``out`` and ``workspace``
    (1-D float32, >= ``conv2d_workspace_size``) may be passed to avoid allocation.
    ``act``: None / "identity" (default), "relu" (``max(0, .)``) or "leaky_relu" (slope
    ``negative_slope`` >= 0 below 0), applied after the bias (fused into the C kernel's store).
    Raises ValueError / TypeError naming the offending argument.
    """
    code = act_flag(act)
    slope = check_negative_slope(negative_slope)
    x, w, b, (N, C, H, W, F, KH, KW, HO, WO) = check_conv_args(x, w, b, stride, pad)
    out = check_kernel_output(out, "out", (N, F, HO, WO))
    check_workspace(workspace, conv2d_workspace_size(x.shape, w.shape, stride, pad))
    check_outs([(out, "out"), (workspace, "workspace")], [(x, "x"), (w, "w"), (b, "b")])
    out[...] = _act(_conv2d(x, w, b, stride, pad), code, slope)  # NaN stays NaN
    return out


def conv2d_backward(
    x,
    w,
    dy,
    stride,
    pad,
    dx=None,
    dw=None,
    db=None,
    need_dx: bool = True,
    accumulate: bool = False,
    workspace=None,
    need_db: bool = True,
):
    """Gradients of ``conv2d_forward`` for the upstream gradient dy (N,F,HO,WO).

    Returns ``(dx, dw, db)``: dx (N,C,H,W) (None when ``need_dx`` is False; overwritten),
    dw (F,C,KH,KW) and db (F,) (new arrays when None; when given they are overwritten, or
    added to when ``accumulate`` is True); db is None (not computed) when ``need_db`` is False.
    """
    x, w, dy, geo, dx, dw, db, need_dx, accumulate = check_conv_backward_args(
        x, w, dy, stride, pad, dx, dw, db, need_dx, accumulate, need_db
    )
    N, C, H, W, F, KH, KW, HO, WO = geo
    check_workspace(workspace, conv2d_workspace_size(x.shape, w.shape, stride, pad))
    check_outs(
        [(dx, "dx"), (dw, "dw"), (db, "db"), (workspace, "workspace")], [(x, "x"), (w, "w"), (dy, "dy")]
    )
    gx, gw, gb = _conv2d_grads(x, w, dy, stride, pad)
    if need_dx:
        dx[...] = gx
    store_grad(dw, gw, accumulate)
    if db is not None:
        store_grad(db, gb, accumulate)
    return dx, dw, db


def conv2d_pool2_forward(
    x, w, b, stride, pad, out=None, workspace=None, act=None, negative_slope: float = 0.01
):
    """Inference fusion: ``maxpool2d(conv2d_forward(x, w, b, stride, pad, act=act), 2, 2)``.

    x (N,C,H,W), w (F,C,KH,KW), b (F,) or None -> out (N,F,HO//2,WO//2) float32 (HO, WO the
    convolution's output size, >= 2; floor mode; NaN propagates). No argmax is produced (no
    backward). ``workspace``: as for ``conv2d_forward``. Raises ValueError / TypeError.
    """
    code = act_flag(act)
    slope = check_negative_slope(negative_slope)
    x, w, b, (N, C, H, W, F, KH, KW, HO, WO) = check_conv_args(x, w, b, stride, pad)
    check_pool2_output(HO, WO)
    out = check_kernel_output(out, "out", (N, F, HO // 2, WO // 2))
    check_workspace(workspace, conv2d_workspace_size(x.shape, w.shape, stride, pad))
    check_outs([(out, "out"), (workspace, "workspace")], [(x, "x"), (w, "w"), (b, "b")])
    y = _act(_conv2d(x, w, b, stride, pad), code, slope)
    out[...] = _maxpool2d(np.ascontiguousarray(y, dtype=np.float32), 2, 2)[0]
    return out


def conv2d_pool2_chain_forward(
    x,
    w1,
    b1,
    stride1,
    pad1,
    w2,
    b2,
    stride2,
    pad2,
    act1=None,
    act2=None,
    out=None,
    workspace=None,
    negative_slope1: float = 0.01,
    negative_slope2: float = 0.01,
):
    """Two inference stages in one call: ``conv2d_pool2_forward(conv2d_pool2_forward(x, w1, b1,
    stride1, pad1, act=act1), w2, b2, stride2, pad2, act=act2)``.

    x (N,C,H,W), w1 (F1,C,KH1,KW1), b1 (F1,) or None, w2 (F2,F1,KH2,KW2), b2 (F2,) or None ->
    out (N,F2,HO2//2,WO2//2) float32, HO2 the second convolution's output height on the first
    stage's pooled output (both convolution outputs must be at least 2x2). ``workspace``:
    ``conv2d_pool2_chain_workspace_size`` floats or None. Raises ValueError / TypeError.
    """
    act_flag(act1, "act1"), act_flag(act2, "act2")
    s1 = check_negative_slope(negative_slope1, "negative_slope1")
    s2 = check_negative_slope(negative_slope2, "negative_slope2")
    x, w1, b1, w2, b2, g1, g2 = check_chain_args(x, w1, b1, stride1, pad1, w2, b2, stride2, pad2)
    out = check_kernel_output(out, "out", (g2[0], g2[4], g2[7] // 2, g2[8] // 2))
    check_workspace(
        workspace,
        conv2d_pool2_chain_workspace_size(x.shape, w1.shape, stride1, pad1, w2.shape, stride2, pad2),
        "conv2d_pool2_chain_workspace_size",
    )
    check_outs(
        [(out, "out"), (workspace, "workspace")], [(x, "x"), (w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2")]
    )
    z = conv2d_pool2_forward(x, w1, b1, stride1, pad1, act=act1, negative_slope=s1)
    return conv2d_pool2_forward(z, w2, b2, stride2, pad2, out=out, act=act2, negative_slope=s2)
