"""2-D max pooling and its backward, alone or fused with a ReLU's; average and global average
pooling (``src/engine_c/pool.c``)."""
import numpy as np

from libc.stdint cimport int32_t, int64_t

from mantissa_embed._checks.arrays import check_kernel_input, check_kernel_output, check_outs
from mantissa_embed._checks.pool import (bad_argmax, check_argmax_range, check_avgpool_backward,
                                         check_global_pool_backward, check_pool_backward,
                                         check_pool_pad, check_pool_relu_backward, pool_geometry)
from mantissa_embed._engine._cengine cimport (me_avgpool2d_backward, me_avgpool2d_forward,
                                             me_global_avgpool2d_backward,
                                             me_global_avgpool2d_forward,
                                             me_maxpool2d_backward_checked, me_maxpool2d_forward,
                                             me_maxpool2d_relu_backward)


__all__ = ['maxpool2d_forward', 'maxpool2d_backward', 'maxpool2d_relu_backward',
           'avgpool2d_forward', 'avgpool2d_backward', 'global_avgpool2d_forward',
           'global_avgpool2d_backward']


def maxpool2d_forward(x, size, stride, out=None, argmax=None, pad=0):
    """2-D max pooling (floor mode), as ``torch.nn.functional.max_pool2d(x, size, stride, pad)``.

    x (N,C,H,W) float32 -> ``(out, argmax)``: out (N,C,HO,WO), ``HO = (H + 2*pad - size)//stride + 1``;
    argmax (N,C,HO,WO) int32, the offset of each maximum in its H*W input plane (ties: the first
    maximum in row-major window order; NaN propagates as in torch). ``pad`` (int,
    0 <= 2*pad <= size): implicit -inf padding, which never wins (the kernel skips the taps
    outside the plane). Raises ValueError/TypeError.
    """
    cdef int64_t N, C, H, W, HO, WO, sz, st, pd
    cdef const float[:, :, :, ::1] xv
    cdef float[:, :, :, ::1] ov
    cdef int[:, :, :, ::1] av
    x = check_kernel_input(x, "x", 4)
    N, C, H, W, HO, WO, sz, st = pool_geometry(x.shape, size, stride, pad)
    pad = check_pool_pad(pad, sz)
    out = check_kernel_output(out, "out", (N, C, HO, WO))
    argmax = check_kernel_output(argmax, "argmax", (N, C, HO, WO), dtype=np.int32)
    check_outs([(out, "out"), (argmax, "argmax")], [(x, "x")])
    if out.size == 0:
        return out, argmax
    pd = pad
    xv = x
    ov = out
    av = argmax
    with nogil:
        me_maxpool2d_forward(&xv[0, 0, 0, 0], &ov[0, 0, 0, 0], <int32_t *> &av[0, 0, 0, 0],
                             N, C, H, W, sz, st, pd)
    return out, argmax


def maxpool2d_backward(dy, argmax, x_shape, dx=None):
    """Gradient of ``maxpool2d_forward``: dy (N,C,HO,WO), argmax (N,C,HO,WO) int32 ->
    dx (N,C,H,W) float32, overwritten (overlapping windows add up). Raises ValueError when
    an argmax entry lies outside [0, H*W) (checked inside the kernel, which skips such entries;
    ``dx`` is then partly written)."""
    cdef int64_t N, C, H, W, HO, WO
    cdef const float[:, :, :, ::1] dyv
    cdef const int[:, :, :, ::1] av
    cdef float[:, :, :, ::1] dxv
    cdef int64_t bad
    dy, argmax, x_shape = check_pool_backward(dy, argmax, x_shape)
    dx = check_kernel_output(dx, "dx", x_shape)
    check_outs([(dx, "dx")], [(dy, "dy"), (argmax, "argmax")])
    N, C, H, W = x_shape
    HO, WO = dy.shape[2], dy.shape[3]
    if dx.size == 0 or dy.size == 0:
        check_argmax_range(argmax, H, W)
        dx.fill(0)
        return dx
    dyv = dy
    av = argmax
    dxv = dx
    with nogil:
        bad = me_maxpool2d_backward_checked(&dyv[0, 0, 0, 0], <const int32_t *> &av[0, 0, 0, 0],
                                            &dxv[0, 0, 0, 0], N, C, H, W, HO, WO)
    if bad:
        raise bad_argmax(H, W)  # the kernel skipped them; dx is not meaningful
    return dx


