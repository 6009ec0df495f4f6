"""Verification metrics: is a pair "the same" when its distance is at most a threshold?

A verification rule accepts a pair (says "same identity") when ``distance <= threshold``.
Sweeping the threshold over every distinct distance gives the ROC curve: the true accept rate
``TAR = TPR = accepted same pairs / same pairs`` against the false accept rate
``FAR = FPR = accepted different pairs / different pairs``. The ROC curve and its area come
from scikit-learn (``sklearn.metrics.roc_curve`` / ``roc_auc_score``) on the scores
``-distances`` (a larger score means "more similar"); nothing of the ROC is reimplemented here.

Conventions (the face-verification ones, e.g. Huang et al. 2007, "Labeled Faces in the Wild",
tech. report 07-49, and the NIST FRVT reports for TAR at a fixed FAR):

* ``roc_auc``: ``roc_auc_score(same, -distances)``; ties between a same and a different pair
  count 1/2 (the trapezoidal area).
* ``eer`` (equal error rate): the point where ``FAR == FRR = 1 - TAR``, found by linear
  interpolation between the two consecutive ROC points where ``FAR - FRR`` changes sign
  (``FAR - FRR`` never decreases along the curve). ``eer_threshold`` interpolates the two
  points' distance thresholds with the same weight; the artificial first ROC point (0, 0),
  whose threshold is ``-inf``, takes the smallest distance instead. When a ROC point hits
  ``FAR == FRR`` exactly, its own threshold is returned.
* ``tar_at_far_1e-3`` / ``tar_at_far_1e-2``: the TAR at the largest threshold whose FAR is at
  most the target (the best TAR among the operating points allowed by the target; no
  interpolation). With ``n_diff`` different pairs, a FAR of ``f`` allows ``floor(f * n_diff)``
  false accepts; when ``f * n_diff < 1`` only thresholds with no false accept qualify.
* ``best_threshold`` / ``best_accuracy``: the distance threshold maximizing the accuracy
  ``(true accepts + true rejects) / n_pairs`` of the rule ``distance <= threshold``, over
  every ROC operating point (the smallest such threshold on ties). ``best_threshold`` is one
  of the given distances, so it can be passed as it is to
  ``Embedder.verify(a, b, threshold=metrics["best_threshold"])``; it is ``-inf`` only in the
  degenerate case where rejecting every pair is strictly more accurate than any threshold.
"""
from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score, roc_curve

__all__ = ["verification_metrics", "FAR_TARGETS"]

#: The FAR levels of the ``tar_at_far_*`` keys.
FAR_TARGETS = (1e-3, 1e-2)


def _check_distances(distances):
    if distances is None or isinstance(distances, (str, bytes)):
        raise TypeError(f"distances must be a 1-D array of real numbers, got {type(distances).__name__}")
    d = np.asarray(distances)
    if d.dtype == object or d.dtype.kind not in "iuf":
        raise TypeError(f"distances must be a 1-D array of real numbers, got dtype {d.dtype}")
    if d.ndim != 1:
        raise ValueError(f"distances must be 1-D (one distance per pair), got shape {d.shape}")
    if d.shape[0] < 2:
        raise ValueError(f"distances must hold at least 2 pairs, got {d.shape[0]}")
    d = d.astype(np.float64)
    if not np.isfinite(d).all():
        raise ValueError("distances must be finite (found NaN or Inf)")
    return d


def _check_same(same, n):
    if same is None or isinstance(same, (str, bytes)):
        raise TypeError(f"same must be a 1-D bool (or 0/1 integer) array, got {type(same).__name__}")
    s = np.asarray(same)
    if s.dtype.kind not in "biu":
        raise TypeError(f"same must be a 1-D bool (or 0/1 integer) array, got dtype {s.dtype}")
    if s.ndim != 1:
        raise ValueError(f"same must be 1-D (one flag per pair), got shape {s.shape}")
    if s.shape[0] != n:
        raise ValueError(f"same must have the length of distances ({n}), got {s.shape[0]}")
    if s.dtype.kind != "b":
        if ((s != 0) & (s != 1)).any():
            raise ValueError("same must contain only 0 and 1 (or True/False)")
        s = s.astype(bool)
    n_same = int(s.sum())
    if n_same == 0 or n_same == n:
        which = "different (False)" if n_same == n else "same (True)"
        raise ValueError(f"same must contain both classes of pairs; no {which} pair was given")
    return s


