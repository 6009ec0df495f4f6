"""Numpy twins of the softmax-over-pairs kernels (``mantissa_embed._engine._softmax_losses``):
NTXent, SupCon, NPairs, NCA, Instance.

Same names, signatures, checks (``mantissa_embed._checks.softmax_losses``) and errors as the
engine; float64 over the whole (N, M) matrix, written for clarity, not speed or memory.
"""

from __future__ import annotations

import numpy as np

from .._checks.arrays import check_f32
from .._checks.softmax_losses import (
    check_common,
    check_lse,
    check_max_loss,
    check_reduction,
    check_row_weights,
    check_temperature,
    check_xent_lse,
    check_xent_rows,
)

_check_temperature = check_temperature

__all__ = [
    "ntxent_all",
    "supcon_all",
    "softmax_nll_forward",
    "softmax_nll_backward",
    "softmax_xent_rows_forward",
    "softmax_xent_rows_backward",
    "softmax_nll_fast_forward",
    "softmax_nll_fast_backward",
]

#: log(float32 tiny): PML adds ``torch.finfo(float32).tiny`` inside the log of NTXent's probability.
LOG_TINY = float(np.log(np.float64(np.finfo(np.float32).tiny)))


# -- checks shared with the engine wrappers ------------------------------------------------------


def _masks(labels, ref_labels, exclude_self):
    same = labels[:, None] == ref_labels[None, :]
    keep = np.ones(same.shape, dtype=bool)
    if exclude_self:
        np.fill_diagonal(keep, False)
    return same & keep, ~same, keep


def _lse(z, mask):
    """Row log-sum-exp of z over mask (-inf for an empty row), float64."""
    zm = np.where(mask, z, -np.inf)
    m = zm.max(axis=1, initial=-np.inf)
    ms = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return ms + np.log(np.exp(zm - ms[:, None]).sum(axis=1)), m


# -- NTXent ----------------------------------------------------------------------------------------
def ntxent_all(
    sim,
    labels,
    ref_labels,
    temperature,
    exclude_self: bool = False,
    inverted: bool = True,
    reduction: str = "mean",
    weights=None,
    losses: bool = False,
    grad: bool = True,
):
    """NTXentLoss over every pair the labels define (pytorch-metric-learning's NTXentLoss).

    Parameters
    ----------
    sim : (N, M) float32
        Similarities (``inverted=True``) or distances (``z = -sim / T`` then).
    labels : (N,) int64; ref_labels : (M,) int64
    temperature : float > 0
    exclude_self : bool
        Drop the pairs (i, i) (needs N == M).
    reduction : {"mean", "avg_non_zero", "weights"}
        Mean over the positive pairs, mean over the pairs with a loss > 0, or
        ``sum(weights[i, j] * l_ij)`` (weights (N, M) float32, read at the positive pairs).
    losses, grad : bool
        Return the per-pair losses (N, M) (0 off the positive pairs) / ``d value / d sim``.

    Returns
    -------
    (value: float, dsim (N, M) float32 or None, losses (N, M) float32 or None, stats: dict)
        stats: ``num_pos_pairs``, ``num_neg_pairs``, ``num_nonzero``.

    Each positive pair (i, j) charges ``-log(exp(z_ij) / (exp(z_ij) + sum_n exp(z_in)) + tiny)``
    (n over the negatives of i, tiny = float32's smallest normal, as PML).

    Raises
    ------
    TypeError / ValueError
        Wrong dtypes or shapes, ``exclude_self`` with N != M, temperature <= 0, unknown reduction.
    """
    sim, labels, ref_labels, exclude_self = check_common(sim, labels, ref_labels, exclude_self, inverted)
    temperature = check_temperature(temperature)
    weights = check_reduction(reduction, weights, sim.shape, losses, grad)
    c = (1.0 if inverted else -1.0) / temperature
    z = c * sim.astype(np.float64)
    pos, neg, _ = _masks(labels, ref_labels, exclude_self)
    L, _ = _lse(z, neg)
    with np.errstate(invalid="ignore", over="ignore"):
        x = -np.logaddexp(0.0, L[:, None] - z)  # log of the positive's probability
    x = np.where(pos, x, 0.0)
    lmat = np.maximum(-np.logaddexp(x, LOG_TINY), 0.0) * pos
    nz = pos & (lmat > 0)
    if reduction == "weights":
        g = np.where(pos, weights.astype(np.float64), 0.0)
        den = 1.0
    elif reduction == "avg_non_zero":
        g = nz.astype(np.float64)
        den = float(nz.sum())
    else:
        g = pos.astype(np.float64)
        den = float(pos.sum())
    value = float((g * lmat).sum() / den) if den > 0 else 0.0
    stats = {"num_pos_pairs": int(pos.sum()), "num_neg_pairs": int(neg.sum()), "num_nonzero": int(nz.sum())}
    dsim = None
    if grad:
        if den > 0:
            g = g / den
        else:
            g = np.zeros_like(g)
        w = np.exp(x - np.logaddexp(x, LOG_TINY))
        omr = np.where(np.isfinite(L)[:, None], -np.expm1(x), 0.0)
        d = np.where(pos, g * w * omr, 0.0)
        B = d.sum(axis=1)
        with np.errstate(invalid="ignore"):
            q = np.where(neg, np.exp(z - L[:, None]), 0.0)
        q = np.where(np.isfinite(q), q, 0.0)
        dsim = ((-d + q * B[:, None]) * c).astype(np.float32)
    return value, dsim, (lmat.astype(np.float32) if losses else None), stats


