"""Numpy twins of the pair-loss kernels of ``mantissa_embed.engine`` (``src/engine_c/pair_losses.c``).

Same names, signatures, validation and semantics as the engine wrappers; both backends use the
checks of ``mantissa_embed._checks.pair_losses``. The private helpers
(``_contrastive_all``, ``_triplet_all``, ``_contrastive_all_terms``, ...) keep the dtype of their
inputs, so the tests can run them in float64 for finite differences. Per-term losses are computed
in the input dtype with pytorch-metric-learning's operation order (so the "loss > 0" test of
AvgNonZeroReducer decides as PML does); sums are taken in float64.

Every kernel reduces with ``nonzero_only`` (AvgNonZeroReducer) or the mean (MeanReducer), or,
given ``weights`` (d value / d l_t from any reducer), returns ``value = sum_t weights_t l_t`` and
its gradient; ``return_losses=True`` appends the per-term losses ``l_t`` to the result.
"""

from __future__ import annotations

import numpy as np

from .._checks.arrays import check_f32, check_flag, check_int_array
from .._checks.pair_losses import (
    check_ddist_overlap,
    check_label_pair,
    check_pair_args,
    check_self,
    check_swap_all,
    check_terms,
)

__all__ = [
    "contrastive_loss_all",
    "contrastive_loss_pairs",
    "triplet_all_count",
    "triplet_loss_all",
    "triplet_loss_triplets",
]


def _reduce(fused, terms, shape, weights, ddist, losses, red, return_losses):
    """A kernel's result from its fused reduction ``fused() -> (loss, g, stats)`` and, for the
    per-term modes, ``terms(w) -> (losses, g, weighted sums by stats key)``."""
    loss, g, stats = fused()
    if red == "weights" or losses is not None:
        lt, gw, sums = terms(weights if weights is not None else np.zeros(shape, np.float32))
        if losses is not None:
            losses[...] = lt
        if red == "weights":
            g, loss = gw, float(sum(sums.values()))
            stats.update(sums)
    if ddist is not None:
        ddist[...] = g
    return (loss, ddist, stats, losses) if return_losses else (loss, ddist, stats)


# --------------------------------------------------------------------------- terms

# --------------------------------------------------------------------------- fused


def _mean(total, den):
    return float(total / den) if den > 0 else 0.0


def _contrastive_terms(d, pm, nm, inverted):
    """Per-pair violations (positive branch, negative branch), in d's dtype, PML's order."""
    pm, nm = d.dtype.type(pm), d.dtype.type(nm)
    vp = (pm - d) if inverted else (d - pm)
    vn = (d - nm) if inverted else (nm - d)
    return vp, vn


def _contrastive_all(dist, labels, ref_labels, pm, nm, exclude_self, inverted, nonzero_only):
    N, M = dist.shape
    pos = labels[:, None] == ref_labels[None, :]
    neg = ~pos
    if exclude_self:
        pos[np.arange(N), np.arange(N)] = False
    vp, vn = _contrastive_terms(dist, pm, nm, inverted)
    actp = pos & (vp > 0)
    actn = neg & (vn > 0)
    sp = vp[actp].sum(dtype=np.float64)
    sn = vn[actn].sum(dtype=np.float64)
    n_pos, n_neg = int(pos.sum()), int(neg.sum())
    n_ap, n_an = int(actp.sum()), int(actn.sum())
    den_p = n_ap if nonzero_only else n_pos
    den_n = n_an if nonzero_only else n_neg
    sgp = -1.0 if inverted else 1.0
    g = np.zeros_like(dist)
    if den_p > 0:
        g[actp] = sgp / den_p
    if den_n > 0:
        g[actn] = -sgp / den_n
    stats = {
        "pos_loss": _mean(sp, den_p),
        "neg_loss": _mean(sn, den_n),
        "num_pos_pairs": n_pos,
        "num_neg_pairs": n_neg,
        "num_pos_nonzero": n_ap,
        "num_neg_nonzero": n_an,
    }
    return stats["pos_loss"] + stats["neg_loss"], g, stats


