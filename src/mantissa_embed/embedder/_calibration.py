"""Verification thresholds chosen on labelled pairs (the body of ``Embedder.calibrate``).

Pairs are drawn without materializing the N^2 pairs: a positive pair is a class drawn with
probability proportional to its ordered pair count n_c (n_c - 1), then two distinct members; a
negative pair is an item drawn with probability proportional to n - n_c, then an item of
another class; both are uniform over the ordered pairs of their kind. When the data has at most
``2 * n_pairs`` ordered pairs (and n <= 4096), every ordered pair is used instead (each unordered
pair twice). Rates on sampled pairs are estimates;
the result carries the pair counts they rest on.

Rules (a pair is "same" when ``distance <= threshold``):
- ``target_far``: the largest threshold accepting at most ``floor(target_far * n_neg)`` of the
  negative pairs (so the measured FAR is at most the target);
- ``target_precision``: the largest threshold whose precision, with positives and negatives
  weighted to their shares among all pairs of the data, is at least the target;
- ``max_accuracy``: the threshold of the best balanced accuracy (TAR + 1 - FAR) / 2, the
  smallest among ties.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_bool, check_float, check_int, check_labels
from . import _inference

__all__ = ["sample_pairs", "choose_threshold", "calibrate"]


def _all_pairs(y):
    i, j = np.nonzero(~np.eye(y.shape[0], dtype=bool))
    return i.astype(np.int64), j.astype(np.int64)


def sample_pairs(y, n_pairs, rng):
    """(pos_i, pos_j, neg_i, neg_j, n_pos_total, n_neg_total) for labels ``y`` (int64, (n,))."""
    n = y.shape[0]
    order = np.argsort(y, kind="stable")
    ys = y[order]
    classes, start, counts = np.unique(ys, return_index=True, return_counts=True)
    n_pos_total = int(np.sum(counts * (counts - 1)))
    n_neg_total = n * (n - 1) - n_pos_total
    small = n * (n - 1) <= 2 * n_pairs and n <= 4096
    if small:
        i, j = _all_pairs(y)
        same = y[i] == y[j]
        return i[same], j[same], i[~same], j[~same], n_pos_total, n_neg_total
    # positives: class ~ n_c (n_c - 1), then two distinct members of it
    pos_i = pos_j = np.empty(0, np.int64)
    if n_pos_total > 0:
        w = (counts * (counts - 1)).astype(np.float64)
        c = rng.choice(classes.shape[0], size=n_pairs, p=w / w.sum())
        a = (rng.random(n_pairs) * counts[c]).astype(np.int64)
        b = (rng.random(n_pairs) * (counts[c] - 1)).astype(np.int64)
        b = b + (b >= a)
        pos_i, pos_j = order[start[c] + a], order[start[c] + b]
    neg_i = neg_j = np.empty(0, np.int64)
    if n_neg_total > 0:
        cls_of = np.searchsorted(classes, ys)  # class index of each sorted position
        w = (n - counts[cls_of]).astype(np.float64)
        ai = rng.choice(n, size=n_pairs, p=w / w.sum())  # sorted positions
        ca = cls_of[ai]
        r = (rng.random(n_pairs) * (n - counts[ca])).astype(np.int64)
        bj = r + np.where(r >= start[ca], counts[ca], 0)  # skip the anchor's class block
        neg_i, neg_j = order[ai], order[bj]
    return pos_i, pos_j, neg_i, neg_j, n_pos_total, n_neg_total


def choose_threshold(
    d_pos,
    d_neg,
    target_far=None,
    target_precision=None,
    max_accuracy: bool = False,
    pos_weight: float = 1.0,
    neg_weight: float = 1.0,
):
    """(threshold, stats) from positive / negative pair distances (float64, 1-D, non-empty)."""
    pos = np.sort(d_pos)
    neg = np.sort(d_neg)
    cand = np.unique(np.concatenate([pos, neg]))
    if target_far is not None:
        k = int(np.floor(target_far * neg.shape[0] + 1e-9))
        if k >= neg.shape[0]:
            t = float(cand[-1])
        else:
            t = float(np.nextafter(neg[k], -np.inf))  # accepts neg[:k] at most (ties at neg[k] rejected)
            t = max(t, 0.0)
    else:
        tp = np.searchsorted(pos, cand, side="right").astype(np.float64)
        fp = np.searchsorted(neg, cand, side="right").astype(np.float64)
        if target_precision is not None:
            prec = tp * pos_weight / np.maximum(tp * pos_weight + fp * neg_weight, 1e-300)
            ok = np.flatnonzero((prec >= target_precision) & (tp > 0))
            t = float(cand[ok[-1]]) if ok.size else 0.0
        else:
            bal = tp / pos.shape[0] + 1.0 - fp / neg.shape[0]
            t = float(cand[int(np.argmax(bal))])
    tar = float(np.searchsorted(pos, t, side="right") / pos.shape[0])
    far = float(np.searchsorted(neg, t, side="right") / neg.shape[0])
    tpw, fpw = tar * pos.shape[0] * pos_weight, far * neg.shape[0] * neg_weight
    stats = {
        "threshold": t,
        "far": far,
        "tar": tar,
        "precision": float(tpw / (tpw + fpw)) if tpw + fpw > 0 else None,
        "balanced_accuracy": (tar + 1.0 - far) / 2.0,
    }
    return t, stats


def calibrate(
    emb,
    X,
    y,
    *,
    target_far=None,
    target_precision=None,
    max_accuracy: bool = False,
    n_pairs=100_000,
    seed=0,
    batch_size=256,
):
    """The body of ``Embedder.calibrate`` (the
    caller holds the Embedder's lock): the calibration dict, not yet stored."""
    rules = [target_far is not None, target_precision is not None, bool(max_accuracy)]
    check_bool(max_accuracy, "max_accuracy")
    if sum(rules) > 1:
        raise ValueError("give one of target_far, target_precision, max_accuracy=True")
    if sum(rules) == 0:
        target_far = 1e-3
    if target_far is not None:
        target_far = check_float(target_far, "target_far", minimum=0.0)
        if target_far > 1.0:
            raise ValueError(f"target_far must be in [0, 1], got {target_far}")
    if target_precision is not None:
        target_precision = check_float(target_precision, "target_precision", minimum=0.0)
        if not 0.0 < target_precision <= 1.0:
            raise ValueError(f"target_precision must be in (0, 1], got {target_precision}")
    n_pairs = check_int(n_pairs, "n_pairs", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    y = check_labels(y, "y")
    Z, _ = _inference.as_embeddings(emb, X, "X", allow_single=False, batch_size=batch_size)
    if Z.shape[0] != y.shape[0]:
        raise ValueError(f"X and y must have the same length, got {Z.shape[0]} and {y.shape[0]}")
    pi, pj, ni, nj, p_tot, n_tot = sample_pairs(y, n_pairs, np.random.default_rng(seed))
    if pi.size == 0:
        raise ValueError("y must have a class with at least two items (a positive pair)")
    if ni.size == 0:
        raise ValueError("y must have at least two classes (a negative pair)")
    Z = Z.astype(np.float64)
    dp = np.linalg.norm(Z[pi] - Z[pj], axis=1)
    dn = np.linalg.norm(Z[ni] - Z[nj], axis=1)
    _, stats = choose_threshold(
        dp,
        dn,
        target_far=target_far,
        target_precision=target_precision,
        max_accuracy=bool(max_accuracy),
        pos_weight=p_tot / pi.size,
        neg_weight=n_tot / ni.size,
    )
    rule = (
        "target_far"
        if target_far is not None
        else ("target_precision" if target_precision is not None else "max_accuracy")
    )
    cal = {
        **stats,
        "rule": rule,
        "target": target_far if target_far is not None else target_precision,
        "n_positive_pairs": int(pi.size),
        "n_negative_pairs": int(ni.size),
        "positive_pairs_total": int(p_tot),
        "negative_pairs_total": int(n_tot),
        "seed": seed,
    }
    return cal
