"""Precision@1, R-precision and MAP@R of embeddings, from one exact k-NN.

The definitions are pytorch-metric-learning's ``AccuracyCalculator``'s (see
``.accuracy_calculator``; Musgrave, Belongie & Lim 2020, "A Metric Learning Reality Check").
Lone queries (no other reference with their label) are left out; when every query is lone the
metrics are nan, with a ``RuntimeWarning``. A ``k`` below the largest ``R`` truncates
R-precision and MAP@R as PML does, with a ``RuntimeWarning``. The math is ``.knn_metrics``'; this module adds validation and the
default ``k``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._typing import ArrayLike
from .._validation import check_array, check_int, check_labels
from .knn import knn as _knn
from .knn_metrics import (
    EQUALITY,
    get_label_match_counts,
    get_lone_query_labels,
    mean_average_precision,
    precision_at_k,
    r_precision as _r_precision,
    try_getting_not_lone_labels,
)

__all__ = [
    "METRIC_NAMES",
    "precision_at_1",
    "r_precision",
    "mean_average_precision_at_r",
    "retrieval_metrics",
    "metrics_from_knn_labels",
]

METRIC_NAMES = ("precision_at_1", "r_precision", "mean_average_precision_at_r")


def _check_include(include):
    if include is None:
        return METRIC_NAMES
    if isinstance(include, str):
        include = (include,)
    include = tuple(include)
    bad = [m for m in include if m not in METRIC_NAMES]
    if bad or not include:
        raise ValueError(f"include must be a non-empty subset of {METRIC_NAMES}, got {include!r}")
    return include


def _lone_stats(query_labels, reference_labels, ref_includes_query):
    """(label_counts, not-lone mask, largest R) via ``.knn_metrics``' helpers."""
    label_counts = get_label_match_counts(query_labels, reference_labels, EQUALITY)
    _, not_lone = get_lone_query_labels(query_labels, label_counts, ref_includes_query, EQUALITY)
    r_max = int(label_counts[1].max()) - int(bool(ref_includes_query)) if len(label_counts[1]) else 0
    return label_counts, not_lone, r_max


def _warn_all_lone(include):
    warnings.warn(
        "no query has another reference with its label (all queries are lone); the retrieval metrics are nan",
        RuntimeWarning,
        stacklevel=3,
    )
    return {m: float("nan") for m in include}


def metrics_from_knn_labels(
    knn_labels: ArrayLike,
    query_labels: ArrayLike,
    reference_labels: ArrayLike,
    *,
    ref_includes_query: bool,
    include: Sequence[str] | None = None,
    avg_of_avgs: bool = False,
) -> dict[str, float]:
    """The retrieval metrics from precomputed neighbour labels.

    Parameters
    ----------
    knn_labels : array_like of int, shape (n, k)
        Labels of each query's k nearest references, nearest first (the query itself
        already excluded when ``ref_includes_query``).
    query_labels : array_like of int, shape (n,)
    reference_labels : array_like of int, shape (M,)
        Labels of the whole reference set (they give ``R``).
    ref_includes_query : bool
        Whether the queries are part of the reference set (R is one less).
    include : sequence of str, optional
        Subset of ``METRIC_NAMES`` (default all).
    avg_of_avgs : bool, default False
        Average per class first, then over classes.

    Returns
    -------
    dict[str, float]
        Keys from ``include``; each value in [0, 1], or nan when every query is lone.

    Raises
    ------
    ValueError / TypeError
        Wrong shapes or non-integer labels; ``k == 0`` while a metric is requested.
    """
    include = _check_include(include)
    q_lab = check_labels(query_labels, "query_labels")
    r_lab = check_labels(reference_labels, "reference_labels")
    kl = np.asarray(knn_labels)
    if kl.dtype.kind not in "iu":
        raise TypeError(f"knn_labels must have an integer dtype, got {kl.dtype}")
    if kl.ndim != 2 or kl.shape[0] != q_lab.shape[0]:
        raise ValueError(f"knn_labels must have shape ({q_lab.shape[0]}, k), got {kl.shape}")
    if kl.shape[1] == 0:
        raise ValueError("knn_labels must have at least one column (k >= 1)")
    ref_includes_query = bool(ref_includes_query)
    label_counts, not_lone, r_max = _lone_stats(q_lab, r_lab, ref_includes_query)
    if not not_lone.any():
        return _warn_all_lone(include)
    kl, q_lab = try_getting_not_lone_labels(kl.astype(np.int64, copy=False), q_lab, not_lone)
    k = kl.shape[1]
    if k < r_max and any(m != "precision_at_1" for m in include):
        warnings.warn(
            f"k={k} is less than the largest R ({r_max}): r_precision and "
            "mean_average_precision_at_r are truncated (as in pytorch-metric-learning)",
            RuntimeWarning,
            stacklevel=2,
        )
    gt = q_lab[:, None]
    out = {}
    if "precision_at_1" in include:
        out["precision_at_1"] = precision_at_k(kl, gt, 1, avg_of_avgs, False, EQUALITY)
    if "r_precision" in include:
        out["r_precision"] = _r_precision(
            kl, gt, ref_includes_query, label_counts, avg_of_avgs, False, EQUALITY
        )
    if "mean_average_precision_at_r" in include:
        out["mean_average_precision_at_r"] = mean_average_precision(
            kl, gt, ref_includes_query, label_counts, avg_of_avgs, False, EQUALITY, at_r=True
        )
    return {m: out[m] for m in include}