def _contrastive_pairs(dist, a1, p, a2, n, pm, nm, inverted, nonzero_only):
    vp, _ = _contrastive_terms(dist[a1, p], pm, nm, inverted)
    _, vn = _contrastive_terms(dist[a2, n], pm, nm, inverted)
    actp, actn = vp > 0, vn > 0
    sp = vp[actp].sum(dtype=np.float64)
    sn = vn[actn].sum(dtype=np.float64)
    n_ap, n_an = int(actp.sum()), int(actn.sum())
    den_p = n_ap if nonzero_only else len(a1)
    den_n = n_an if nonzero_only else len(a2)
    sgp = -1.0 if inverted else 1.0
    g = np.zeros_like(dist)
    if den_p > 0:
        np.add.at(g, (a1[actp], p[actp]), dist.dtype.type(sgp / den_p))
    if den_n > 0:
        np.add.at(g, (a2[actn], n[actn]), dist.dtype.type(-sgp / den_n))
    stats = {
        "pos_loss": _mean(sp, den_p),
        "neg_loss": _mean(sn, den_n),
        "num_pos_pairs": len(a1),
        "num_neg_pairs": len(a2),
        "num_pos_nonzero": n_ap,
        "num_neg_nonzero": n_an,
    }
    return stats["pos_loss"] + stats["neg_loss"], g, stats


def _softplus(v):
    """torch.nn.functional.softplus (beta 1, threshold 20) and its derivative, in v's dtype."""
    with np.errstate(over="ignore"):
        z = np.exp(np.minimum(v, v.dtype.type(20)))
        sp = np.where(v > 20, v, np.log1p(z))
        w = np.where(v > 20, v.dtype.type(1), z / (z + v.dtype.type(1)))
    return sp.astype(v.dtype, copy=False), w.astype(v.dtype, copy=False)


def _triplet_terms(dap, dan, dpn, margin, swap, smooth, inverted, nonzero_only):
    """Per-triplet loss, the weight dL_t/dv (0 when not counted), the counted mask and the share
    of the negative gradient that goes to d_an (the rest goes to d_pn under swap)."""
    dt = dap.dtype
    if swap:
        tie = dan == dpn
        an_wins = (dan > dpn) if inverted else (dan < dpn)
        share = np.where(tie, dt.type(0.5), np.where(an_wins, dt.type(1), dt.type(0)))
        dan = np.where(an_wins | tie, dan, dpn)
    else:
        share = np.ones_like(dap)
    margin = dt.type(margin)
    v = ((dan - dap) + margin) if inverted else ((dap - dan) + margin)
    if smooth:
        loss, w = _softplus(v)
    else:
        loss = np.maximum(v, dt.type(0))
        w = (v > 0).astype(dt)
    counted = loss > 0 if nonzero_only else np.ones(loss.shape, dtype=bool)
    w = np.where(counted, w, dt.type(0))
    return loss, w, counted, share


def _anchor_blocks(dist, labels, ref_labels, exclude_self, swap):
    """Per anchor a with a triplet: (a, positives P, negatives Ng, d_ap, d_an, d_pn or None), the
    three (P, Ng) blocks in (p, n) order."""
    ref_idx = np.arange(dist.shape[1])
    for a in range(dist.shape[0]):
        P = ref_idx[(ref_labels == labels[a]) & ~((ref_idx == a) & exclude_self)]
        Ng = ref_idx[ref_labels != labels[a]]
        if len(P) and len(Ng):
            yield (
                a,
                P,
                Ng,
                np.repeat(dist[a, P][:, None], len(Ng), axis=1),
                np.repeat(dist[a, Ng][None, :], len(P), axis=0),
                dist[np.ix_(P, Ng)] if swap else None,
            )