# -- SupCon ----------------------------------------------------------------------------------------
def supcon_all(
    sim,
    labels,
    ref_labels,
    temperature,
    exclude_self: bool = False,
    inverted: bool = True,
    reduction: str = "avg_non_zero",
    weights=None,
    losses: bool = False,
    grad: bool = True,
):
    """SupConLoss over every pair the labels define (pytorch-metric-learning's SupConLoss).

    Same arguments as ``ntxent_all``, except ``weights`` (N,) (one per anchor row) and
    ``losses`` (N,). Row i charges ``logsumexp_{j pos or neg of i} z_ij - mean_{j pos of i} z_ij``
    (0 when i has no positive); ``reduction="mean"`` divides by N.

    Returns
    -------
    (value: float, dsim (N, M) float32 or None, losses (N,) float32 or None, stats: dict)
        stats: ``num_pos_pairs``, ``num_anchors`` (rows with a positive), ``num_nonzero``.
    """
    sim, labels, ref_labels, exclude_self = check_common(sim, labels, ref_labels, exclude_self, inverted)
    temperature = check_temperature(temperature)
    N, M = sim.shape
    weights = check_reduction(reduction, weights, (N,), losses, grad)
    c = (1.0 if inverted else -1.0) / temperature
    z = c * sim.astype(np.float64)
    pos, _, keep = _masks(labels, ref_labels, exclude_self)
    npos = pos.sum(axis=1)
    has = npos > 0
    lse, _ = _lse(z, keep)
    lse = np.where(has, lse, 0.0)
    mean_pos = np.where(has, (z * pos).sum(axis=1) / np.maximum(npos, 1), 0.0)
    lvec = np.where(has, lse - mean_pos, 0.0)
    nz = lvec > 0
    if reduction == "weights":
        g = weights.astype(np.float64)
        den = 1.0
    elif reduction == "avg_non_zero":
        g = nz.astype(np.float64)
        den = float(nz.sum())
    else:
        g = np.ones(N)
        den = float(N)
    value = float((g * lvec).sum() / den) if den > 0 else 0.0
    stats = {"num_pos_pairs": int(npos.sum()), "num_anchors": int(has.sum()), "num_nonzero": int(nz.sum())}
    dsim = None
    if grad:
        g = g / den if den > 0 else np.zeros(N)
        g = np.where(has, g, 0.0)
        sm = np.where(keep & has[:, None], np.exp(np.where(keep, z, 0.0) - lse[:, None]), 0.0)
        d = sm - pos / np.maximum(npos, 1)[:, None]
        dsim = (g[:, None] * d * c).astype(np.float32)
    return value, dsim, (lvec.astype(np.float32) if losses else None), stats


# -- row softmax NLL (NCA, NPairs, Instance) -------------------------------------------------------
def softmax_nll_forward(
    sim,
    labels,
    ref_labels,
    scale: float = 1.0,
    exclude_self: bool = False,
    inverted: bool = True,
    max_loss=np.inf,
):
    """Row softmax negative log-likelihood of the positives (NCA / NPairs / Instance).

    ``z = scale * sim`` (``inverted``) or ``-scale * sim``; row i ranges over every j (j != i under
    ``exclude_self``), its positives are the j with ``labels[i] == ref_labels[j]``, and
    ``l_i = logsumexp_j z_ij - logsumexp_{j pos} z_ij = -log p_i``.

    sim (N, M) float32, labels (N,), ref_labels (M,) int64 ->
    ``(losses (N,) float32, lse (N, 2) float64, valid (N,) bool)``: ``lse`` holds the two
    log-sum-exps (-inf when empty); ``valid`` is False for a row without a positive or whose
    largest positive probability is below ``exp(-max_loss)`` (its loss is set to 0).
    """
    sim, labels, ref_labels, exclude_self = check_common(sim, labels, ref_labels, exclude_self, inverted)
    scale = check_f32(scale, "scale")
    max_loss = check_max_loss(max_loss)
    c = (1.0 if inverted else -1.0) * scale
    z = c * sim.astype(np.float64)
    pos, _, keep = _masks(labels, ref_labels, exclude_self)
    la, _ = _lse(z, keep)
    lp, mp = _lse(z, pos)
    la = np.where(keep.any(axis=1), la, -np.inf)
    lp = np.where(pos.any(axis=1), lp, -np.inf)
    with np.errstate(invalid="ignore"):
        valid = np.isfinite(lp) & (la - mp < max_loss)
        losses = np.where(valid, np.maximum(la - lp, 0.0), 0.0)
    return losses.astype(np.float32), np.stack([la, lp], axis=1), valid


