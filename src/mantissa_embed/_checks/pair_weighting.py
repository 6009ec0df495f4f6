"""Argument checks of the per-row pair-weighting kernels."""

from __future__ import annotations

import numpy as np

from .arrays import (
    check_f32,
    check_flag,
    check_int_array,
    check_kernel_input,
    check_kernel_output,
    check_outs,
)

#: kind name -> (engine.h enum value, parameter names)
PAIRW_KINDS = {
    "multi_similarity": (0, ("alpha", "beta", "base")),
    "circle": (1, ("m", "gamma")),
    "generalized_lifted": (2, ("pos_margin", "neg_margin")),
    "neg_lse": (3, ("neg_margin",)),
}


def check_kind_params(kind, params):
    """(enum value, (p0, p1, p2) floats in the engine's order) for a kind name and its parameters."""
    if not isinstance(kind, str) or kind not in PAIRW_KINDS:
        raise ValueError(f"kind must be one of {sorted(PAIRW_KINDS)}, got {kind!r}")
    code, names = PAIRW_KINDS[kind]
    if not isinstance(params, (tuple, list)) or len(params) != len(names):
        raise ValueError(f"params must be a tuple ({', '.join(names)}) for kind {kind!r}, got {params!r}")
    vals = []
    for v, nm in zip(params, names):
        if nm in ("alpha", "beta"):
            vals.append(check_f32(v, nm, minimum=0.0, strict=True))
        else:
            vals.append(check_f32(v, nm))
    if kind == "neg_lse":  # the engine reads neg_margin as p1
        vals = [0.0, vals[0]]
    vals += [0.0] * (3 - len(vals))
    return code, tuple(vals)


def check_mask(a, name, shape):
    """A (N, M) bool or uint8 mask as uint8 C-contiguous (a bool array is viewed, not copied)."""
    if isinstance(a, (str, bytes)):
        raise TypeError(f"{name} must be a bool or uint8 array, got {type(a).__name__}")
    arr = np.asarray(a)
    if arr.dtype == np.bool_:
        arr = np.ascontiguousarray(arr).view(np.uint8)
    elif arr.dtype != np.uint8:
        raise TypeError(f"{name} must have dtype bool or uint8, got {arr.dtype}")
    if arr.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {arr.shape}")
    return np.ascontiguousarray(arr)


def check_rows_args(
    kind, mat, labels, ref_labels, pos_mask, neg_mask, params, exclude_self, inverted, losses, dmat
):
    """Validate the arguments of pairw_rows_forward; returns what the kernels need."""
    code, pv = check_kind_params(kind, params)
    mat = check_kernel_input(mat, "mat", 2)
    N, M = mat.shape
    inverted = check_flag(inverted, "inverted")
    exclude_self = check_flag(exclude_self, "exclude_self")
    if (pos_mask is None) != (neg_mask is None):
        raise ValueError("pos_mask and neg_mask must be given together")
    if pos_mask is not None:
        if labels is not None or ref_labels is not None:
            raise ValueError("give either labels/ref_labels or pos_mask/neg_mask, not both")
        if exclude_self:
            raise ValueError("exclude_self only applies to labels (a mask already says which pairs count)")
        pos_mask = check_mask(pos_mask, "pos_mask", (N, M))
        neg_mask = check_mask(neg_mask, "neg_mask", (N, M))
        if N and M and np.any(pos_mask & neg_mask):
            raise ValueError("pos_mask and neg_mask overlap: each pair must be either positive or negative")
    else:
        if labels is None or ref_labels is None:
            raise ValueError("labels and ref_labels (or pos_mask and neg_mask) are required")
        labels = check_int_array(labels, "labels", length=N)
        ref_labels = check_int_array(ref_labels, "ref_labels", length=M)
        if exclude_self and N != M:
            raise ValueError(f"exclude_self requires a square matrix, got shape ({N}, {M})")
    losses = check_kernel_output(losses, "losses", (N,))
    dmat = check_kernel_output(dmat, "dmat", (N, M))
    check_outs(
        [(losses, "losses"), (dmat, "dmat")],
        [
            (mat, "mat"),
            (labels, "labels"),
            (ref_labels, "ref_labels"),
            (pos_mask, "pos_mask"),
            (neg_mask, "neg_mask"),
        ],
    )
    return code, pv, mat, labels, ref_labels, pos_mask, neg_mask, exclude_self, inverted, losses, dmat


def check_backward_args(dlosses, dmat):
    dmat = check_kernel_output(dmat, "dmat", np.shape(dmat) if isinstance(dmat, np.ndarray) else ())
    if dmat.ndim != 2:
        raise ValueError(f"dmat must be 2-D, got shape {dmat.shape}")
    dlosses = check_kernel_input(dlosses, "dlosses", ndim=1)
    if dlosses.shape != (dmat.shape[0],):
        raise ValueError(f"dlosses must have shape ({dmat.shape[0]},), got {dlosses.shape}")
    check_outs([(dmat, "dmat")], [(dlosses, "dlosses")])
    return dlosses, dmat
