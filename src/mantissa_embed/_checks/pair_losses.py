"""Argument checks of the contrastive and triplet margin kernels (both backends)."""

from __future__ import annotations

import numpy as np

from .arrays import check_flag, check_int_array, check_kernel_input, check_kernel_output, check_outs


def check_self(exclude_self, N, M):
    exclude_self = check_flag(exclude_self, "exclude_self")
    if exclude_self and N != M:
        raise ValueError(f"exclude_self requires a square distance matrix, got shape ({N}, {M})")
    return exclude_self


def check_swap_all(swap, labels, ref_labels):
    swap = check_flag(swap, "swap")
    if swap and (labels.shape[0] != ref_labels.shape[0] or not np.array_equal(labels, ref_labels)):
        raise ValueError(
            "swap=True requires the reference set to be the batch itself "
            "(square dist and ref_labels equal to labels)"
        )
    return swap


def check_pair_args(dist, ddist, inverted, nonzero_only):
    dist = check_kernel_input(dist, "dist", 2)
    N, M = dist.shape
    ddist = check_kernel_output(ddist, "ddist", (N, M))
    check_outs([(ddist, "ddist")], [(dist, "dist")])
    return dist, ddist, N, M, check_flag(inverted, "inverted"), check_flag(nonzero_only, "nonzero_only")


def check_label_pair(labels, ref_labels, N, M):
    return (check_int_array(labels, "labels", length=N), check_int_array(ref_labels, "ref_labels", length=M))


def check_terms(weights, shape, ddist, grad, return_losses, nonzero_only):
    """The per-term arguments: (weights (shape) float32 or None, ddist or None (grad False),
    a zeroed losses buffer (shape) or None, the reduction: "mean", "avg_non_zero" or "weights")."""
    grad = check_flag(grad, "grad")
    return_losses = check_flag(return_losses, "return_losses")
    if weights is None:
        red = "avg_non_zero" if nonzero_only else "mean"
    else:
        weights = check_kernel_input(weights, "weights", ndim=len(shape))
        if weights.shape != tuple(shape):
            raise ValueError(f"weights must have shape {tuple(shape)}, got {weights.shape}")
        red = "weights"
    losses = np.zeros(shape, dtype=np.float32) if return_losses else None
    return weights, ddist if grad else None, losses, red


def check_ddist_overlap(ddist, weights, **indices):
    """``ddist`` must not share memory with the weights nor with the label / index arrays the
    kernel reads while it writes ``ddist``: an index overwritten mid-call addresses out of bounds
    (ValueError naming both)."""
    check_outs([(ddist, "ddist")], [(weights, "weights")] + [(a, k) for k, a in indices.items()])
