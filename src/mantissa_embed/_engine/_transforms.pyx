"""Batched affine resampling of images, forward and backward (``src/engine_c/transforms.c``)."""
from libc.stdint cimport int64_t

from mantissa_embed._checks.transforms import check_affine_backward, check_affine_forward
from mantissa_embed._engine._cengine cimport me_affine_resample_backward, me_affine_resample_forward


__all__ = ['affine_resample_forward', 'affine_resample_backward']


def affine_resample_forward(x, theta, out=None):
    """Resample each image by its own affine matrix: bilinear, zero fill outside.

    x (N,C,H,W) float32, theta (N,2,3) float32 (output -> input, normalized coordinates in
    [-1, 1]) -> out (N,C,H,W) float32, new or overwritten; equals torch's
    ``grid_sample(x, affine_grid(theta, x.shape, align_corners=False), mode="bilinear",
    padding_mode="zeros", align_corners=False)``. The identity theta returns x exactly.
    Raises ValueError / TypeError (theta not (N,2,3) or not finite, out overlapping x).
    """
    cdef int64_t N, C, H, W
    cdef const float[:, :, :, ::1] xv
    cdef const float[:, :, ::1] tv
    cdef float[:, :, :, ::1] ov
    x, theta, out = check_affine_forward(x, theta, out)
    if out.size == 0:
        return out
    N, C, H, W = x.shape
    xv = x
    tv = theta
    ov = out
    with nogil:
        me_affine_resample_forward(&xv[0, 0, 0, 0], &tv[0, 0, 0], &ov[0, 0, 0, 0], N, C, H, W)
    return out


def affine_resample_backward(x, theta, dy, need_dx=True, need_dtheta=True, dx=None, dtheta=None):
    """Gradients of ``affine_resample_forward`` for the upstream gradient dy (N,C,H,W) float32.

    Returns ``(dx, dtheta)``: dx (N,C,H,W) and dtheta (N,2,3), float32, new or overwritten; each
    is None when not needed. At a pixel-aligned sampling point the gradient is torch's (the
    floor side). Raises ValueError / TypeError.
    """
    cdef int64_t N, C, H, W
    cdef const float[:, :, :, ::1] xv
    cdef const float[:, :, ::1] tv
    cdef const float[:, :, :, ::1] dyv
    cdef float[:, :, :, ::1] dxv
    cdef float[:, :, ::1] dtv
    cdef float *dxp = NULL
    cdef float *dtp = NULL
    x, theta, dy, dx, dtheta = check_affine_backward(x, theta, dy, need_dx, need_dtheta, dx, dtheta)
    if x.size == 0:
        if dx is not None:
            dx.fill(0)
        if dtheta is not None:
            dtheta.fill(0)
        return dx, dtheta
    N, C, H, W = x.shape
    xv = x
    tv = theta
    dyv = dy
    if dx is not None:
        dxv = dx
        dxp = &dxv[0, 0, 0, 0]
    if dtheta is not None:
        dtv = dtheta
        dtp = &dtv[0, 0, 0]
    with nogil:
        me_affine_resample_backward(&dyv[0, 0, 0, 0], &xv[0, 0, 0, 0], &tv[0, 0, 0], dxp, dtp,
                                    N, C, H, W)
    return dx, dtheta
