"""Resizing and zero-padding batches of images (separable linear maps)."""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike, Float32Array
from .._validation import check_array, check_int

_RESIZE_MODES = ("bilinear", "nearest", "area", "pad")


def check_size(size: int | tuple[int, int]) -> tuple[int, int]:
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        size = (size, size)
    if not isinstance(size, (tuple, list)) or len(size) != 2:
        raise TypeError(f"size must be an int or a pair (h, w), got {size!r}")
    h = check_int(size[0], "size[0]", minimum=1)
    w = check_int(size[1], "size[1]", minimum=1)
    return h, w


def _interp_matrix(n_out, n_in, mode):
    """(n_out, n_in) float64 matrix mapping a 1-D signal of length n_in to n_out."""
    A = np.zeros((n_out, n_in), dtype=np.float64)
    j = np.arange(n_out)
    scale = n_in / n_out
    if mode == "nearest":
        src = np.minimum(np.floor((j + 0.5) * scale).astype(np.int64), n_in - 1)
        A[j, src] = 1.0
    elif mode == "bilinear":  # half-pixel centres, edges clamped (align_corners=False)
        src = np.clip((j + 0.5) * scale - 0.5, 0.0, n_in - 1)
        i0 = np.floor(src).astype(np.int64)
        i1 = np.minimum(i0 + 1, n_in - 1)
        frac = src - i0
        np.add.at(A, (j, i0), 1.0 - frac)
        np.add.at(A, (j, i1), frac)
    else:  # area: overlap of input pixel [p, p+1) with output cell [j*s, (j+1)*s)
        lo, hi = j * scale, (j + 1) * scale
        p = np.arange(n_in)
        overlap = np.clip(
            np.minimum(hi[:, None], p[None, :] + 1) - np.maximum(lo[:, None], p[None, :]), 0.0, None
        )
        A = overlap / scale
    return A


def pad_or_resize(X: ArrayLike, size: int | tuple[int, int], mode: str = "bilinear") -> Float32Array:
    """Resize a batch of images to ``size`` by a separable linear map, or zero-pad it.

    Useful to feed the 8x8 digits to a network designed for 28x28 inputs.

    Parameters
    ----------
    X : array_like, shape (N, C, H, W) or (N, H, W)
    size : int or (int, int)
        Target ``(h, w)``.
    mode : {"bilinear", "nearest", "area", "pad"}, default "bilinear"
        ``"bilinear"``: half-pixel centres, clamped edges (as ``align_corners=False``).
        ``"nearest"``: nearest source pixel. ``"area"``: average of the covered source area
        (exact block averaging for integer factors; the right choice to shrink).
        ``"pad"``: centre the image in a zero canvas (requires ``h >= H`` and ``w >= W``;
        an odd margin puts the extra pixel at the bottom/right).

    Returns
    -------
    ndarray, float32, shape (N, C, h, w) (or (N, h, w)), C-contiguous. Interpolated values
    are convex combinations of input pixels, clipped to the input's [min, max].

    Raises
    ------
    ValueError
        Wrong ndim, NaN/Inf, unknown ``mode``, a ``"pad"`` target smaller than the image, or
        empty (0-pixel) images to interpolate.
    TypeError
        Non-numeric ``X`` or a malformed ``size``.
    """
    X = check_array(X, "X", ndim=(3, 4))
    if mode not in _RESIZE_MODES:
        raise ValueError(f"mode must be one of {_RESIZE_MODES}, got {mode!r}")
    h, w = check_size(size)
    H, W = X.shape[-2:]
    if mode == "pad":
        if h < H or w < W:
            raise ValueError(f"size {(h, w)} is smaller than the images ({H}, {W}); mode='pad' cannot crop")
        out = np.zeros(X.shape[:-2] + (h, w), dtype=np.float32)
        top, left = (h - H) // 2, (w - W) // 2
        out[..., top : top + H, left : left + W] = X
        return out
    if (h, w) == (H, W):
        return X.copy()
    if H == 0 or W == 0:
        raise ValueError(f"X must have images of at least 1x1 pixel to interpolate, got shape {X.shape}")
    Ah = _interp_matrix(h, H, mode).astype(np.float32)
    Aw = _interp_matrix(w, W, mode).astype(np.float32)
    out = np.matmul(np.matmul(Ah, X), Aw.T)
    if X.size:
        np.clip(out, X.min(), X.max(), out=out)
    return np.ascontiguousarray(out, dtype=np.float32)
