"""Numpy twin of the shared scatter-add of :mod:`mantissa_embed.engine` (``src/engine_c/scatter.c``).

Same names, signatures, validation and results (bitwise: ``np.add.at`` adds in index order, as the
kernel does); the engine wrappers import the ``_check_*`` helpers below.
"""
from __future__ import annotations

import numpy as np

from .._validation import check_kernel_input
from ._layers import _check_outs
from ._losses import _check_int_array, _check_out

__all__ = ["scatter_add_forward", "scatter_add_backward"]


def _check_rows_buffer(a, name):
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(a).__name__}")
    if a.dtype != np.float32 or a.ndim not in (1, 2) or not a.flags.c_contiguous:
        raise ValueError(f"{name} must be a C-contiguous 1-D or 2-D float32 array")
    return a


def _check_scatter(src, index, out, name="out"):
    """scatter_add_forward's arguments: (src, index, out, K, D, N)."""
    out = _check_rows_buffer(out, name)
    if not out.flags.writeable:
        raise ValueError(f"{name} must be writeable")
    N, D = out.shape[0], (out.shape[1] if out.ndim == 2 else 1)
    index = _check_int_array(index, "index", upper=N)
    K = index.shape[0]
    src = check_kernel_input(src, "src", ndim=out.ndim)
    if src.shape != (K,) + out.shape[1:]:
        raise ValueError(f"src must have shape {(K,) + out.shape[1:]}, got {src.shape}")
    _check_outs([(out, name)], [(src, "src")])
    return src, index, out, K, D, N


def _check_gather(dout, index, dsrc):
    """scatter_add_backward's arguments: (dout, index, dsrc, K, D, N)."""
    dout = check_kernel_input(dout, "dout")
    if dout.ndim not in (1, 2):
        raise ValueError(f"dout must be 1-D or 2-D, got shape {dout.shape}")
    N, D = dout.shape[0], (dout.shape[1] if dout.ndim == 2 else 1)
    index = _check_int_array(index, "index", upper=N)
    K = index.shape[0]
    dsrc = _check_out(dsrc, "dsrc", (K,) + dout.shape[1:])
    _check_outs([(dsrc, "dsrc")], [(dout, "dout")])
    return dout, index, dsrc, K, D, N


def scatter_add_forward(src, index, out):
    """``np.add.at(out, index, src)``, in place: out (N,) or (N, D) float32 += src (K,) or (K, D)
    float32 at rows index (K,) int64 in [0, N), each entry's additions in index order. A pair
    scatter into an (R, C) matrix ``m`` is ``scatter_add_forward(v, r * C + c, m.reshape(-1))``.
    Returns ``out``.

    Raises ``TypeError`` / ``ValueError`` for a non-float32, non-contiguous or read-only ``out``,
    mismatched shapes, indices out of range, or ``out`` sharing memory with ``src``.
    """
    src, index, out, K, D, N = _check_scatter(src, index, out)
    if K:
        np.add.at(out, index, src)
    return out


def scatter_add_backward(dout, index, dsrc=None):
    """The backward of :func:`scatter_add_forward`, a gather: dout (N,) or (N, D) float32, index
    (K,) int64 in [0, N) -> dsrc (K,) or (K, D) float32 = ``dout[index]`` (output buffer ``dsrc``,
    overwritten)."""
    dout, index, dsrc, K, D, N = _check_gather(dout, index, dsrc)
    dsrc[...] = dout[index]
    return dsrc
