"""Argument checks and geometry of the pooling kernels (``src/engine_c/pool.c``): max pooling
(alone or with a ReLU's backward), average and global average pooling."""

from __future__ import annotations

import numpy as np

from .arrays import MAX_FLOATS, check_int, check_kernel_input, check_shape

_MAX_PLANE = 2**31 - 1


def pool_geometry(x_shape, size, stride, pad=0):
    """``(N, C, H, W, HO, WO, size, stride)`` of a pooling; ``pad`` (max pooling only) pads every
    side implicitly, as torch: ``HO = (H + 2*pad - size)//stride + 1``, ``2*pad <= size``."""
    N, C, H, W = check_shape(x_shape, "x.shape", 4)
    size = check_int(size, "size", 1)
    stride = check_int(stride, "stride", 1)
    pad = check_pool_pad(pad, size)
    if H + 2 * pad < size or W + 2 * pad < size:
        padded = f" (padded by {pad})" if pad else ""
        raise ValueError(f"pooling window {size}x{size} is larger than the input {H}x{W}{padded}")
    if stride > MAX_FLOATS:
        raise ValueError(f"stride must be <= 2**56, got {stride}")
    if (H + 2 * pad) * (W + 2 * pad) > _MAX_PLANE:
        raise ValueError(
            f"x.shape {(N, C, H, W)}: an H*W plane must hold at most 2**31 - 1 values (the argmax is int32)"
        )
    return N, C, H, W, (H + 2 * pad - size) // stride + 1, (W + 2 * pad - size) // stride + 1, size, stride


def check_pool_pad(pad, size):
    """A max pooling's implicit padding: an int >= 0 with ``2*pad <= size`` (torch's rule: every
    window then holds at least one input value). Raises TypeError/ValueError."""
    if type(pad) is int and pad == 0:
        return 0
    pad = check_int(pad, "pad", 0)
    if 2 * pad > size:
        raise ValueError(f"pad must be at most half the window size ({size}//2 = {size // 2}), got {pad}")
    return pad


def check_pool_backward(dy, argmax, x_shape):
    dy = check_kernel_input(dy, "dy", 4)
    N, C, H, W = check_shape(x_shape, "x_shape", 4)
    if H * W > _MAX_PLANE:
        raise ValueError(
            f"x_shape {(N, C, H, W)}: an H*W plane must hold at most 2**31 - 1 values (the argmax is int32)"
        )
    if dy.shape[:2] != (N, C):
        raise ValueError(
            f"dy must have shape ({N}, {C}, HO, WO) to match x_shape {(N, C, H, W)}, got {dy.shape}"
        )
    if not isinstance(argmax, np.ndarray) or argmax.dtype != np.int32:
        got = argmax.dtype if isinstance(argmax, np.ndarray) else type(argmax).__name__
        raise TypeError(f"argmax must be an int32 numpy.ndarray, got {got}")
    if argmax.shape != dy.shape:
        raise ValueError(f"argmax must have the shape of dy {dy.shape}, got {argmax.shape}")
    argmax = np.ascontiguousarray(argmax)
    return dy, argmax, (N, C, H, W)


def bad_argmax(H, W):
    return ValueError(f"argmax entries must lie in [0, {H * W}) (offsets into an {H}x{W} plane)")


def check_pool_relu_backward(dy, argmax, y, x_shape):
    dy, argmax, x_shape = check_pool_backward(dy, argmax, x_shape)
    y = check_kernel_input(y, "y", 4)
    if y.shape != dy.shape:
        raise ValueError(f"y must have the shape of dy {dy.shape} (the pooling's output), got {y.shape}")
    return dy, argmax, y, x_shape


def check_argmax_range(argmax, H, W):
    """Every pooling argmax entry must be an offset in an H x W plane (``ValueError``)."""
    if argmax.size and (int(argmax.min()) < 0 or int(argmax.max()) >= H * W):
        raise bad_argmax(H, W)


def check_avgpool_backward(dy, x_shape, size, stride):
    """Validated (dy, geometry) of ``avgpool2d_backward``: dy must be (N, C, HO, WO) of the
    pooling of ``x_shape`` by ``size`` / ``stride``."""
    dy = check_kernel_input(dy, "dy", 4)
    geo = pool_geometry(x_shape, size, stride)
    want = geo[:2] + geo[4:6]
    if dy.shape != want:
        raise ValueError(f"dy must have shape {want} (the pooling of x_shape {geo[:4]}), got {dy.shape}")
    return dy, geo


def check_global_pool_backward(dy, x_shape):
    """Validated (dy, x_shape) of ``global_avgpool2d_backward``: dy (N, C), x_shape (N, C, H, W)."""
    dy = check_kernel_input(dy, "dy", 2)
    x_shape = check_shape(x_shape, "x_shape", 4)
    if dy.shape != x_shape[:2]:
        raise ValueError(f"dy must have shape {x_shape[:2]} to match x_shape {x_shape}, got {dy.shape}")
    if x_shape[2] * x_shape[3] == 0:
        raise ValueError(f"x_shape must have H, W >= 1, got {x_shape}")
    return dy, x_shape
