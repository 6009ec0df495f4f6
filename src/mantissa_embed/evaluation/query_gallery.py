"""Open Metric Learning's query/gallery retrieval protocol on arrays.

One set of embeddings with per-item ``is_query`` / ``is_gallery`` flags, as OML's
``EmbeddingMetrics`` and ``calc_retrieval_metrics`` take them: every query ranks the gallery
items by Euclidean distance (itself left out when it is a gallery item too). CMC@K and OML's
precision@K come with pytorch-metric-learning's precision@1, R-precision and MAP@R (Musgrave,
Belongie & Lim 2020, "A Metric Learning Reality Check"), computed by ``.retrieval``'s
``metrics_from_knn_labels`` on the neighbours of ``.knn``, so that they equal
``AccuracyCalculator``'s. This module does not import scikit-learn.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from .._typing import ArrayLike
from .._validation import check_array, check_labels
from ..backend import BACKENDS
from .knn import knn as _knn
from .knn_metrics import get_relevance_mask
from .retrieval import _lone_stats, metrics_from_knn_labels

__all__ = ["query_gallery_metrics"]

# the metric name forms (K an int >= 1)
_FORMS = ("cmc_at_K", "precision_at_K", "precision_at_1", "r_precision", "mean_average_precision_at_r")

_DEFAULT_METRICS = ("cmc_at_1", "cmc_at_5", "precision_at_5", "mean_average_precision_at_r")
_PML = ("precision_at_1", "r_precision", "mean_average_precision_at_r")
_AT_K = re.compile(r"(cmc|precision)_at_([0-9]+)")


def _parse_metrics(metrics):
    """``metrics`` -> tuple of (name, kind, K); kind in {"cmc", "precision", "pml"}."""
    if isinstance(metrics, str):
        metrics = (metrics,)
    try:
        metrics = tuple(metrics)
    except TypeError:
        raise TypeError(f"metrics must be a sequence of str, got {type(metrics).__name__}") from None
    if not metrics:
        raise ValueError(f"metrics must name at least one metric of the forms {_FORMS}")
    parsed = []
    for m in metrics:
        if not isinstance(m, str):
            raise TypeError(f"metrics must be str, got {type(m).__name__} ({m!r})")
        if m in _PML:
            parsed.append((m, "pml", 1))
            continue
        match = _AT_K.fullmatch(m)
        if match is None or str(int(match.group(2))) != match.group(2) or int(match.group(2)) < 1:
            raise ValueError(
                f"unknown metric {m!r}: metrics must be of the forms {_FORMS}, "
                "with K an int >= 1 written without leading zeros (e.g. 'cmc_at_5')"
            )
        parsed.append((m, match.group(1), int(match.group(2))))
    return tuple({p[0]: p for p in parsed}.values())  # duplicates once, first position kept


def _check_mask(mask, name, n):
    """A (n,) bool array from bools or 0/1 integers; None -> all True."""
    if mask is None:
        return np.ones(n, dtype=bool)
    arr = np.asarray(mask)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},) (one flag per embedding), got shape {arr.shape}")
    if arr.dtype.kind == "b":
        return np.ascontiguousarray(arr)
    if arr.dtype.kind in "iu" and bool(np.all((arr == 0) | (arr == 1))):
        return arr == 1
    raise ValueError(
        f"{name} must hold bools or the integers 0 and 1, got dtype {arr.dtype}"
        + (" with values other than 0/1" if arr.dtype.kind in "iu" else "")
    )


def _group(query, q_lab, reference, r_lab, ref_includes_query, parsed, want_r, backend):
    """Metrics of one query group over one reference layout, as {name: mean}, and the number of
    non-lone queries averaged (0: every query lone, no metric)."""
    label_counts, not_lone, r_max = _lone_stats(q_lab, r_lab, ref_includes_query)
    n_kept = int(np.count_nonzero(not_lone))
    if n_kept == 0:
        return {}, 0
    avail = reference.shape[0] - int(ref_includes_query)  # >= r_max >= 1
    k = min(max([K for _, kind, K in parsed if kind != "pml"] + [r_max if want_r else 1]), avail)
    idx, _ = _knn(query, reference, k, exclude_self=ref_includes_query, metric="euclidean", backend=backend)
    knn_labels = r_lab[idx]
    out = {}
    pml = tuple(name for name, kind, _ in parsed if kind == "pml")
    if pml:
        # exactly the columns AccuracyCalculator(k="max_bin_count") retrieves: r_max (1 for
        # precision@1 alone), so the sums run in the same order and the numbers are bitwise equal
        cols = r_max if want_r else 1
        out.update(
            metrics_from_knn_labels(
                knn_labels[:, :cols], q_lab, r_lab, ref_includes_query=ref_includes_query, include=pml
            )
        )
    at_k = [(name, kind, K) for name, kind, K in parsed if kind != "pml"]
    if at_k:
        kl = knn_labels[not_lone]
        gt = q_lab[not_lone]
        _, n_rel = get_relevance_mask((len(gt), 1), gt, ref_includes_query, label_counts)
        hits = kl == gt[:, None]
        for name, kind, K in at_k:
            top = hits[:, :K]
            if kind == "cmc":
                per_query = top.any(axis=1).astype(np.float64)
            else:
                per_query = top.sum(axis=1).astype(np.float64) / np.minimum(K, n_rel)
            out[name] = float(np.mean(per_query))
    return out, n_kept


def query_gallery_metrics(
    embeddings: ArrayLike,
    labels: ArrayLike,
    is_query: ArrayLike | None = None,
    is_gallery: ArrayLike | None = None,
    *,
    metrics: Sequence[str] = _DEFAULT_METRICS,
    backend: str = "mantissa",
) -> dict[str, float]:
    """Retrieval metrics of Open Metric Learning's query/gallery protocol.

    Each query ranks the gallery items by Euclidean distance on ``embeddings`` as given (no
    normalization), by the exact k-NN ``mantissa_embed.evaluation.knn``. An item flagged both
    query and gallery is not in its own gallery (OML's ``mask_to_ignore``, PML's
    ``ref_includes_query``); other items equal to it still are. Items flagged neither are ignored.

    Parameters
    ----------
    embeddings : array_like, float, shape (n, D)
        Converted to float32; must be finite, n >= 1, D >= 1.
    labels : array_like of int, shape (n,)
        Two items are relevant to each other when their labels are equal.
    is_query, is_gallery : array_like of bool or 0/1 int, shape (n,), optional
        Which items are queries / gallery items. Default (None): every item.
    metrics : sequence of str, default ("cmc_at_1", "cmc_at_5", "precision_at_5", "mean_average_precision_at_r")
        Any of (``K`` an int >= 1):

        - ``"cmc_at_K"``: fraction of queries with at least one relevant item among their K
          nearest gallery items (CMC@K, hit rate at K; OML's ``cmc``).
        - ``"precision_at_K"``: relevant items among the K nearest divided by ``min(K, n_rel)``,
          ``n_rel`` the number of relevant items in the query's gallery (OML's ``precision``;
          an ideal ranking scores 1 even when ``n_rel < K``).
        - ``"precision_at_1"``: fraction of queries whose nearest gallery item is relevant
          (the same value as ``"cmc_at_1"`` and OML's precision@1).
        - ``"r_precision"``: relevant items among the R nearest, divided by R = ``n_rel``.
        - ``"mean_average_precision_at_r"``: MAP@R, ``(1/R) sum_{i<=R} P(i) rel(i)``
          (Musgrave et al. 2020).

        The last three are pytorch-metric-learning's ``AccuracyCalculator`` metrics. A ``K``
        larger than the gallery counts the whole gallery (as OML clips it).
    backend : {"mantissa", "numpy"}, default "mantissa"
        The k-NN engine (see ``knn``).

    Returns
    -------
    dict[str, float]
        Metric name (as given, in order, duplicates once) -> mean over the kept queries, in [0, 1].

    Raises
    ------
    ValueError
        Wrong shapes or lengths, NaN/Inf or empty embeddings, flags other than bools or 0/1
        integers (the message names ``is_query`` / ``is_gallery``), no query, no gallery item,
        no query with a relevant item in its gallery, an unknown metric name or ``K < 1``
        (the message lists the valid forms), an unknown ``backend``, or embeddings too large
        for float32 distances.
    TypeError
        Non-numeric embeddings, non-integer labels, non-str metric names.

    Notes
    -----
    Queries without any relevant item in their gallery ("lone" queries) are left out of every
    average, as ``AccuracyCalculator`` drops them (OML keeps them: CMC 0, precision 0/0).
    The k-NN retrieves ``max(K's, largest R)`` neighbours (R only for ``r_precision`` and
    MAP@R), capped by the gallery size. Equal distances are ordered by gallery position: for
    queries that are not gallery items the gallery in item order, for queries that are, the
    query-and-gallery items first (in item order), then the gallery-only items, which is
    ``AccuracyCalculator``'s ``ref_includes_query`` layout. With every item both query and
    gallery the numbers are those of ``AccuracyCalculator(k="max_bin_count").get_accuracy(Z, y)``;
    with disjoint queries and gallery those of ``get_accuracy(Zq, yq, Zg, yg)``. When both kinds
    of query occur, each metric is the query-weighted mean of the two groups' values.

    Sources: Open Metric Learning, ``oml.functional.metrics.calc_retrieval_metrics``
    (``calc_cmc``, ``calc_precision``); Musgrave, Belongie & Lim 2020, "A Metric Learning
    Reality Check" (MAP@R, R-precision), as pytorch-metric-learning's ``AccuracyCalculator``.
    """
    parsed = _parse_metrics(metrics)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    x = check_array(embeddings, "embeddings", ndim=2, allow_empty=False)
    n = x.shape[0]
    y = check_labels(labels, "labels", n=n)
    q_mask = _check_mask(is_query, "is_query", n)
    g_mask = _check_mask(is_gallery, "is_gallery", n)
    if not q_mask.any():
        raise ValueError("is_query flags no item: there must be at least one query")
    if not g_mask.any():
        raise ValueError("is_gallery flags no item: there must be at least one gallery item")
    want_r = any(name in ("r_precision", "mean_average_precision_at_r") for name, _, _ in parsed)

    both = np.flatnonzero(q_mask & g_mask)  # queries that are gallery items too
    only_q = np.flatnonzero(q_mask & ~g_mask)  # queries outside the gallery
    groups = []
    if len(both) == n:  # every item both query and gallery: no copies
        groups.append(_group(x, y, x, y, True, parsed, want_r, backend))
    elif len(both):
        ref = np.concatenate([both, np.flatnonzero(g_mask & ~q_mask)])
        groups.append(_group(x[both], y[both], x[ref], y[ref], True, parsed, want_r, backend))
    if len(only_q):
        gal = np.flatnonzero(g_mask)
        groups.append(_group(x[only_q], y[only_q], x[gal], y[gal], False, parsed, want_r, backend))
    groups = [g for g in groups if g[1] > 0]
    if not groups:
        raise ValueError(
            "no query has an item with its label in its gallery (every query is lone): "
            "the metrics are undefined"
        )
    if len(groups) == 1:
        values = groups[0][0]
        return {name: values[name] for name, _, _ in parsed}
    (a, na), (b, nb) = groups
    return {name: float((na * a[name] + nb * b[name]) / (na + nb)) for name, _, _ in parsed}