def _triplet_all(dist, labels, ref_labels, margin, exclude_self, swap, smooth, inverted, nonzero_only):
    """Reference: loops over anchors (clarity over speed), each anchor a (P, Nneg) block."""
    sg = -1.0 if inverted else 1.0
    g = np.zeros(dist.shape, dtype=np.float64)
    total, n_trip, n_nz = 0.0, 0, 0
    for a, P, Ng, dap, dan, dpn in _anchor_blocks(dist, labels, ref_labels, exclude_self, swap):
        loss, w, counted, share = _triplet_terms(dap, dan, dpn, margin, swap, smooth, inverted, nonzero_only)
        n_trip += loss.size
        n_nz += int((loss > 0).sum())
        total += loss[counted].sum(dtype=np.float64)
        w = w.astype(np.float64)
        g[a, P] += sg * w.sum(axis=1)
        g[a, Ng] -= sg * (w * share).sum(axis=0)
        if swap:
            g[np.ix_(P, Ng)] -= sg * w * (1 - share)
    den = n_nz if nonzero_only else n_trip
    loss = _mean(total, den)
    g = (g / den if den > 0 else np.zeros_like(g)).astype(dist.dtype)
    return loss, g, {"loss": loss, "num_triplets": n_trip, "num_nonzero": n_nz}


def _triplet_triplets(dist, a, p, n, margin, swap, smooth, inverted, nonzero_only):
    sg = -1.0 if inverted else 1.0
    dpn = dist[p, n] if swap else None
    loss, w, counted, share = _triplet_terms(
        dist[a, p], dist[a, n], dpn, margin, swap, smooth, inverted, nonzero_only
    )
    n_nz = int((loss > 0).sum())
    den = n_nz if nonzero_only else len(a)
    total = loss[counted].sum(dtype=np.float64)
    g = np.zeros(dist.shape, dtype=np.float64)
    if den > 0:
        w = w.astype(np.float64)
        np.add.at(g, (a, p), sg * w)
        np.add.at(g, (a, n), -sg * w * share)
        if swap:
            np.add.at(g, (p, n), -sg * w * (1 - share))
        g /= den
    lv = _mean(total, den)
    return lv, g.astype(dist.dtype), {"loss": lv, "num_triplets": len(a), "num_nonzero": n_nz}


def _contrastive_all_terms(dist, labels, ref_labels, pm, nm, exclude_self, inverted, weights):
    """Per-term losses (N, M) (0 off the pairs), ``weights * dl/d dist`` (N, M) and the weighted
    sums (pos, neg), in dist's dtype."""
    N, M = dist.shape
    pos = labels[:, None] == ref_labels[None, :]
    neg = ~pos
    if exclude_self:
        pos[np.arange(N), np.arange(N)] = False
    vp, vn = _contrastive_terms(dist, pm, nm, inverted)
    actp, actn = pos & (vp > 0), neg & (vn > 0)
    zero = dist.dtype.type(0)
    losses = np.where(actp, vp, np.where(actn, vn, zero))
    w = np.where(pos | neg, weights, zero).astype(dist.dtype)
    sgp = dist.dtype.type(-1 if inverted else 1)
    g = np.where(actp, w * sgp, np.where(actn, -(w * sgp), zero))
    wl = w.astype(np.float64) * losses
    return losses, g, {"pos_loss": float(wl[pos].sum()), "neg_loss": float(wl[neg].sum())}


