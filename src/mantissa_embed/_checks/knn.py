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
