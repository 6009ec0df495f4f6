"""Numpy twins of the AngularLoss kernels (``mantissa_embed._engine._tuple_losses``).

Same names, signatures, checks (``mantissa_embed._checks.tuple_losses``) and errors as the engine.
"""

from __future__ import annotations

import numpy as np

from .._checks.arrays import check_kernel_input
from .._checks.tuple_losses import check_angular_args

__all__ = ["angular_loss_forward", "angular_loss_backward"]

_TILE = 1 << 20  # elements of one (pairs x M) tile


def _angular_x(A, B, c, a, p, labels, ref_labels, s, e):
    """(logits (e-s, M) float64 with -inf outside the negatives, mask)."""
    ak, pk = a[s:e], p[s:e]
    x = A[ak].astype(np.float64) + B[pk] - c[s:e, None].astype(np.float64)
    mask = labels[ak][:, None] != ref_labels[None, :]
    return np.where(mask, x, -np.inf), mask


def angular_loss_forward(A, B, c, a, p, labels, ref_labels):
    """Per-pair losses of AngularLoss (PML 2.9 semantics).

    ``losses[k] = log(1 + sum_{n : labels[a[k]] != ref_labels[n]} exp(A[a[k], n] + B[p[k], n] - c[k]))``
    (0 when the anchor has no negative), computed with a max shift (no overflow).

    Parameters
    ----------
    A : (N, M) float32
        Anchor-to-negative logits (``4 tan^2(alpha) * anchors_hat @ ref.T``).
    B : (M, M) float32
        Positive-to-negative logits (``4 tan^2(alpha) * ref_hat @ ref.T``).
    c : (P,) float32
        Anchor-positive term of each pair (``2 (1 + tan^2(alpha)) a_hat . p_hat``).
    a, p : (P,) int64
        The pairs: anchors in ``[0, N)``, positives in ``[0, M)``.
    labels : (N,) int64, ref_labels : (M,) int64

    Returns
    -------
    losses : (P,) float32

    Raises
    ------
    ValueError / TypeError
        Wrong shapes, dtypes or indices out of range (naming the argument).
    """
    A, B, c, a, p, labels, ref_labels, N, M, P = check_angular_args(A, B, c, a, p, labels, ref_labels)
    out = np.zeros(P, dtype=np.float32)
    if P == 0 or M == 0:
        return out
    step = max(1, _TILE // M)
    for s in range(0, P, step):
        e = min(P, s + step)
        x, mask = _angular_x(A, B, c, a, p, labels, ref_labels, s, e)
        mx = np.maximum(np.max(x, axis=1), 0.0)
        with np.errstate(invalid="ignore"):
            tot = np.exp(-mx) + np.sum(np.exp(x - mx[:, None]), axis=1)
        out[s:e] = mx + np.log(tot)
    return out


def angular_loss_backward(A, B, c, a, p, labels, ref_labels, losses, dlosses):
    """Gradients of ``sum_k dlosses[k] * losses[k]`` (see ``angular_loss_forward``).

    Parameters
    ----------
    A, B, c, a, p, labels, ref_labels :
        As in ``angular_loss_forward``.
    losses : (P,) float32
        Its output.
    dlosses : (P,) float32
        d L / d losses.

    Returns
    -------
    (dA (N, M), dB (M, M), dc (P,)) float32
    """
    A, B, c, a, p, labels, ref_labels, N, M, P = check_angular_args(A, B, c, a, p, labels, ref_labels)
    losses = check_kernel_input(losses, "losses", ndim=1)
    dlosses = check_kernel_input(dlosses, "dlosses", ndim=1)
    if losses.shape[0] != P or dlosses.shape[0] != P:
        raise ValueError(
            f"losses and dlosses must have length {P}, got {losses.shape[0]} and {dlosses.shape[0]}"
        )
    dA = np.zeros((N, M), dtype=np.float64)
    dB = np.zeros((M, M), dtype=np.float64)
    dc = np.zeros(P, dtype=np.float64)
    if P and M:
        step = max(1, _TILE // M)
        for s in range(0, P, step):
            e = min(P, s + step)
            x, mask = _angular_x(A, B, c, a, p, labels, ref_labels, s, e)
            w = np.exp(x - losses[s:e, None].astype(np.float64)) * dlosses[s:e, None]
            w[~mask] = 0.0
            np.add.at(dA, a[s:e], w)
            np.add.at(dB, p[s:e], w)
            dc[s:e] = -w.sum(axis=1)
    return dA.astype(np.float32), dB.astype(np.float32), dc.astype(np.float32)
