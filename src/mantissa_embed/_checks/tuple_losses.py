"""Argument checks of the AngularLoss kernels."""

from __future__ import annotations

from .arrays import check_int_array, check_kernel_input


def check_angular_args(A, B, c, a, p, labels, ref_labels):
    A = check_kernel_input(A, "A", 2)
    B = check_kernel_input(B, "B", 2)
    N, M = A.shape
    if B.shape != (M, M):
        raise ValueError(f"B must have shape ({M}, {M}) (A is {A.shape}), got {B.shape}")
    c = check_kernel_input(c, "c", ndim=1)
    P = c.shape[0]
    a = check_int_array(a, "a", length=P, upper=N)
    p = check_int_array(p, "p", length=P, upper=M)
    labels = check_int_array(labels, "labels", length=N)
    ref_labels = check_int_array(ref_labels, "ref_labels", length=M)
    return A, B, c, a, p, labels, ref_labels, N, M, P