def retrieval_metrics(
    embeddings: ArrayLike,
    labels: ArrayLike,
    reference: ArrayLike | None = None,
    reference_labels: ArrayLike | None = None,
    *,
    ref_includes_query: bool | None = None,
    k: int | None = None,
    include: Sequence[str] | None = None,
    avg_of_avgs: bool = False,
    metric: str = "euclidean",
    tile: int = 4096,
    backend: str = "mantissa",
) -> dict[str, float]:
    """Precision@1, R-precision and MAP@R of ``embeddings`` as queries, from one exact k-NN.

    Follows pytorch-metric-learning's ``AccuracyCalculator.get_accuracy(query, query_labels,
    reference, reference_labels, ref_includes_query)``: without ``reference`` the queries
    retrieve among themselves (``ref_includes_query=True``, self excluded); the query's own
    row is excluded by position, so duplicates of it still count as neighbours.

    Parameters
    ----------
    embeddings : array_like, float, shape (n, D)
        Query embeddings (n >= 1).
    labels : array_like of int, shape (n,)
    reference : array_like, float, shape (M, D), optional
        Gallery; default: the queries themselves.
    reference_labels : array_like of int, shape (M,), required with ``reference``
    ref_includes_query : bool, optional
        Default True without ``reference`` (False is then an error), False with it. When True
        with a ``reference``, its first n rows and labels must equal the queries'.
    k : int, optional
        Neighbours to retrieve. Default: the largest R over the queries (``1`` when only
        ``precision_at_1`` is requested), which makes every metric exact (PML's
        ``k="max_bin_count"``). A smaller ``k`` truncates R-precision and MAP@R (warned).
    include : sequence of str, optional
        Subset of ``("precision_at_1", "r_precision", "mean_average_precision_at_r")``.
    avg_of_avgs : bool, default False
        Average per class first, then over classes (PML's ``avg_of_avgs``).
    metric, tile, backend
        Passed to ``mantissa_embed.evaluation.knn`` (default Euclidean distance, as PML's
        default ``FaissKNN`` / ``IndexFlatL2``).

    Returns
    -------
    dict[str, float]
        Metric name -> value in [0, 1] (nan, with a RuntimeWarning, when every query is lone).

    Raises
    ------
    ValueError
        Empty or non-finite embeddings, label lengths, D mismatch, a missing
        ``reference_labels``, an inconsistent ``ref_includes_query``, or ``k`` larger than the
        available references (message names ``k``).
    TypeError
        Non-numeric embeddings, non-integer labels or ``k``.
    """
    include = _check_include(include)
    q = check_array(embeddings, "embeddings", ndim=2, allow_empty=False)
    q_lab = check_labels(labels, "labels", n=q.shape[0])
    if reference is None:
        if reference_labels is not None:
            raise ValueError("reference_labels given without reference")
        if ref_includes_query is False:
            raise ValueError("ref_includes_query=False needs a separate reference set")
        r, r_lab, ref_includes_query = q, q_lab, True
    else:
        r = check_array(reference, "reference", ndim=2, allow_empty=False)
        if reference_labels is None:
            raise ValueError("reference_labels is required when reference is given")
        r_lab = check_labels(reference_labels, "reference_labels", n=r.shape[0])
        ref_includes_query = bool(ref_includes_query) if ref_includes_query is not None else False
        if ref_includes_query:
            n = q.shape[0]
            if (
                r.shape[0] < n
                or r.shape[1] != q.shape[1]
                or not np.allclose(q, r[:n])
                or not np.array_equal(q_lab, r_lab[:n])
            ):
                raise ValueError(
                    "ref_includes_query=True needs the first len(embeddings) rows of "
                    "reference (and reference_labels) to equal embeddings (and labels)"
                )
    _, not_lone, r_max = _lone_stats(q_lab, r_lab, ref_includes_query)
    if not not_lone.any():
        return _warn_all_lone(include)
    if k is None:
        k = 1 if include == ("precision_at_1",) else r_max
    else:
        k = check_int(k, "k", minimum=1)
    idx, _ = _knn(q, r, k, exclude_self=ref_includes_query, metric=metric, tile=tile, backend=backend)
    return metrics_from_knn_labels(
        r_lab[idx],
        q_lab,
        r_lab,
        ref_includes_query=ref_includes_query,
        include=include,
        avg_of_avgs=avg_of_avgs,
    )


