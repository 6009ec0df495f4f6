"""Argument checks of the shared scatter-add kernel (both backends)."""

from __future__ import annotations

import numpy as np

from .arrays import check_int_array, check_kernel_input, check_kernel_output, check_outs


def check_rows_buffer(a, name):
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(a).__name__}")
    if a.dtype != np.float32 or a.ndim not in (1, 2) or not a.flags.c_contiguous:
        raise ValueError(f"{name} must be a C-contiguous 1-D or 2-D float32 array")
    return a


def check_scatter(src, index, out, name: str = "out"):
    """scatter_add_forward's arguments: (src, index, out, K, D, N)."""
    out = check_rows_buffer(out, name)
    if not out.flags.writeable:
        raise ValueError(f"{name} must be writeable")
    N, D = out.shape[0], (out.shape[1] if out.ndim == 2 else 1)
    index = check_int_array(index, "index", upper=N)
    K = index.shape[0]
    src = check_kernel_input(src, "src", ndim=out.ndim)
    if src.shape != (K,) + out.shape[1:]:
        raise ValueError(f"src must have shape {(K,) + out.shape[1:]}, got {src.shape}")
    check_outs(
        [(out, name)], [(src, "src"), (index, "index")]
    )  # an index overwritten mid-call: out of bounds
    return src, index, out, K, D, N


def check_gather(dout, index, dsrc):
    """scatter_add_backward's arguments: (dout, index, dsrc, K, D, N)."""
    dout = check_kernel_input(dout, "dout")
    if dout.ndim not in (1, 2):
        raise ValueError(f"dout must be 1-D or 2-D, got shape {dout.shape}")
    N, D = dout.shape[0], (dout.shape[1] if dout.ndim == 2 else 1)
    index = check_int_array(index, "index", upper=N)
    K = index.shape[0]
    dsrc = check_kernel_output(dsrc, "dsrc", (K,) + dout.shape[1:])
    check_outs([(dsrc, "dsrc")], [(dout, "dout"), (index, "index")])
    return dout, index, dsrc, K, D, N
