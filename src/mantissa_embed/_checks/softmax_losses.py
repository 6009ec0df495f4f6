"""Argument checks of the softmax-over-pairs kernels (NTXent, SupCon, NCA, NPairs, Instance)."""

from __future__ import annotations

import numbers

import numpy as np

from .arrays import check_f32, check_flag, check_kernel_input

REDUCTIONS = {"mean": 0, "avg_non_zero": 1, "weights": 2}


def check_sim(sim, name: str = "sim"):
    sim = check_kernel_input(sim, name, ndim=2)
    return sim


def check_lab(lab, name, n):
    if lab is None:
        raise TypeError(f"{name} must be an int64 array, got None")
    arr = np.asarray(lab)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must have an integer dtype, got {arr.dtype}")
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def check_common(sim, labels, ref_labels, exclude_self, inverted=True):
    """(sim, labels, ref_labels, exclude_self) validated; ``exclude_self`` and ``inverted`` must be
    bools (or 0 / 1): a string or None is a TypeError, not a truth value."""
    sim = check_sim(sim)
    N, M = sim.shape
    labels = check_lab(labels, "labels", N)
    ref_labels = check_lab(ref_labels, "ref_labels", M)
    check_flag(inverted, "inverted")
    exclude_self = check_flag(exclude_self, "exclude_self")
    if exclude_self and N != M:
        raise ValueError(f"exclude_self needs a square matrix, got sim of shape {sim.shape}")
    return sim, labels, ref_labels, exclude_self


def check_reduction(reduction, weights, shape, losses=False, grad=True):
    """The weights of ``reduction`` (None unless "weights"); ``losses`` / ``grad`` must be bools."""
    check_flag(losses, "losses")
    check_flag(grad, "grad")
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {tuple(REDUCTIONS)}, got {reduction!r}")
    if reduction == "weights":
        if weights is None:
            raise ValueError('reduction="weights" needs weights')
        weights = check_kernel_input(weights, "weights", ndim=len(shape))
        if weights.shape != tuple(shape):
            raise ValueError(f"weights must have shape {tuple(shape)}, got {weights.shape}")
    else:
        weights = None
    return weights


def check_temperature(t, name: str = "temperature"):
    """A divisor the kernels take as a C float: a finite real whose float32 rounding is a
    positive normal number (in [1.2e-38, 3.4e38]); a denormal would round to 0 or lose its
    digits and turn the losses into 0 or NaN."""
    t = check_f32(t, name)
    if not t >= float(np.finfo(np.float32).tiny):
        raise ValueError(f"{name} must be > 0 and a normal float32 (>= 1.2e-38), got {t}")
    return t


def check_max_loss(v):
    """The NLL kernels' per-row loss cap: a real number, +inf allowed, NaN not."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"max_loss must be a number, got {type(v).__name__}")
    v = float(v)
    if np.isnan(v):
        raise ValueError("max_loss must not be NaN")
    return v


def check_lse(lse, N):
    arr = np.asarray(lse)
    if arr.dtype != np.float64:
        raise TypeError(f"lse must be float64 (from softmax_nll_forward), got {arr.dtype}")
    if arr.shape != (N, 2):
        raise ValueError(f"lse must have shape ({N}, 2), got {arr.shape}")
    return np.ascontiguousarray(arr)


def check_row_weights(weights, N):
    """The per-row weights (d value / d l_i) of a row-loss backward: (N,) float32."""
    weights = check_kernel_input(weights, "weights", ndim=1)
    if weights.shape != (N,):
        raise ValueError(f"weights must have shape ({N},), got {weights.shape}")
    return weights


def check_xent_rows(sim, target):
    sim = check_sim(sim)
    N, M = sim.shape
    target = check_lab(target, "target", N)
    if N and (M == 0 or target.min() < 0 or target.max() >= M):
        raise ValueError(f"target must be in [0, {M}) for sim of shape {sim.shape}")
    return sim, target


def check_xent_lse(lse, N):
    arr = np.asarray(lse)
    if arr.dtype != np.float32:
        raise TypeError(f"lse must be float32 (from softmax_xent_rows_forward), got {arr.dtype}")
    if arr.shape != (N,):
        raise ValueError(f"lse must have shape ({N},), got {arr.shape}")
    return np.ascontiguousarray(arr)