def softmax_nll_backward(
    sim,
    labels,
    ref_labels,
    lse,
    weights,
    scale: float = 1.0,
    exclude_self: bool = False,
    inverted: bool = True,
):
    """Gradient of ``sum_i weights[i] * l_i`` (see ``softmax_nll_forward``) w.r.t. ``sim``.

    sim (N, M) float32, lse (N, 2) float64 (from the forward), weights (N,) float32 -> dsim (N, M).
    """
    sim, labels, ref_labels, exclude_self = check_common(sim, labels, ref_labels, exclude_self, inverted)
    scale = check_f32(scale, "scale")
    N, M = sim.shape
    lse = check_lse(lse, N)
    weights = check_row_weights(weights, N)
    c = (1.0 if inverted else -1.0) * scale
    z = c * sim.astype(np.float64)
    pos, _, keep = _masks(labels, ref_labels, exclude_self)
    la, lp = lse[:, 0], lse[:, 1]
    ok = np.isfinite(lp) & (weights != 0)
    with np.errstate(invalid="ignore", over="ignore"):
        a = np.where(keep & ok[:, None], np.exp(z - np.where(ok, la, 0.0)[:, None]), 0.0)
        b = np.where(pos & ok[:, None], np.exp(z - np.where(ok, lp, 0.0)[:, None]), 0.0)
    return (weights.astype(np.float64)[:, None] * c * (a - b)).astype(np.float32)


# --------------------------------------------------------------------------------------------
# single-target row softmax cross-entropy (InstanceLoss)
# --------------------------------------------------------------------------------------------


def softmax_xent_rows_forward(sim, target, scale: float = 1.0):
    """Single-target row softmax cross-entropy (InstanceLoss): ``z = scale * sim`` and
    ``l_i = logsumexp_j z_ij - z_{i, target_i}`` (>= 0).

    sim (N, M) float32, target (N,) int64 in [0, M) -> ``(losses (N,) float32, lse (N,) float32)``
    with ``lse_i = logsumexp_j z_ij``. float64 here; the C kernel works on float32 logits.
    """
    sim, target = check_xent_rows(sim, target)
    scale = check_f32(scale, "scale")
    N, M = sim.shape
    if N == 0:
        return np.zeros(0, np.float32), np.zeros(0, np.float32)
    z = scale * sim.astype(np.float64)
    m = z.max(axis=1)
    lse = m + np.log(np.exp(z - m[:, None]).sum(axis=1))
    losses = np.maximum(lse - z[np.arange(N), target], 0.0)
    return losses.astype(np.float32), lse.astype(np.float32)


def softmax_xent_rows_backward(sim, target, lse, weights, scale: float = 1.0):
    """Gradient of ``sum_i weights[i] * l_i`` (see ``softmax_xent_rows_forward``) w.r.t. sim:
    ``dsim_ij = weights_i * scale * (softmax_ij - [j == target_i])``.

    sim (N, M) float32, target (N,) int64, lse (N,) float32 (from the forward), weights (N,) float32
    -> dsim (N, M) float32.
    """
    sim, target = check_xent_rows(sim, target)
    scale = check_f32(scale, "scale")
    N, M = sim.shape
    lse = check_xent_lse(lse, N)
    weights = check_row_weights(weights, N)
    if N == 0:
        return np.zeros((N, M), np.float32)
    z = scale * sim.astype(np.float64)
    p = np.exp(z - lse.astype(np.float64)[:, None])
    p[np.arange(N), target] -= 1.0
    return (weights.astype(np.float64)[:, None] * scale * p).astype(np.float32)


def softmax_nll_fast_forward(
    sim,
    labels,
    ref_labels,
    scale: float = 1.0,
    exclude_self: bool = False,
    inverted: bool = True,
    max_loss=np.inf,
):
    """Twin of the engine's fast row softmax NLL: the float64 ``softmax_nll_forward`` (the C
    kernel uses one float exp per entry and agrees with it up to float32 rounding of the logits)."""
    return softmax_nll_forward(
        sim, labels, ref_labels, scale=scale, exclude_self=exclude_self, inverted=inverted, max_loss=max_loss
    )


def softmax_nll_fast_backward(
    sim,
    labels,
    ref_labels,
    lse,
    weights,
    scale: float = 1.0,
    exclude_self: bool = False,
    inverted: bool = True,
):
    """Twin of the engine's fast row softmax NLL backward: the float64 ``softmax_nll_backward``."""
    return softmax_nll_backward(
        sim, labels, ref_labels, lse, weights, scale=scale, exclude_self=exclude_self, inverted=inverted
    )