def _contrastive_pairs_terms(dist, a1, p, a2, n, pm, nm, inverted, weights):
    """Per-term losses (K1 + K2,), the positives first, the gradient of sum_k w_k l_k and the
    weighted sums (pos, neg)."""
    vp, _ = _contrastive_terms(dist[a1, p], pm, nm, inverted)
    _, vn = _contrastive_terms(dist[a2, n], pm, nm, inverted)
    v = np.concatenate([vp, vn])
    zero = dist.dtype.type(0)
    losses = np.maximum(v, zero)
    w = weights.astype(dist.dtype)
    sgp = dist.dtype.type(-1 if inverted else 1)
    sign = np.concatenate([np.full(len(a1), sgp), np.full(len(a2), -sgp)]).astype(dist.dtype)
    g = np.zeros_like(dist)
    np.add.at(g, (np.concatenate([a1, a2]), np.concatenate([p, n])), np.where(v > 0, w * sign, zero))
    wl = w.astype(np.float64) * losses
    return losses, g, {"pos_loss": float(wl[: len(a1)].sum()), "neg_loss": float(wl[len(a1) :].sum())}


def _triplet_all_terms(dist, labels, ref_labels, margin, exclude_self, swap, smooth, inverted, weights):
    """Per-term losses in (a, p, n) order and the gradient of sum_t weights_t l_t."""
    sg = -1.0 if inverted else 1.0
    g = np.zeros(dist.shape, dtype=np.float64)
    out, t = [], 0
    for a, P, Ng, dap, dan, dpn in _anchor_blocks(dist, labels, ref_labels, exclude_self, swap):
        loss, dl, _, share = _triplet_terms(dap, dan, dpn, margin, swap, smooth, inverted, False)
        out.append(loss.reshape(-1))
        w = weights[t : t + loss.size].reshape(loss.shape).astype(np.float64) * dl
        t += loss.size
        g[a, P] += sg * w.sum(axis=1)
        g[a, Ng] -= sg * (w * share).sum(axis=0)
        if swap:
            g[np.ix_(P, Ng)] -= sg * w * (1 - share)
    losses = np.concatenate(out) if out else np.zeros(0, dtype=dist.dtype)
    return losses, g.astype(dist.dtype), {"loss": float(np.sum(weights.astype(np.float64) * losses))}


def _triplet_triplets_terms(dist, a, p, n, margin, swap, smooth, inverted, weights):
    sg = -1.0 if inverted else 1.0
    dpn = dist[p, n] if swap else None
    losses, dl, _, share = _triplet_terms(dist[a, p], dist[a, n], dpn, margin, swap, smooth, inverted, False)
    w = weights.astype(np.float64) * dl
    g = np.zeros(dist.shape, dtype=np.float64)
    np.add.at(g, (a, p), sg * w)
    np.add.at(g, (a, n), -sg * w * share)
    if swap:
        np.add.at(g, (p, n), -sg * w * (1 - share))
    return losses, g.astype(dist.dtype), {"loss": float(np.sum(weights.astype(np.float64) * losses))}


# --------------------------------------------------------------------------- public


def contrastive_loss_all(
    dist,
    labels,
    ref_labels,
    pos_margin: float = 0.0,
    neg_margin: float = 1.0,
    exclude_self: bool = False,
    inverted: bool = False,
    nonzero_only: bool = True,
    ddist=None,
    weights=None,
    grad: bool = True,
    return_losses: bool = False,
):
    """Contrastive loss over every pair of a distance matrix, and d value / d dist.

    pytorch-metric-learning's ``ContrastiveLoss`` (Hadsell, Chopra & LeCun 2006): positive pairs
    (same label) charge ``relu(d - pos_margin)``, negative pairs ``relu(neg_margin - d)``
    (``inverted``, a similarity: ``relu(pos_margin - s)`` and ``relu(s - neg_margin)``). Each kind
    is averaged on its own, over its terms with loss > 0 (``nonzero_only``) or over all of them, and
    the two means are summed; a kind with no (non-zero) term contributes 0. Given ``weights``
    (N, M) (read at the pairs): ``pos_loss = sum_pos w l``, ``neg_loss = sum_neg w l``.

    dist (N, M) float32; labels (N,), ref_labels (M,) int64; ``exclude_self`` drops the pairs
    (i, i) (requires N == M); ``ddist`` (N, M) float32 output buffer; ``grad=False``: no gradient
    (None). Returns ``(loss, ddist, stats[, losses (N, M) float32, 0 off the pairs])``;
    ``stats``: pos_loss, neg_loss, num_pos_pairs, num_neg_pairs, num_pos_nonzero, num_neg_nonzero.
    """
    dist, ddist, N, M, inverted, nonzero_only = check_pair_args(dist, ddist, inverted, nonzero_only)
    labels, ref_labels = check_label_pair(labels, ref_labels, N, M)
    exclude_self = check_self(exclude_self, N, M)
    pm = check_f32(pos_margin, "pos_margin")
    nm = check_f32(neg_margin, "neg_margin")
    weights, ddist, losses, red = check_terms(weights, (N, M), ddist, grad, return_losses, nonzero_only)
    check_ddist_overlap(ddist, weights, labels=labels, ref_labels=ref_labels)
    args = (dist, labels, ref_labels, pm, nm, exclude_self, inverted)
    return _reduce(
        lambda: _contrastive_all(*args, nonzero_only),
        lambda w: _contrastive_all_terms(*args, w),
        (N, M),
        weights,
        ddist,
        losses,
        red,
        return_losses,
    )


