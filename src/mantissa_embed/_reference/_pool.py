"""Numpy twins of the max- and average-pooling kernels (``mantissa_embed._engine._pool``).

Same names, signatures, checks and errors as the engine; the argmax is an int32 offset in one H*W
plane (ties: the first maximum in row-major window order; NaN wins, as in torch). ``_maxpool2d``
keeps its input dtype.
"""

from __future__ import annotations

import numpy as np

from .._checks.arrays import check_kernel_input, check_kernel_output, check_outs
from .._checks.pool import (
    check_argmax_range,
    check_avgpool_backward,
    check_global_pool_backward,
    check_pool_backward,
    check_pool_pad,
    check_pool_relu_backward,
    pool_geometry,
)

__all__ = [
    "maxpool2d_forward",
    "maxpool2d_backward",
    "maxpool2d_relu_backward",
    "avgpool2d_forward",
    "avgpool2d_backward",
    "global_avgpool2d_forward",
    "global_avgpool2d_backward",
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
            v = x[:, :, i : i + stride * HO : stride, j : j + stride * WO : stride][:, :, :HO, :WO]
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


def _pad_input(x, pad):
    """``x`` (N,C,H,W) float32 in a fresh (N,C,H+2*pad,W+2*pad) array with -inf borders: the
    padding of a max pooling, which never wins a maximum."""
    N, C, H, W = x.shape
    xp = np.full((N, C, H + 2 * pad, W + 2 * pad), -np.inf, dtype=np.float32)
    xp[:, :, pad : pad + H, pad : pad + W] = x
    return xp


def _unpad_argmax(argmax, H, W, pad):
    """Map, in place, argmax offsets into the padded (H+2*pad)x(W+2*pad) plane to offsets into the
    HxW input plane. A window whose input values are all -inf has its maximum at its first
    (padded) position; clamping the row and column then gives its first input position, as
    torch's kernel does."""
    Wp = W + 2 * pad
    r = argmax // Wp - pad
    c = argmax % Wp - pad
    np.clip(r, 0, H - 1, out=r)
    np.clip(c, 0, W - 1, out=c)
    np.multiply(r, W, out=r)
    np.add(r, c, out=argmax)
    return argmax


def maxpool2d_forward(x, size, stride, out=None, argmax=None, pad=0):
    """2-D max pooling (floor mode), as ``torch.nn.functional.max_pool2d(x, size, stride, pad)``.

    x (N,C,H,W) -> ``(out, argmax)``: out (N,C,HO,WO) float32 with
    ``HO = (H + 2*pad - size)//stride + 1``, argmax (N,C,HO,WO) int32, the offset of the maximum
    in its H*W input plane (ties: the first maximum in row-major window order; a NaN wins, as in
    torch). ``pad`` (int, 0 <= 2*pad <= size): implicit -inf padding, which never wins.
    """
    x = check_kernel_input(x, "x", 4)
    N, C, H, W, HO, WO, size, stride = pool_geometry(x.shape, size, stride, pad)
    pad = check_pool_pad(pad, size)  # validated by pool_geometry: an int
    out = check_kernel_output(out, "out", (N, C, HO, WO))
    argmax = check_kernel_output(argmax, "argmax", (N, C, HO, WO), dtype=np.int32)
    check_outs([(out, "out"), (argmax, "argmax")], [(x, "x")])
    y, a = _maxpool2d(_pad_input(x, pad) if pad else x, size, stride)
    out[...] = y
    argmax[...] = a
    if pad:
        _unpad_argmax(argmax, H, W, pad)
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


def _avgpool2d(x, size, stride):
    """Window means of x (N,C,H,W), in the dtype of x (float64 finite differences in the tests)."""
    N, C, H, W = x.shape
    HO, WO = (H - size) // stride + 1, (W - size) // stride + 1
    y = np.zeros((N, C, HO, WO), dtype=x.dtype)
    for i in range(size):
        for j in range(size):
            y += x[:, :, i : i + stride * (HO - 1) + 1 : stride, j : j + stride * (WO - 1) + 1 : stride]
    return y / (size * size)


def _avgpool2d_grad(dy, x_shape, size, stride):
    N, C, H, W = x_shape
    HO, WO = dy.shape[2], dy.shape[3]
    dx = np.zeros(x_shape, dtype=dy.dtype)
    for i in range(size):
        for j in range(size):
            dx[:, :, i : i + stride * (HO - 1) + 1 : stride, j : j + stride * (WO - 1) + 1 : stride] += dy / (
                size * size
            )
    return dx


def avgpool2d_forward(x, size, stride, out=None):
    """2-D average pooling, as ``torch.nn.functional.avg_pool2d(x, size, stride)`` (no padding,
    floor mode): x (N,C,H,W) -> out (N,C,HO,WO) float32, ``HO = (H - size)//stride + 1``."""
    x = check_kernel_input(x, "x", 4)
    N, C, H, W, HO, WO, size, stride = pool_geometry(x.shape, size, stride)
    out = check_kernel_output(out, "out", (N, C, HO, WO))
    check_outs([(out, "out")], [(x, "x")])
    out[...] = _avgpool2d(x, size, stride)
    return out


def avgpool2d_backward(dy, x_shape, size, stride, dx=None):
    """Gradient of ``avgpool2d_forward``: dy (N,C,HO,WO) -> dx (x_shape) float32, overwritten
    (each ``dy / size**2`` added to its window)."""
    dy, geo = check_avgpool_backward(dy, x_shape, size, stride)
    dx = check_kernel_output(dx, "dx", geo[:4])
    check_outs([(dx, "dx")], [(dy, "dy")])
    dx[...] = _avgpool2d_grad(dy, geo[:4], geo[6], geo[7])
    return dx


def global_avgpool2d_forward(x, out=None):
    """Global average pooling: x (N,C,H,W) -> out (N,C) float32, the mean of each plane."""
    x = check_kernel_input(x, "x", 4)
    if x.shape[2] * x.shape[3] == 0:
        raise ValueError(f"x must have H, W >= 1, got shape {x.shape}")
    out = check_kernel_output(out, "out", x.shape[:2])
    check_outs([(out, "out")], [(x, "x")])
    out[...] = x.mean(axis=(2, 3))
    return out


def global_avgpool2d_backward(dy, x_shape, dx=None):
    """Gradient of ``global_avgpool2d_forward``: dy (N,C) -> dx (N,C,H,W) = dy / (H*W), overwritten."""
    dy, x_shape = check_global_pool_backward(dy, x_shape)
    dx = check_kernel_output(dx, "dx", x_shape)
    check_outs([(dx, "dx")], [(dy, "dy")])
    dx[...] = (dy / (x_shape[2] * x_shape[3]))[:, :, None, None]
    return dx
