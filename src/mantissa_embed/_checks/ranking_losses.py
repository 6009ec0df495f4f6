"""Argument checks of the ranking kernels (PNP ranks, DynamicSoftMargin)."""

from __future__ import annotations

import numbers

import numpy as np

from .arrays import as_numeric_array, check_flag, check_kernel_input


def check_square(sim, name):
    sim = check_kernel_input(sim, name, ndim=2)
    if sim.shape[0] != sim.shape[1]:
        raise ValueError(f"{name} must be square (N, N), got shape {sim.shape}")
    return sim


def check_labels_n(labels, name, n):
    arr = np.asarray(labels)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must have an integer dtype, got {arr.dtype}")
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def check_positive(v, name):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    return float(v)


def check_real(v, name):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    return float(v)


def check_f64(a, name, shape):
    arr = np.asarray(a)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be a float array, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    return arr


def check_pnp(sim, labels, anneal):
    sim = check_square(sim, "sim")
    labels = check_labels_n(labels, "labels", sim.shape[0])
    return sim, labels, check_positive(anneal, "anneal")


def check_dsm(mat, labels, ref_labels, exclude_self, min_val, delta):
    mat = check_kernel_input(mat, "mat", ndim=2)
    N, M = mat.shape
    labels = check_labels_n(labels, "labels", N)
    ref_labels = check_labels_n(ref_labels, "ref_labels", M)
    exclude_self = check_flag(exclude_self, "exclude_self")
    if exclude_self and N != M:
        raise ValueError(f"exclude_self needs a square mat, got shape {mat.shape}")
    return (
        mat,
        labels,
        ref_labels,
        exclude_self,
        check_real(min_val, "min_val"),
        check_positive(delta, "delta"),
    )


#: the most histogram bins of DynamicSoftMargin (PML's default is 10): the kernels keep one row
#: of bins per anchor, so a larger count is refused before anything is allocated
MAX_BINS = 1 << 16


def check_nb(num_bins, name="num_bins"):
    if isinstance(num_bins, bool) or not isinstance(num_bins, numbers.Integral) or num_bins < 1:
        raise ValueError(f"{name} must be an int >= 1, got {num_bins!r}")
    if num_bins > MAX_BINS:
        raise ValueError(f"{name} must be <= {MAX_BINS} (one row of bins per anchor), got {num_bins}")
    return int(num_bins)


def check_cdf(cdf):
    """The DynamicSoftMargin look-up table: a 1-D array of 1 to MAX_BINS finite numbers, as
    float64 C-contiguous; its length is the bin count."""
    arr = as_numeric_array(cdf, "cdf", ndim=1, dtype=np.float64)
    check_nb(arr.shape[0], "len(cdf)")
    if not np.isfinite(arr).all():
        raise ValueError("cdf contains NaN or Inf")
    return arr
