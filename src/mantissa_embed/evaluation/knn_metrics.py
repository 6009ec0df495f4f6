"""The per-query k-NN metrics of pytorch-metric-learning's ``AccuracyCalculator``, in numpy.

Each function takes ``knn_labels`` (n, k[, L]), the labels of every query's k nearest
references (nearest first), and ``gt_labels`` (n, 1[, L]), the query labels; it returns the
mean over queries, or with ``avg_of_avgs`` the mean over classes of the per-class means, or
with ``return_per_class`` the list of per-class means (classes sorted). Names, signatures and
edge cases are PML 2.9's (``utils/accuracy_calculator.py``; Musgrave, Belongie & Lim 2020,
"A Metric Learning Reality Check", ECCV, sec. 3.2).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "EQUALITY",
    "precision_at_k",
    "r_precision",
    "mean_average_precision",
    "mean_reciprocal_rank",
    "get_label_match_counts",
    "get_lone_query_labels",
    "get_relevance_mask",
    "maybe_get_avg_of_avgs",
    "try_getting_not_lone_labels",
]


def EQUALITY(x, y):
    """Default label comparison: element-wise ``x == y`` (broadcast).

    For 2-D (multi-column) labels the comparison is reduced with ``all`` over the label
    columns, so two labels match when every column is equal.
    """
    return np.equal(x, y)


def _compare(fn, x, y, out_ndim):
    """``fn(x, y)`` as a bool array of ``out_ndim`` dims (trailing label dims reduced by all)."""
    res = np.asarray(fn(x, y))
    if res.ndim > out_ndim:
        res = np.all(res, axis=tuple(range(out_ndim, res.ndim)))
    return res.astype(bool, copy=False)


def _row_index(a, table):
    """Index of each row of ``a`` among the rows of ``table`` (unique rows), -1 where absent.

    One sort of the stacked rows (``np.unique(axis=0)``): O((n + U) log(n + U)) time and
    O(n + U) memory, never an (n, U) comparison table, so many classes stay cheap.
    """
    n, u = len(a), len(table)
    if u == 0:
        return np.full(n, -1, dtype=np.int64)
    both = np.concatenate([np.reshape(table, (u, -1)), np.reshape(a, (n, -1))])
    _, inv = np.unique(both, axis=0, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    lookup = np.full(int(inv.max()) + 1, -1, dtype=np.int64)
    lookup[inv[:u]] = np.arange(u)
    return lookup[inv[u:]]


def _unique_labels(labels):
    return np.unique(labels, axis=0)


def maybe_get_avg_of_avgs(accuracy_per_sample, sample_labels, avg_of_avgs, return_per_class):
    """Mean over samples, or the per-class means (a list, classes sorted) or their mean."""
    accuracy_per_sample = np.asarray(accuracy_per_sample, dtype=np.float64)
    if avg_of_avgs or return_per_class:
        uniq, inv = np.unique(sample_labels, axis=0, return_inverse=True)
        inv = np.asarray(inv).reshape(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            sums = np.bincount(inv, weights=accuracy_per_sample, minlength=len(uniq))
            cnts = np.bincount(inv, minlength=len(uniq))
            per_class = sums / cnts
        if return_per_class:
            return [float(v) for v in per_class]
        return float(np.mean(per_class))
    return float(np.mean(accuracy_per_sample))


def get_relevance_mask(shape, gt_labels, ref_includes_query, label_counts):
    """(n, k) bool mask of the first ``R`` columns per query, and ``R`` per query (int64)."""
    relevance_mask = np.zeros(shape, dtype=bool)
    count_per_query = np.zeros(len(gt_labels), dtype=np.int64)
    uniq, counts = label_counts
    gt = gt_labels.reshape((len(gt_labels),) + tuple(np.shape(uniq)[1:]))
    idx = _row_index(gt, uniq)
    found = idx >= 0
    max_column = np.where(found, np.asarray(counts, dtype=np.int64)[np.maximum(idx, 0)], 0)
    if ref_includes_query:
        max_column = np.where(found, max_column - 1, 0)
    count_per_query[:] = max_column
    relevance_mask[:] = np.arange(shape[1])[None, :] < max_column[:, None]
    return relevance_mask, count_per_query


def r_precision(
    knn_labels,
    gt_labels,
    ref_includes_query,
    label_counts,
    avg_of_avgs,
    return_per_class,
    label_comparison_fn,
):
    """R-precision per query, averaged (``gt_labels`` is ``query_labels[:, None]``)."""
    relevance_mask, _ = get_relevance_mask(knn_labels.shape[:2], gt_labels, ref_includes_query, label_counts)
    same_label = _compare(label_comparison_fn, gt_labels, knn_labels, 2)
    matches = np.sum(same_label & relevance_mask, axis=1)
    possible = np.sum(relevance_mask, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = matches.astype(np.float64) / possible
    return maybe_get_avg_of_avgs(acc, gt_labels, avg_of_avgs, return_per_class)


def mean_average_precision(
    knn_labels,
    gt_labels,
    ref_includes_query,
    label_counts,
    avg_of_avgs,
    return_per_class,
    label_comparison_fn,
    at_r: bool = False,
):
    """MAP (over all k neighbours) or MAP@R (``at_r=True``), both divided by ``R``."""
    n, k = knn_labels.shape[:2]
    relevance_mask, count_per_query = get_relevance_mask((n, k), gt_labels, ref_includes_query, label_counts)
    knn_mask = relevance_mask if at_r else np.ones((n, k), dtype=bool)
    same = _compare(label_comparison_fn, gt_labels, knn_labels, 2)
    equality = same & knn_mask
    cum = np.cumsum(equality, axis=1)
    prec = (cum * equality).astype(np.float64) / np.arange(1, k + 1, dtype=np.float64)[None, :]
    summed = np.sum(prec * knn_mask, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = summed / count_per_query
    return maybe_get_avg_of_avgs(acc, gt_labels, avg_of_avgs, return_per_class)


def mean_reciprocal_rank(knn_labels, gt_labels, avg_of_avgs, return_per_class, label_comparison_fn):
    """1 / (rank of the first matching neighbour), 0 when none of the k matches."""
    same = _compare(label_comparison_fn, gt_labels, knn_labels, 2)
    any_hit = same.any(axis=1)
    first = np.argmax(same, axis=1) + 1
    acc = np.where(any_hit, 1.0 / first, 0.0)
    return maybe_get_avg_of_avgs(acc, gt_labels, avg_of_avgs, return_per_class)


def precision_at_k(knn_labels, gt_labels, k, avg_of_avgs, return_per_class, label_comparison_fn):
    """Fraction of matches among the first ``k`` neighbours."""
    same = _compare(label_comparison_fn, gt_labels, knn_labels[:, :k], 2)
    acc = np.sum(same, axis=1).astype(np.float64) / k
    return maybe_get_avg_of_avgs(acc, gt_labels, avg_of_avgs, return_per_class)


def get_label_match_counts(query_labels, reference_labels, label_comparison_fn):
    """(sorted unique query labels, number of reference labels matching each)."""
    uniq = _unique_labels(query_labels)
    if label_comparison_fn is EQUALITY:
        ref_uniq, ref_counts = np.unique(reference_labels, axis=0, return_counts=True)
        idx = _row_index(uniq, ref_uniq)
        counts = np.where(idx >= 0, ref_counts[np.maximum(idx, 0)], 0).astype(np.int64)
    else:
        counts = np.empty(len(uniq), dtype=np.int64)
        for i in range(len(uniq)):
            counts[i] = np.sum(_compare(label_comparison_fn, uniq[i : i + 1], reference_labels, 1))
    return uniq, counts


def get_lone_query_labels(query_labels, label_counts, ref_includes_query, label_comparison_fn):
    """(labels with no other matching reference, bool mask of the queries that are not lone)."""
    uniq, counts = label_counts
    if ref_includes_query:
        itself = _compare(label_comparison_fn, uniq, uniq, 1)
        lone = counts - itself.astype(np.int64) <= 0
    else:
        lone = counts == 0
    lone_labels = uniq[lone]
    if len(lone_labels):
        not_lone = _row_index(query_labels, lone_labels) < 0
    else:
        not_lone = np.ones(len(query_labels), dtype=bool)
    return lone_labels, not_lone


def try_getting_not_lone_labels(knn_labels, query_labels, not_lone_query_mask):
    """The rows of the non-lone queries, or ``(None, None)`` when every query is lone."""
    if not np.any(not_lone_query_mask):
        return None, None
    return knn_labels[not_lone_query_mask], query_labels[not_lone_query_mask]


def nan_accuracy(unique_labels, return_per_class):
    if return_per_class:
        return [float("nan")] * len(unique_labels)
    return float("nan")
