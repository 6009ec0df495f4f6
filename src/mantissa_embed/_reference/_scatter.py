"""Numpy twin of the shared scatter-add of ``mantissa_embed.engine`` (``src/engine_c/scatter.c``).

Same names, signatures, validation and results (bitwise: ``np.add.at`` adds in index order, as the
kernel does); both backends use the checks of
``mantissa_embed._checks.scatter``.
"""

from __future__ import annotations

import numpy as np

from .._checks.scatter import check_gather, check_scatter

__all__ = ["scatter_add_forward", "scatter_add_backward"]


def scatter_add_forward(src, index, out):
    """``np.add.at(out, index, src)``, in place: out (N,) or (N, D) float32 += src (K,) or (K, D)
    float32 at rows index (K,) int64 in [0, N), each entry's additions in index order. A pair
    scatter into an (R, C) matrix ``m`` is ``scatter_add_forward(v, r * C + c, m.reshape(-1))``.
    Returns ``out``.

    Raises ``TypeError`` / ``ValueError`` for a non-float32, non-contiguous or read-only ``out``,
    mismatched shapes, indices out of range, or ``out`` sharing memory with ``src``.
    """
    src, index, out, K, D, N = check_scatter(src, index, out)
    if K:
        np.add.at(out, index, src)
    return out


def scatter_add_backward(dout, index, dsrc=None):
    """The backward of ``scatter_add_forward``, a gather: dout (N,) or (N, D) float32, index
    (K,) int64 in [0, N) -> dsrc (K,) or (K, D) float32 = ``dout[index]`` (output buffer ``dsrc``,
    overwritten)."""
    dout, index, dsrc, K, D, N = check_gather(dout, index, dsrc)
    dsrc[...] = dout[index]
    return dsrc