def maxpool2d_relu_backward(dy, argmax, y, x_shape, dx=None):
    """Max pooling backward fused with the backward of the ReLU that feeds the pooling.

    dy (N,C,HO,WO) float32, argmax (N,C,HO,WO) int32 and y (N,C,HO,WO) float32 (the pooling's
    forward output) -> dx (N,C,H,W) float32, overwritten. Equals, bitwise,
    ``relu_backward(maxpool2d_backward(dy, argmax, x_shape), r)`` where ``r`` is the ReLU output
    that was pooled (at every argmax, ``r`` equals the pooled ``y``, so the mask is ``y > 0``),
    in one pass instead of two. Raises ValueError / TypeError for bad shapes or dtypes, and
    ValueError when an argmax entry lies outside [0, H*W).
    """
    cdef int64_t N, C, H, W, HO, WO
    cdef const float[:, :, :, ::1] dyv
    cdef const float[:, :, :, ::1] yv
    cdef const int[:, :, :, ::1] av
    cdef float[:, :, :, ::1] dxv
    cdef int64_t bad
    dy, argmax, y, x_shape = check_pool_relu_backward(dy, argmax, y, x_shape)
    dx = check_kernel_output(dx, "dx", x_shape)
    check_outs([(dx, "dx")], [(dy, "dy"), (argmax, "argmax"), (y, "y")])
    N, C, H, W = x_shape
    HO, WO = dy.shape[2], dy.shape[3]
    if dx.size == 0 or dy.size == 0:
        check_argmax_range(argmax, H, W)
        dx.fill(0)
        return dx
    dyv = dy
    yv = y
    av = argmax
    dxv = dx
    with nogil:
        bad = me_maxpool2d_relu_backward(&dyv[0, 0, 0, 0], <const int32_t *> &av[0, 0, 0, 0],
                                         &yv[0, 0, 0, 0], &dxv[0, 0, 0, 0], N, C, H, W, HO, WO)
    if bad:
        raise bad_argmax(H, W)  # the kernel skipped them; dx is not meaningful
    return dx


def avgpool2d_forward(x, size, stride, out=None):
    """2-D average pooling, as ``torch.nn.functional.avg_pool2d(x, size, stride)`` (no padding,
    floor mode, divisor ``size**2``). x (N,C,H,W) float32 -> out (N,C,HO,WO),
    ``HO = (H - size)//stride + 1``. Raises ValueError/TypeError (a window larger than x)."""
    cdef int64_t N, C, H, W, HO, WO, sz, st
    cdef const float[:, :, :, ::1] xv
    cdef float[:, :, :, ::1] ov
    x = check_kernel_input(x, "x", 4)
    N, C, H, W, HO, WO, sz, st = pool_geometry(x.shape, size, stride)
    out = check_kernel_output(out, "out", (N, C, HO, WO))
    check_outs([(out, "out")], [(x, "x")])
    if out.size == 0:
        return out
    xv = x
    ov = out
    with nogil:
        me_avgpool2d_forward(&xv[0, 0, 0, 0], &ov[0, 0, 0, 0], N, C, H, W, sz, st)
    return out


def avgpool2d_backward(dy, x_shape, size, stride, dx=None):
    """Gradient of ``avgpool2d_forward``: dy (N,C,HO,WO) float32 -> dx (x_shape) float32,
    overwritten: each ``dy / size**2`` added to its window (pixels in no window get 0).
    Raises ValueError/TypeError."""
    cdef int64_t N, C, H, W, sz, st
    cdef const float[:, :, :, ::1] dyv
    cdef float[:, :, :, ::1] dxv
    dy, geo = check_avgpool_backward(dy, x_shape, size, stride)
    N, C, H, W = geo[:4]
    sz, st = geo[6], geo[7]
    dx = check_kernel_output(dx, "dx", (N, C, H, W))
    check_outs([(dx, "dx")], [(dy, "dy")])
    if dx.size == 0:
        return dx
    dyv = dy
    dxv = dx
    with nogil:
        me_avgpool2d_backward(&dyv[0, 0, 0, 0], &dxv[0, 0, 0, 0], N, C, H, W, sz, st)
    return dx


def global_avgpool2d_forward(x, out=None):
    """Global average pooling, as ``torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)``:
    x (N,C,H,W) float32 -> out (N,C), the mean of each H*W plane. Raises ValueError/TypeError
    (an empty plane)."""
    cdef int64_t N, C, H, W
    cdef const float[:, :, :, ::1] xv
    cdef float[:, ::1] ov
    x = check_kernel_input(x, "x", 4)
    N, C, H, W = x.shape
    if H * W == 0:
        raise ValueError(f"x must have H, W >= 1, got shape {x.shape}")
    out = check_kernel_output(out, "out", (N, C))
    check_outs([(out, "out")], [(x, "x")])
    if out.size == 0:
        return out
    xv = x
    ov = out
    with nogil:
        me_global_avgpool2d_forward(&xv[0, 0, 0, 0], &ov[0, 0], N, C, H, W)
    return out


def global_avgpool2d_backward(dy, x_shape, dx=None):
    """Gradient of ``global_avgpool2d_forward``: dy (N,C) float32 -> dx (N,C,H,W) = dy / (H*W)
    broadcast over each plane, overwritten. Raises ValueError/TypeError."""
    cdef int64_t N, C, H, W
    cdef const float[:, ::1] dyv
    cdef float[:, :, :, ::1] dxv
    dy, x_shape = check_global_pool_backward(dy, x_shape)
    N, C, H, W = x_shape
    dx = check_kernel_output(dx, "dx", x_shape)
    check_outs([(dx, "dx")], [(dy, "dy")])
    if dx.size == 0:
        return dx
    dyv = dy
    dxv = dx
    with nogil:
        me_global_avgpool2d_backward(&dyv[0, 0], &dxv[0, 0, 0, 0], N, C, H, W)
    return dx
