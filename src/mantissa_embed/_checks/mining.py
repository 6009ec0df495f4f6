"""Argument checks of the miner kernels."""

from __future__ import annotations

from .arrays import check_f32, check_flag, check_float, check_int_array, check_kernel_input

TRIPLET_KINDS = {"every": 0, "all": 1, "hard": 2, "semihard": 3, "easy": 4}


def check_triplet_mine_args(mat, labels, ref_labels, exclude_self, type_of_triplets, margin, is_inverted):
    mat = check_kernel_input(mat, "mat", 2)
    N, M = mat.shape
    labels = check_int_array(labels, "labels", length=N)
    ref_labels = check_int_array(ref_labels, "ref_labels", length=M)
    if type_of_triplets not in TRIPLET_KINDS:
        raise ValueError(f"type_of_triplets must be one of {tuple(TRIPLET_KINDS)}, got {type_of_triplets!r}")
    margin = check_f32(margin, "margin")
    exclude_self = check_flag(exclude_self, "exclude_self")
    if exclude_self and N != M:
        raise ValueError(f"exclude_self needs a square mat, got shape {mat.shape}")
    inverted = check_flag(is_inverted, "is_inverted")
    return mat, labels, ref_labels, N, M, exclude_self, TRIPLET_KINDS[type_of_triplets], margin, inverted


def check_angular_mine_args(x, r, labels, ref_labels, exclude_self, angle):
    x = check_kernel_input(x, "x", 2)
    r = check_kernel_input(r, "r", 2)
    if x.shape[1] != r.shape[1]:
        raise ValueError(f"x and r must have the same number of columns, got {x.shape} and {r.shape}")
    N, D = x.shape
    M = r.shape[0]
    if D == 0 and N > 0 and M > 0:
        raise ValueError(f"x must have at least one column, got shape {x.shape}")
    labels = check_int_array(labels, "labels", length=N)
    ref_labels = check_int_array(ref_labels, "ref_labels", length=M)
    angle = check_float(angle, "angle")
    exclude_self = check_flag(exclude_self, "exclude_self")
    if exclude_self and N != M:
        raise ValueError(f"exclude_self needs x and r of the same length, got {N} and {M}")
    return x, r, labels, ref_labels, N, M, D, exclude_self, angle
