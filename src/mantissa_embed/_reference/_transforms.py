"""Numpy twins of the transforms kernels (``mantissa_embed._engine._transforms``).

Same names, signatures, checks and errors as the engine. ``_affine_resample`` and
``_affine_resample_grads`` keep their input dtype (float64 for the finite-difference tests).
"""

from __future__ import annotations

import numpy as np

from .._checks.transforms import check_affine_backward, check_affine_forward

__all__ = ["affine_resample_forward", "affine_resample_backward"]


def _taps(theta, H, W):
    """Per image and output pixel: input coordinates (ix, iy) (N,H,W), as torch's affine_grid
    (align_corners=False) followed by grid_sample's unnormalization, and the four bilinear taps
    as (valid, flat offset, weight, d weight / d ix, d weight / d iy), each (N,H,W)."""
    t = theta.astype(np.float64)
    # pixel centres about the image centre; ix = ((gx + 1) W - 1) / 2 with gx = theta[0] @ (u / (W/2),
    # v / (H/2), 1), written so that the identity gives ix = j exactly (as the engine)
    u = (np.arange(W) + 0.5 - W / 2)[None, None, :]
    v = (np.arange(H) + 0.5 - H / 2)[None, :, None]
    ix = t[:, 0, 0, None, None] * u + t[:, 0, 1, None, None] * (W / H) * v + t[:, 0, 2, None, None] * (W / 2)
    iy = t[:, 1, 0, None, None] * (H / W) * u + t[:, 1, 1, None, None] * v + t[:, 1, 2, None, None] * (H / 2)
    # beyond one pixel outside every tap is outside: clipping keeps the offsets small
    ix = np.clip(ix + (W - 1) / 2, -2.0, W + 1.0)
    iy = np.clip(iy + (H - 1) / 2, -2.0, H + 1.0)
    x0, y0 = np.floor(ix), np.floor(iy)
    fx, fy = ix - x0, iy - y0
    taps = []
    for dyy, wy, sy in ((0, 1 - fy, -1.0), (1, fy, 1.0)):
        for dxx, wx, sx in ((0, 1 - fx, -1.0), (1, fx, 1.0)):
            yy, xx = (y0 + dyy).astype(np.int64), (x0 + dxx).astype(np.int64)
            valid = (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
            off = np.where(valid, yy * W + xx, 0)
            taps.append((valid, off, wy * wx, wy * sx, sy * wx))
    return taps


def _gather(x, off):
    """x (N,C,H,W), off (N,H,W) flat offsets -> (N,C,H,W) values x[n, c].flat[off[n]]."""
    N, C, H, W = x.shape
    flat = x.reshape(N, C, H * W)
    return np.take_along_axis(flat, off.reshape(N, 1, H * W), axis=2).reshape(N, C, H, W)


def _affine_resample(x, theta):
    """The forward in x's dtype (bilinear, zero fill)."""
    N, C, H, W = x.shape
    out = np.zeros(x.shape, dtype=x.dtype)
    for valid, off, w, _, _ in _taps(theta, H, W):
        out += np.where(valid[:, None], w[:, None] * _gather(x, off), 0).astype(x.dtype)
    return out


def _affine_resample_grads(x, theta, dy):
    """(dx, dtheta) of L = sum(_affine_resample(x, theta) * dy), in x's dtype."""
    N, C, H, W = x.shape
    dx = np.zeros((N, C, H * W), dtype=np.float64)
    gix = np.zeros((N, H, W))
    giy = np.zeros((N, H, W))
    g = dy.astype(np.float64)
    for valid, off, w, dwx, dwy in _taps(theta, H, W):
        m = valid[:, None].astype(np.float64)
        contrib = (m * w[:, None] * g).reshape(N, C, H * W)
        for n in range(N):
            for c in range(C):
                dx[n, c] += np.bincount(off[n].ravel(), contrib[n, c].ravel(), minlength=H * W)
        gv = (m * g * _gather(x.astype(np.float64), off)).sum(axis=1)
        gix += dwx * gv
        giy += dwy * gv
    # ix = ((gx + 1) W - 1) / 2, gx = theta[0] @ (xn, yn, 1): chain rule through the grid
    xn = ((2 * np.arange(W) + 1) / W - 1)[None, None, :]
    yn = ((2 * np.arange(H) + 1) / H - 1)[None, :, None]
    dgx, dgy = gix * (W / 2), giy * (H / 2)
    dtheta = np.stack(
        [
            np.stack([(dgx * xn).sum(axis=(1, 2)), (dgx * yn).sum(axis=(1, 2)), dgx.sum(axis=(1, 2))], 1),
            np.stack([(dgy * xn).sum(axis=(1, 2)), (dgy * yn).sum(axis=(1, 2)), dgy.sum(axis=(1, 2))], 1),
        ],
        1,
    )
    return dx.reshape(x.shape).astype(x.dtype), dtheta.astype(x.dtype)


def affine_resample_forward(x, theta, out=None):
    """Resample each image by its own affine matrix: bilinear, zero fill outside.

    x (N,C,H,W) float32, theta (N,2,3) float32 (output -> input, normalized coordinates) ->
    out (N,C,H,W) float32, new or overwritten; torch's ``grid_sample(x, affine_grid(theta,
    x.shape, align_corners=False), mode="bilinear", padding_mode="zeros", align_corners=False)``.
    Raises ValueError / TypeError.
    """
    x, theta, out = check_affine_forward(x, theta, out)
    out[...] = _affine_resample(x, theta)
    return out


def affine_resample_backward(
    x, theta, dy, need_dx: bool = True, need_dtheta: bool = True, dx=None, dtheta=None
):
    """Gradients of ``affine_resample_forward``: ``(dx (N,C,H,W), dtheta (N,2,3))`` float32, new
    or overwritten, each None when not needed. Raises ValueError / TypeError."""
    x, theta, dy, dx, dtheta = check_affine_backward(x, theta, dy, need_dx, need_dtheta, dx, dtheta)
    gx, gt = _affine_resample_grads(x, theta, dy)
    if dx is not None:
        dx[...] = gx
    if dtheta is not None:
        dtheta[...] = gt
    return dx, dtheta
