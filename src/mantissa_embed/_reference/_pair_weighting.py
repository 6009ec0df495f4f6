"""Numpy twins of the pair-weighting kernels (``mantissa_embed._engine._pair_weighting``):
MultiSimilarity, Circle, (generalized) lifted structure rows.

Same names, signatures, checks (``mantissa_embed._checks.pair_weighting``) and errors as the
engine. ``_pairw_rows`` keeps its input dtype (float64 in the tests).
"""

from __future__ import annotations

import numpy as np

from .._checks.pair_weighting import check_backward_args, check_rows_args

__all__ = ["pairw_rows_forward", "pairw_rows_backward"]


# --------------------------------------------------------------------------- math
def _masked_lse(t, mask, add_one):
    """Row-wise log(sum_{mask} exp(t)) (+1 inside the log when add_one), 0 on empty rows, and the
    softmax weights exp(t - lse) on the mask (0 elsewhere). Sums in float64."""
    dt = t.dtype
    tm = np.where(mask, t, dt.type(-np.inf))
    mx = tm.max(axis=1, initial=-np.inf)
    if add_one:
        mx = np.maximum(mx, 0)
    mx = np.where(np.isfinite(mx), mx, 0).astype(dt)
    with np.errstate(under="ignore"):
        e = np.where(mask, np.exp(tm - mx[:, None]), dt.type(0))
    s = e.sum(axis=1, dtype=np.float64)
    if add_one:
        s = s + np.exp(-mx.astype(np.float64))
    has = mask.any(axis=1)
    safe = np.where(s > 0, s, 1.0)
    lse = np.where(has, mx + np.log(safe), 0.0)
    return lse, e / safe[:, None].astype(dt), has


def _pairw_rows(kind, x, pos, neg, p0, p1, p2, inverted):
    """(losses (N,) float64, dmat (N, M) in x's dtype) for bool masks pos / neg (N, M)."""
    dt = x.dtype
    sg = dt.type(-1 if inverted else 1)
    one = dt.type(1)
    P0, P1, P2 = dt.type(p0), dt.type(p1), dt.type(p2)
    if kind == "multi_similarity":
        pe = sg * (x - P2)
        lp, wp, _ = _masked_lse(P0 * pe, pos, True)
        ln, wn, _ = _masked_lse(P1 * -pe, neg, True)
        losses = lp / p0 + ln / p1
        d = sg * wp - sg * wn
    elif kind == "circle":
        ap = np.maximum((one + P0) - x, 0) * P1  # detached weights
        an = np.maximum(x + P0, 0) * P1
        t = np.where(pos, -ap * (x - (one - P0)), an * (x - P0))
        lp, wp, hp = _masked_lse(t, pos, False)
        ln, wn, hn = _masked_lse(t, neg, False)
        z = lp + ln
        ok = hp & hn
        with np.errstate(over="ignore"):
            ez = np.exp(np.minimum(z, 20.0))
        losses = np.where(ok, np.where(z > 20, z, np.log1p(ez)), 0.0)
        w = np.where(ok, np.where(z > 20, 1.0, ez / (1.0 + ez)), 0.0).astype(dt)
        d = w[:, None] * (-ap * wp + an * wn)
    elif kind == "generalized_lifted":
        lp, wp, _ = _masked_lse(sg * (x - P0), pos, False)
        ln, wn, _ = _masked_lse(sg * (P1 - x), neg, False)
        z = lp + ln
        losses = np.maximum(z, 0.0)
        w = (z > 0).astype(dt)
        d = w[:, None] * (sg * wp - sg * wn)
    else:  # neg_lse
        ln, wn, hn = _masked_lse(sg * (P1 - x), neg, False)
        losses = np.where(hn, ln, -np.inf)
        d = -sg * wn
    return losses, d.astype(dt, copy=False)


def _masks_from_labels(labels, ref_labels, exclude_self):
    pos = labels[:, None] == ref_labels[None, :]
    neg = ~pos
    if exclude_self:
        np.fill_diagonal(pos, False)
    return pos, neg