def _single(name, embeddings, labels, reference, reference_labels, kwargs):
    if "include" in kwargs:
        raise TypeError(f"{name}() got an unexpected keyword argument 'include'")
    return retrieval_metrics(embeddings, labels, reference, reference_labels, include=(name,), **kwargs)[name]


def precision_at_1(
    embeddings: ArrayLike,
    labels: ArrayLike,
    reference: ArrayLike | None = None,
    reference_labels: ArrayLike | None = None,
    **kwargs: Any,
) -> float:
    """Fraction of queries whose nearest reference shares their label (PML's ``precision_at_1``).

    Same parameters, defaults and errors as ``retrieval_metrics`` (``k`` defaults to 1);
    returns a float in [0, 1] (nan when every query is lone).
    """
    return _single("precision_at_1", embeddings, labels, reference, reference_labels, kwargs)


def r_precision(
    embeddings: ArrayLike,
    labels: ArrayLike,
    reference: ArrayLike | None = None,
    reference_labels: ArrayLike | None = None,
    **kwargs: Any,
) -> float:
    """Mean over queries of (same-label references among the R nearest) / R (PML's ``r_precision``).

    Same parameters, defaults and errors as ``retrieval_metrics``; returns a float in [0, 1].
    """
    return _single("r_precision", embeddings, labels, reference, reference_labels, kwargs)


def mean_average_precision_at_r(
    embeddings: ArrayLike,
    labels: ArrayLike,
    reference: ArrayLike | None = None,
    reference_labels: ArrayLike | None = None,
    **kwargs: Any,
) -> float:
    """MAP@R (Musgrave et al. 2020; PML's ``mean_average_precision_at_r``).

    ``(1/R) sum_{i<=R} P(i) rel(i)`` averaged over queries. Same parameters, defaults and
    errors as ``retrieval_metrics``; returns a float in [0, 1].
    """
    return _single("mean_average_precision_at_r", embeddings, labels, reference, reference_labels, kwargs)
