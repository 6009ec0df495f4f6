"""Numpy twins of the max-pooling kernels (:mod:`mantissa_embed._engine._pool`).

Same names, signatures, checks and errors as the engine; the argmax is an int32 offset in one H*W
plane (ties: the first maximum in row-major window order; NaN wins, as in torch). ``_maxpool2d``
keeps its input dtype.
"""
from __future__ import annotations

import numpy as np

from .._checks.arrays import check_kernel_input, check_kernel_output, check_outs
from .._checks.layers import (check_argmax_range, check_pool_backward, check_pool_relu_backward,
                              pool_geometry)

__all__ = [
    "maxpool2d_forward",
    "maxpool2d_backward",
    "maxpool2d_relu_backward",
]


def _maxpool2d(x, size, stride):
    """(y, argmax) of max pooling; ties: first maximum in row-major window order; NaN wins."""
    N, C, H, W = x.shape
    HO = (H - size) // stride + 1
    WO = (W - size) // stride + 1
    y = None
    arg = np.zeros((N, C, HO, WO), dtype=np.int32)
    rows = np.arange(HO)[:, None] * stride
    cols = np.arange(WO)[None, :] * stride
    for i in range(size):
        for j in range(size):
            v = x[:, :, i:i + stride * HO:stride, j:j + stride * WO:stride][:, :, :HO, :WO]
            idx = ((rows + i) * W + (cols + j)).astype(np.int32)
            if y is None:
                y = v.copy()
                arg[...] = idx
                continue
            better = (v > y) | np.isnan(v)
            y = np.where(better, v, y)
            arg = np.where(better, idx, arg).astype(np.int32)
    return y, arg


def _maxpool2d_grad(dy, argmax, x_shape):
    N, C, H, W = x_shape
    dx = np.zeros((N * C, H * W), dtype=dy.dtype)
    flat_dy = dy.reshape(N * C, dy.shape[2] * dy.shape[3])  # explicit: -1 is ambiguous when N*C == 0
    flat_arg = argmax.reshape(N * C, dy.shape[2] * dy.shape[3])
    for pl in range(N * C):
        np.add.at(dx[pl], flat_arg[pl], flat_dy[pl])
    return dx.reshape(N, C, H, W)


def maxpool2d_forward(x, size, stride, out=None, argmax=None):
    """2-D max pooling (no padding, floor mode), as ``torch.nn.functional.max_pool2d``.

    x (N,C,H,W) -> ``(out, argmax)``: out (N,C,HO,WO) float32 with ``HO = (H - size)//stride + 1``,
    argmax (N,C,HO,WO) int32, the offset of the maximum in its H*W plane (ties: the first
    maximum in row-major window order; a NaN wins, as in torch).
    """
    x = check_kernel_input(x, "x", 4)
    N, C, H, W, HO, WO, size, stride = pool_geometry(x.shape, size, stride)
    out = check_kernel_output(out, "out", (N, C, HO, WO))
    argmax = check_kernel_output(argmax, "argmax", (N, C, HO, WO), dtype=np.int32)
    check_outs([(out, "out"), (argmax, "argmax")], [(x, "x")])
    y, a = _maxpool2d(x, size, stride)
    out[...] = y
    argmax[...] = a
    return out, argmax


def maxpool2d_backward(dy, argmax, x_shape, dx=None):
    """Gradient of ``maxpool2d_forward``: dy (N,C,HO,WO), argmax (N,C,HO,WO) int32 ->
    dx (N,C,H,W) (overwritten; windows that overlap add their contributions).
    Raises ValueError when an argmax entry lies outside [0, H*W)."""
    dy, argmax, x_shape = check_pool_backward(dy, argmax, x_shape)
    dx = check_kernel_output(dx, "dx", x_shape)
    check_outs([(dx, "dx")], [(dy, "dy"), (argmax, "argmax")])
    H, W = x_shape[2], x_shape[3]
    check_argmax_range(argmax, H, W)
    dx[...] = _maxpool2d_grad(dy, argmax, x_shape)
    return dx


def maxpool2d_relu_backward(dy, argmax, y, x_shape, dx=None):
    """Max pooling backward fused with the backward of the ReLU feeding the pooling: dy, argmax
    (int32), y (the pooling's output), all (N,C,HO,WO) -> dx (N,C,H,W), overwritten, equal to
    ``relu_backward(maxpool2d_backward(dy, argmax, x_shape), r)`` for the pooled ReLU output r
    (at each argmax r equals y, so the mask is y > 0, applied as a select before the scatter).
    Raises ValueError when an argmax entry lies outside [0, H*W)."""
    dy, argmax, y, x_shape = check_pool_relu_backward(dy, argmax, y, x_shape)
    dx = check_kernel_output(dx, "dx", x_shape)
    check_outs([(dx, "dx")], [(dy, "dy"), (argmax, "argmax"), (y, "y")])
    H, W = x_shape[2], x_shape[3]
    check_argmax_range(argmax, H, W)
    dx[...] = _maxpool2d_grad(np.where(y > 0, dy, np.float32(0)), argmax, x_shape)
    return dx