def contrastive_loss_pairs(
    dist,
    a1,
    p,
    a2,
    n,
    pos_margin: float = 0.0,
    neg_margin: float = 1.0,
    inverted: bool = False,
    nonzero_only: bool = True,
    ddist=None,
    weights=None,
    grad: bool = True,
    return_losses: bool = False,
):
    """Contrastive loss over given pairs (pytorch-metric-learning's ``(a1, p, a2, n)``).

    Same terms and reductions as ``contrastive_loss_all``; ``(a1[k], p[k])`` (K1 each, in
    [0, N) x [0, M)) are the positive pairs, ``(a2[k], n[k])`` (K2) the negative ones; a pair listed
    twice counts twice. The terms (``weights``, ``losses``: (K1 + K2,)) are the positive pairs,
    then the negative ones.
    """
    dist, ddist, N, M, inverted, nonzero_only = check_pair_args(dist, ddist, inverted, nonzero_only)
    a1 = check_int_array(a1, "a1", upper=N)
    p = check_int_array(p, "p", length=a1.shape[0], upper=M)
    a2 = check_int_array(a2, "a2", upper=N)
    n = check_int_array(n, "n", length=a2.shape[0], upper=M)
    pm = check_f32(pos_margin, "pos_margin")
    nm = check_f32(neg_margin, "neg_margin")
    K = len(a1) + len(a2)
    weights, ddist, losses, red = check_terms(weights, (K,), ddist, grad, return_losses, nonzero_only)
    check_ddist_overlap(ddist, weights, a1=a1, p=p, a2=a2, n=n)
    args = (dist, a1, p, a2, n, pm, nm, inverted)
    return _reduce(
        lambda: _contrastive_pairs(*args, nonzero_only),
        lambda w: _contrastive_pairs_terms(*args, w),
        (K,),
        weights,
        ddist,
        losses,
        red,
        return_losses,
    )


def triplet_all_count(labels, ref_labels, exclude_self: bool = False):
    """The number of triplets ``triplet_loss_all`` ranges over (its per-term losses' length)."""
    labels = check_int_array(labels, "labels")
    ref_labels = check_int_array(ref_labels, "ref_labels")
    exclude_self = check_self(exclude_self, len(labels), len(ref_labels))
    pos = labels[:, None] == ref_labels[None, :]
    npos = pos.sum(axis=1) - (1 if exclude_self else 0)
    return int(np.sum(npos * (len(ref_labels) - pos.sum(axis=1))))


