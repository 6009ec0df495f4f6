"""numpy twins of src/engine_c/pair_weighting.c (MultiSimilarity / Circle / LiftedStructure /
GeneralizedLifted / SNRContrastive).

Same names, signatures, checks and error messages as the engine wrappers of
``src/mantissa_embed/_engine_pairw.pxi`` (which import the ``_check_*`` helpers below).
The private ``_pairw_rows`` keeps the dtype of its input, so the tests can run it in float64.
"""
from __future__ import annotations

import numpy as np

from .._validation import check_float
from ._losses import _check_flag, _check_in, _check_int_array, _check_out, _check_outs

__all__ = ["pairw_rows_forward", "pairw_rows_backward"]

#: kind name -> (engine.h enum value, parameter names)
PAIRW_KINDS = {
    "multi_similarity": (0, ("alpha", "beta", "base")),
    "circle": (1, ("m", "gamma")),
    "generalized_lifted": (2, ("pos_margin", "neg_margin")),
    "neg_lse": (3, ("neg_margin",)),
}


# --------------------------------------------------------------------------- validation

def _check_kind_params(kind, params):
    """(enum value, (p0, p1, p2) floats in the engine's order) for a kind name and its parameters."""
    if not isinstance(kind, str) or kind not in PAIRW_KINDS:
        raise ValueError(f"kind must be one of {sorted(PAIRW_KINDS)}, got {kind!r}")
    code, names = PAIRW_KINDS[kind]
    if not isinstance(params, (tuple, list)) or len(params) != len(names):
        raise ValueError(f"params must be a tuple ({', '.join(names)}) for kind {kind!r}, got {params!r}")
    vals = []
    for v, nm in zip(params, names):
        if nm in ("alpha", "beta"):
            vals.append(check_float(v, nm, minimum=0.0, strict=True))
        else:
            vals.append(check_float(v, nm))
    if kind == "neg_lse":  # the engine reads neg_margin as p1
        vals = [0.0, vals[0]]
    vals += [0.0] * (3 - len(vals))
    return code, tuple(vals)


def _check_mask(a, name, shape):
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


def _check_rows_args(kind, mat, labels, ref_labels, pos_mask, neg_mask, params, exclude_self,
                     inverted, losses, dmat):
    """Validate the arguments of pairw_rows_forward; returns what the kernels need."""
    code, pv = _check_kind_params(kind, params)
    mat = _check_in(mat, "mat")
    N, M = mat.shape
    inverted = _check_flag(inverted, "inverted")
    exclude_self = _check_flag(exclude_self, "exclude_self")
    if (pos_mask is None) != (neg_mask is None):
        raise ValueError("pos_mask and neg_mask must be given together")
    if pos_mask is not None:
        if labels is not None or ref_labels is not None:
            raise ValueError("give either labels/ref_labels or pos_mask/neg_mask, not both")
        if exclude_self:
            raise ValueError("exclude_self only applies to labels (a mask already says which pairs count)")
        pos_mask = _check_mask(pos_mask, "pos_mask", (N, M))
        neg_mask = _check_mask(neg_mask, "neg_mask", (N, M))
        if N and M and np.any(pos_mask & neg_mask):
            raise ValueError("pos_mask and neg_mask overlap: each pair must be either positive or negative")
    else:
        if labels is None or ref_labels is None:
            raise ValueError("labels and ref_labels (or pos_mask and neg_mask) are required")
        labels = _check_int_array(labels, "labels", length=N)
        ref_labels = _check_int_array(ref_labels, "ref_labels", length=M)
        if exclude_self and N != M:
            raise ValueError(f"exclude_self requires a square matrix, got shape ({N}, {M})")
    losses = _check_out(losses, "losses", (N,))
    dmat = _check_out(dmat, "dmat", (N, M))
    _check_outs([(losses, "losses"), (dmat, "dmat")], [(mat, "mat")])
    return code, pv, mat, labels, ref_labels, pos_mask, neg_mask, exclude_self, inverted, losses, dmat


def _check_backward_args(dlosses, dmat):
    dmat = _check_out(dmat, "dmat", np.shape(dmat) if isinstance(dmat, np.ndarray) else ())
    if dmat.ndim != 2:
        raise ValueError(f"dmat must be 2-D, got shape {dmat.shape}")
    dlosses = _check_in(dlosses, "dlosses", ndim=1)
    if dlosses.shape != (dmat.shape[0],):
        raise ValueError(f"dlosses must have shape ({dmat.shape[0]},), got {dlosses.shape}")
    _check_outs([(dmat, "dmat")], [(dlosses, "dlosses")])
    return dlosses, dmat


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
        ap = np.maximum((one + P0) - x, 0) * P1   # detached weights
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

def pairw_rows_forward(kind, mat, labels=None, ref_labels=None, pos_mask=None, neg_mask=None,
                       params=(), exclude_self=False, inverted=False, losses=None, dmat=None):
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
    (code, pv, mat, labels, ref_labels, pos_mask, neg_mask, exclude_self, inverted, losses,
     dmat) = _check_rows_args(kind, mat, labels, ref_labels, pos_mask, neg_mask, params,
                              exclude_self, inverted, losses, dmat)
    N, M = mat.shape
    if N == 0:
        return losses, dmat
    if pos_mask is not None:
        pos, neg = pos_mask.view(np.bool_), neg_mask.view(np.bool_)
    else:
        pos, neg = _masks_from_labels(labels, ref_labels, exclude_self)
    lv, d = _pairw_rows(kind, mat, pos, neg, *pv, inverted)
    losses[...] = lv
    dmat[...] = d
    return losses, dmat


def pairw_rows_backward(dlosses, dmat):
    """Scale the rows of ``dmat`` in place: ``dmat[i, :] *= dlosses[i]``.

    Turns the per-row derivatives of :func:`pairw_rows_forward` into ``dL / d mat`` given
    ``dL / d losses`` (e.g. a reducer's weights).

    Parameters
    ----------
    dlosses : (N,) float32
    dmat : (N, M) float32, writeable C-contiguous (overwritten)

    Returns
    -------
    dmat : (N, M) float32
    """
    dlosses, dmat = _check_backward_args(dlosses, dmat)
    if dmat.size:
        s = dlosses[:, None]
        dmat[...] = np.where(s == 0, np.float32(0), dmat * s)
    return dmat