def verification_metrics(distances, same):
    """ROC AUC, EER, TAR at fixed FAR and the best-accuracy threshold of a pair verifier.

    The rule is: a pair is declared "same" when ``distance <= threshold``. Definitions are in
    the module docstring (:mod:`mantissa_embed.evaluation.verification`).

    Parameters
    ----------
    distances : array_like of real numbers, shape (n_pairs,), n_pairs >= 2
        One distance per pair (smaller = more alike), e.g. ``Embedder.verify(a, b)``. Any
        real dtype; converted to float64. Negative values are allowed (e.g. ``-similarity``).
    same : array_like of bool or 0/1 integers, shape (n_pairs,)
        True (1) when the pair shows the same identity. Both values must occur.

    Returns
    -------
    dict
        ``"roc_auc"``, ``"eer"``, ``"eer_threshold"``, ``"tar_at_far_1e-3"``,
        ``"tar_at_far_1e-2"``, ``"best_threshold"``, ``"best_accuracy"`` : float
            Rates and accuracies in [0, 1]; thresholds in distance units.
        ``"fpr"``, ``"tpr"`` : ndarray, float64, shape (m,)
            The ROC curve (FAR, TAR), from (0, 0) to (1, 1), every distinct distance a point
            (``roc_curve(..., drop_intermediate=False)``), FAR non-decreasing.
        ``"thresholds"`` : ndarray, float64, shape (m,)
            The distance threshold of each point: ``-inf`` (reject all), then the distinct
            distances in increasing order.

    Raises
    ------
    TypeError
        ``distances`` not real-valued, or ``same`` not bool/integer.
    ValueError
        Not 1-D, fewer than 2 pairs, NaN/Inf distances, lengths that differ, ``same`` values
        other than 0/1, or only one class of pair present (each error names the argument).

    Source
    ------
    ROC and AUC: scikit-learn ``roc_curve`` / ``roc_auc_score`` (Fawcett 2006, "An
    introduction to ROC analysis", Pattern Recognition Letters 27). EER and TAR@FAR: the
    face-verification conventions (LFW, Huang et al. 2007; NIST FRVT).
    """
    d = _check_distances(distances)
    s = _check_same(same, d.shape[0])
    scores = -d
    fpr, tpr, thr = roc_curve(s, scores, drop_intermediate=False)
    fpr = np.asarray(fpr, dtype=np.float64)
    tpr = np.asarray(tpr, dtype=np.float64)
    thresholds = -np.asarray(thr, dtype=np.float64)  # [-inf, distinct distances ascending]
    thresholds[0] = -np.inf
    auc = float(roc_auc_score(s, scores))

    # EER: FAR - FRR is -1 at (0, 0), +1 at (1, 1) and non-decreasing in between.
    g = fpr - (1.0 - tpr)
    i = int(np.argmax(g >= 0.0))
    if g[i] == 0.0:
        eer, eer_thr = float(fpr[i]), float(thresholds[i])
    else:
        w = -g[i - 1] / (g[i] - g[i - 1])
        eer = float(fpr[i - 1] + w * (fpr[i] - fpr[i - 1]))
        t_lo = thresholds[i - 1] if i - 1 > 0 else thresholds[1]
        eer_thr = float(t_lo + w * (thresholds[i] - t_lo))

    out = {"roc_auc": auc, "eer": eer, "eer_threshold": eer_thr}
    for target, key in zip(FAR_TARGETS, ("tar_at_far_1e-3", "tar_at_far_1e-2")):
        ok = np.flatnonzero(fpr <= target)  # always contains point 0 (FAR 0)
        out[key] = float(tpr[ok[-1]])

    n = d.shape[0]
    n_pos = int(s.sum())
    n_neg = n - n_pos
    correct = tpr * n_pos + (1.0 - fpr) * n_neg
    j = 1 + int(np.argmax(correct[1:]))  # first (smallest) threshold among the best
    if correct[0] > correct[j]:  # rejecting every pair is strictly better: threshold -inf
        j = 0
    out["best_threshold"] = float(thresholds[j])
    out["best_accuracy"] = float(correct[j] / n)
    out["fpr"], out["tpr"], out["thresholds"] = fpr, tpr, thresholds
    return out