def triplet_loss_all(
    dist,
    labels,
    ref_labels,
    margin: float = 0.05,
    exclude_self: bool = False,
    swap: bool = False,
    smooth: bool = False,
    inverted: bool = False,
    nonzero_only: bool = True,
    ddist=None,
    weights=None,
    grad: bool = True,
    return_losses: bool = False,
):
    """Triplet margin loss over every triplet of a distance matrix, and d value / d dist.

    pytorch-metric-learning's ``TripletMarginLoss`` (Schroff, Kalenichenko & Philbin 2015) with
    ``triplets_per_anchor="all"``: for every anchor a, positive p (same label, p != a under
    ``exclude_self``) and negative n (other label), ``v = (d_ap - d_an) + margin``
    (similarity: ``(s_an - s_ap) + margin``), loss ``relu(v)`` or ``softplus(v)`` (``smooth``),
    averaged over the triplets with loss > 0 (``nonzero_only``) or over all of them, or weighted
    by ``weights``. ``swap`` (requires N == M and equal labels) replaces d_an by
    ``min(d_an, d_pn)`` (similarity: max); ties split the gradient. The terms (``weights``,
    ``losses``: (``triplet_all_count``,)) are sorted by (a, p, n), as
    ``mantissa_embed.utils.get_all_triplets_indices``.

    Returns ``(loss, ddist (N, M) float32 or None, stats[, losses])``; ``stats``: loss,
    num_triplets, num_nonzero. Other arguments: see ``contrastive_loss_all``.
    """
    dist, ddist, N, M, inverted, nonzero_only = check_pair_args(dist, ddist, inverted, nonzero_only)
    labels, ref_labels = check_label_pair(labels, ref_labels, N, M)
    exclude_self = check_self(exclude_self, N, M)
    swap = check_swap_all(swap, labels, ref_labels)
    smooth = check_flag(smooth, "smooth")
    margin = check_f32(margin, "margin")
    T = triplet_all_count(labels, ref_labels, exclude_self) if (weights is not None or return_losses) else 0
    weights, ddist, losses, red = check_terms(weights, (T,), ddist, grad, return_losses, nonzero_only)
    check_ddist_overlap(ddist, weights, labels=labels, ref_labels=ref_labels)
    args = (dist, labels, ref_labels, margin, exclude_self, swap, smooth, inverted)
    return _reduce(
        lambda: _triplet_all(*args, nonzero_only),
        lambda w: _triplet_all_terms(*args, w),
        (T,),
        weights,
        ddist,
        losses,
        red,
        return_losses,
    )


def triplet_loss_triplets(
    dist,
    a,
    p,
    n,
    margin: float = 0.05,
    swap: bool = False,
    smooth: bool = False,
    inverted: bool = False,
    nonzero_only: bool = True,
    ddist=None,
    weights=None,
    grad: bool = True,
    return_losses: bool = False,
):
    """Triplet margin loss over given triplets ``(a, p, n)`` (K each; a in [0, N), p, n in [0, M),
    p also < N under ``swap``), and d value / d dist.

    Same terms and reductions as ``triplet_loss_all``; a triplet listed twice counts twice;
    the terms are the given triplets, in order.
    """
    dist, ddist, N, M, inverted, nonzero_only = check_pair_args(dist, ddist, inverted, nonzero_only)
    swap = check_flag(swap, "swap")
    a = check_int_array(a, "a", upper=N)
    p = check_int_array(p, "p", length=a.shape[0], upper=min(N, M) if swap else M)
    n = check_int_array(n, "n", length=a.shape[0], upper=M)
    smooth = check_flag(smooth, "smooth")
    margin = check_f32(margin, "margin")
    weights, ddist, losses, red = check_terms(weights, (len(a),), ddist, grad, return_losses, nonzero_only)
    check_ddist_overlap(ddist, weights, a=a, p=p, n=n)
    args = (dist, a, p, n, margin, swap, smooth, inverted)
    return _reduce(
        lambda: _triplet_triplets(*args, nonzero_only),
        lambda w: _triplet_triplets_terms(*args, w),
        (len(a),),
        weights,
        ddist,
        losses,
        red,
        return_losses,
    )
