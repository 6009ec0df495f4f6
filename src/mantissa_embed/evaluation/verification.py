"""Verification metrics: a pair is "the same" when its distance is at most a threshold.

ROC AUC, equal error rate, TAR at a fixed FAR and the best-accuracy threshold, from
scikit-learn's ``roc_curve`` / ``roc_auc_score`` on the scores ``-distances``. The definitions
(the face-verification conventions: Huang et al. 2007, "Labeled Faces in the Wild"; NIST FRVT)
are in docs/evaluation.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.metrics import roc_auc_score, roc_curve

from .._typing import ArrayLike

__all__ = ["verification_metrics", "FAR_TARGETS"]

#: The FAR levels of the ``tar_at_far_*`` keys.
FAR_TARGETS = (1e-3, 1e-2)


def _check_distances(distances: ArrayLike) -> np.ndarray:
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


def _check_same(same: ArrayLike, n: int) -> np.ndarray:
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


def verification_metrics(distances: ArrayLike, same: ArrayLike) -> dict[str, Any]:
    """ROC AUC, EER, TAR at fixed FAR and the best-accuracy threshold of a pair verifier.

    A pair is declared "same" when ``distance <= threshold``; definitions in docs/evaluation.md.

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

    out: dict[str, Any] = {"roc_auc": auc, "eer": eer, "eer_threshold": eer_thr}
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