# --------------------------------------------------------------------------- public twins
def pairw_rows_forward(
    kind,
    mat,
    labels=None,
    ref_labels=None,
    pos_mask=None,
    neg_mask=None,
    params=(),
    exclude_self: bool = False,
    inverted: bool = False,
    losses=None,
    dmat=None,
):
    """Per-anchor-row losses of the mat-based pair losses, and their gradient (fused).

    For each row i of ``mat`` (a similarity when ``inverted``, else a distance; ``sg = -1`` when
    inverted, ``+1`` otherwise), with positives ``P_i`` and negatives ``N_i``, and
    ``LSE_S(t) = log sum_{j in S} exp(t_j)`` (0 for an empty set, as PML's masked logsumexp):

    - ``"multi_similarity"``, ``params=(alpha, beta, base)`` (MultiSimilarityLoss, Wang et al.
      2019): ``pe = sg (x - base)``, ``loss_i = log(1 + sum_P exp(alpha pe)) / alpha
      + log(1 + sum_N exp(-beta pe)) / beta``.
    - ``"circle"``, ``params=(m, gamma)`` (CircleLoss, Sun et al. 2020; ``mat`` a cosine
      similarity): ``t = -gamma [1 + m - s]+ (s - (1 - m))`` on P, ``gamma [s + m]+ (s - m)`` on N,
      ``loss_i = softplus(LSE_P(t) + LSE_N(t))``, 0 when P_i or N_i is empty; the bracketed
      weights are constants for the gradient (PML detaches them).
    - ``"generalized_lifted"``, ``params=(pos_margin, neg_margin)`` (GeneralizedLiftedStructureLoss,
      Hermans et al. 2017): ``loss_i = relu(LSE_P(sg (x - pos_margin)) + LSE_N(sg (neg_margin - x)))``.
    - ``"neg_lse"``, ``params=(neg_margin,)``: ``loss_i = LSE_N(sg (neg_margin - x))``, ``-inf`` for
      an empty N_i (LiftedStructureLoss's per-anchor negative term; P is ignored).

    Parameters
    ----------
    kind : str
        One of the four names above.
    mat : (N, M) float32
    labels : (N,) int64, optional
    ref_labels : (M,) int64, optional
        Same label -> positive, else negative. Required unless the masks are given.
    pos_mask, neg_mask : (N, M) bool or uint8, optional
        Explicit pair sets (instead of labels); they must not overlap.
    params : tuple of float
        See above; ``alpha`` and ``beta`` must be > 0.
    exclude_self : bool, default False
        With labels only: drop the pairs (i, i) from the positives (requires N == M).
    inverted : bool, default False
    losses : (N,) float32, optional
    dmat : (N, M) float32, optional
        Output buffers (overwritten).

    Returns
    -------
    (losses, dmat) : ((N,) float32, (N, M) float32)
        ``dmat[i, j] = d losses[i] / d mat[i, j]``, 0 outside ``P_i`` and ``N_i``.

    Raises
    ------
    ValueError
        Unknown kind, wrong params, shapes, overlapping masks, labels and masks both given.
    TypeError
        Wrong dtypes.
    """
    (code, pv, mat, labels, ref_labels, pos_mask, neg_mask, exclude_self, inverted, losses, dmat) = (
        check_rows_args(
            kind, mat, labels, ref_labels, pos_mask, neg_mask, params, exclude_self, inverted, losses, dmat
        )
    )
    N, M = mat.shape
    if N == 0:
        return losses, dmat
    if pos_mask is not None:
        pos, neg = pos_mask.view(np.bool_), neg_mask.view(np.bool_)
    else:
        pos, neg = _masks_from_labels(labels, ref_labels, exclude_self)
    p0, p1, p2 = pv
    lv, d = _pairw_rows(kind, mat, pos, neg, p0, p1, p2, inverted)
    losses[...] = lv
    dmat[...] = d
    return losses, dmat


def pairw_rows_backward(dlosses, dmat):
    """Scale the rows of ``dmat`` in place: ``dmat[i, :] *= dlosses[i]``.

    Turns the per-row derivatives of ``pairw_rows_forward`` into ``dL / d mat`` given
    ``dL / d losses`` (e.g. a reducer's weights).

    Parameters
    ----------
    dlosses : (N,) float32
    dmat : (N, M) float32, writeable C-contiguous (overwritten)

    Returns
    -------
    dmat : (N, M) float32
    """
    dlosses, dmat = check_backward_args(dlosses, dmat)
    if dmat.size:
        s = dlosses[:, None]
        dmat[...] = np.where(s == 0, np.float32(0), dmat * s)
    return dmat
