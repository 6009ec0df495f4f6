"""Argument checks of the exact k-NN search."""

from __future__ import annotations

import numbers

import numpy as np

from .arrays import check_bool, check_kernel_input, check_kernel_output, check_no_overlap

KNN_METRICS = ("sqeuclidean", "euclidean", "inner_product")

#: the largest tile_q * tile_r (32 times the default 256 x 2048): the scratch of one thread
MAX_TILE = 1 << 24


def check_knn_search(query, reference, k, metric, exclude_self, tile_q, tile_r, indices, distances):
    """Shared argument checks of ``knn_search`` (both backends). Returns the checked values."""
    q = check_kernel_input(query, "query", ndim=2)
    r = check_kernel_input(reference, "reference", ndim=2)
    if q.shape[1] != r.shape[1]:
        raise ValueError(
            f"query and reference must have the same number of columns, got {q.shape[1]} and {r.shape[1]}"
        )
    for v, name in ((k, "k"), (tile_q, "tile_q"), (tile_r, "tile_r")):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must be an int, got {type(v).__name__}")
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    if int(tile_q) * int(tile_r) > MAX_TILE:  # each thread's scratch: a tile_q x tile_r block of distances
        raise ValueError(
            f"tile_q * tile_r must be <= 2**24 (floats of scratch per thread), got {tile_q} * {tile_r}"
        )
    if metric not in KNN_METRICS:
        raise ValueError(f"metric must be one of {KNN_METRICS}, got {metric!r}")
    check_bool(exclude_self, "exclude_self")
    n, M = q.shape[0], r.shape[0]
    if exclude_self and n > M:
        raise ValueError(f"exclude_self=True needs query rows <= reference rows, got {n} > {M}")
    avail = M - int(bool(exclude_self))
    if k > avail:
        raise ValueError(f"k must be <= {avail} (the available reference rows), got k={k}")
    if q.shape[1] == 0 and n > 0:
        raise ValueError("query and reference must have at least one column")
    indices = check_kernel_output(indices, "indices", (n, int(k)), dtype=np.int64)
    distances = check_kernel_output(distances, "distances", (n, int(k)))
    check_no_overlap(indices, "indices", (q, "query"), (r, "reference"))
    check_no_overlap(distances, "distances", (q, "query"), (r, "reference"), (indices, "indices"))
    return q, r, int(k), bool(exclude_self), int(tile_q), int(tile_r), indices, distances


#: storage dtypes of ``knn_codes_search`` and the numpy dtypes of their codes
CODE_DTYPES = {"float32": np.float32, "float16": np.uint16, "bfloat16": np.uint16, "int8": np.int8}
#: ranking arithmetic of ``knn_codes_search`` (src/engine_c/knn_codes.c)
CODE_MODES = ("f32", "bf16dot", "u8dot", "u7dot")
#: the modes each storage dtype may use
_MODES_OF = {
    "float32": ("f32",),
    "float16": ("f32", "bf16dot"),
    "bfloat16": ("f32", "bf16dot"),
    "int8": ("f32", "u8dot", "u7dot"),
}
CODE_METRICS = ("sqeuclidean", "euclidean", "inner_product", "cosine")
#: the largest D of the int8 dot modes (their int32 sums of D products of at most 255 x 127)
MAX_INT_DOT_D = 8192


def check_code_width(D):
    """``knn_codes_mode``'s ``D``: an int >= 1 (TypeError / ValueError naming ``D``)."""
    if isinstance(D, (bool, np.bool_)) or not isinstance(D, numbers.Integral):
        raise TypeError(f"D must be an int, got {type(D).__name__}")
    if D < 1:
        raise ValueError(f"D must be >= 1, got {D}")
    return int(D)


def check_knn_codes_search(query, codes, scales, k, dtype, metric, mode, tile_r, indices, distances):
    """Shared argument checks of ``knn_codes_search`` (both backends); ``mode`` must already be a
    name (None resolved by the caller). Returns the checked values."""
    q = check_kernel_input(query, "query", ndim=2)
    if dtype not in CODE_DTYPES:
        raise ValueError(f"dtype must be one of {tuple(CODE_DTYPES)}, got {dtype!r}")
    if not isinstance(codes, np.ndarray):
        raise TypeError(f"codes must be a numpy.ndarray, got {type(codes).__name__}")
    want = np.dtype(CODE_DTYPES[dtype])
    c = codes.view(np.uint16) if dtype == "float16" and codes.dtype == np.float16 else codes
    if c.dtype != want:
        raise TypeError(
            f"codes of dtype {dtype!r} must be {want}"
            + (" (the 16-bit floats' bits)" if want == np.uint16 else "")
            + f", got {codes.dtype}"
        )
    if c.ndim != 2:
        raise ValueError(f"codes must be 2-D, got shape {c.shape}")
    c = np.ascontiguousarray(c)
    if q.shape[1] != c.shape[1]:
        raise ValueError(
            f"query and codes must have the same number of columns, got {q.shape[1]} and {c.shape[1]}"
        )
    M = c.shape[0]
    if dtype == "int8":
        s = check_kernel_input(scales, "scales", ndim=1)
        if s.shape[0] != M:
            raise ValueError(f"scales must have {M} entries (one per code row), got {s.shape[0]}")
    elif scales is not None:
        raise ValueError(f"scales are for int8 codes only, got dtype {dtype!r}")
    else:
        s = None
    for v, name in ((k, "k"), (tile_r, "tile_r")):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    if k < 1 or k > M:
        raise ValueError(f"k must be in [1, {M}] (the code rows), got k={k}")
    if tile_r < 0 or tile_r > 1 << 16:
        raise ValueError(f"tile_r must be in [0, 65536] (0: the default), got {tile_r}")
    if metric not in CODE_METRICS:
        raise ValueError(f"metric must be one of {CODE_METRICS}, got {metric!r}")
    if mode not in _MODES_OF[dtype]:
        raise ValueError(f"mode must be one of {_MODES_OF[dtype]} for dtype {dtype!r}, got {mode!r}")
    if mode in ("u8dot", "u7dot") and q.shape[1] > MAX_INT_DOT_D:
        raise ValueError(f"mode {mode!r} needs D <= {MAX_INT_DOT_D}, got {q.shape[1]}")
    if q.shape[1] == 0:
        raise ValueError("query and codes must have at least one column")
    n = q.shape[0]
    indices = check_kernel_output(indices, "indices", (n, int(k)), dtype=np.int64)
    distances = check_kernel_output(distances, "distances", (n, int(k)))
    ins = ((q, "query"), (c, "codes")) + (() if s is None else ((s, "scales"),))
    check_no_overlap(indices, "indices", *ins)
    check_no_overlap(distances, "distances", *ins, (indices, "indices"))
    return q, c, s, int(k), int(tile_r), indices, distances
