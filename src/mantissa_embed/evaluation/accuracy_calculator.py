"""pytorch-metric-learning's ``AccuracyCalculator`` on numpy and the exact k-NN.

Metrics, edge cases and names are PML 2.9's (``utils/accuracy_calculator.py``; Musgrave,
Belongie & Lim 2020, "A Metric Learning Reality Check"); definitions, custom metrics and the
differences from PML are in docs/evaluation.md.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from typing import Any, Callable

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_mutual_info_score, normalized_mutual_info_score

from .._typing import ArrayLike
from .._validation import check_array, check_bool, check_int
from . import knn_metrics
from .knn import knn as _default_knn
from .knn_metrics import (
    EQUALITY,
    get_label_match_counts,
    get_lone_query_labels,
    mean_average_precision,
    mean_reciprocal_rank,
    nan_accuracy,
    precision_at_k,
    r_precision,
    try_getting_not_lone_labels,
)

__all__ = ["AccuracyCalculator", "SklearnKMeans", "FaissKMeans", "default_kmeans", *knn_metrics.__all__]


class SklearnKMeans:
    """Default ``kmeans_func``: scikit-learn ``KMeans``, seeded.

    ``SklearnKMeans(max_iter=20, n_init=1, seed=0)(x, n_clusters) -> (n,) int64`` cluster ids,
    with the iterations and the single initialization of PML's ``FaissKMeans(niter=20)``.
    """

    def __init__(self, max_iter=20, n_init=1, seed=0) -> None:
        self.max_iter = check_int(max_iter, "max_iter", minimum=1)
        self.n_init = check_int(n_init, "n_init", minimum=1)
        self.seed = check_int(seed, "seed", minimum=0)

    def __call__(self, x, n_clusters):
        x = np.asarray(x, dtype=np.float32)
        km = KMeans(
            n_clusters=int(n_clusters), n_init=self.n_init, max_iter=self.max_iter, random_state=self.seed
        )
        return km.fit_predict(x).astype(np.int64)


class FaissKMeans:
    """pytorch-metric-learning's default ``kmeans_func``: ``faiss.Kmeans(d, n_clusters, niter=20)``
    (faiss's default seed, 1234), then each point's nearest centroid.

    ``FaissKMeans(**kwargs)(x, n_clusters) -> (n,) int64``; ``kwargs`` go to ``faiss.Kmeans``.
    Needs faiss (``pip install ".[faiss]"``): ImportError otherwise.
    """

    def __init__(self, **kwargs) -> None:
        import faiss  # noqa: F401 - fail at construction, not at the first call

        self.kwargs = {"niter": 20, **kwargs}

    def __call__(self, x, n_clusters):
        import faiss

        x = np.ascontiguousarray(x, dtype=np.float32)
        km = faiss.Kmeans(x.shape[1], int(n_clusters), **self.kwargs)
        km.train(x)
        _, idx = km.index.search(x, 1)
        return idx.reshape(-1).astype(np.int64)


def default_kmeans():
    """``FaissKMeans`` (PML's settings) when faiss imports, else ``SklearnKMeans``."""
    try:
        return FaissKMeans()
    except ImportError:
        return SklearnKMeans()


class _DefaultKNN:
    """``knn(query, reference, k, exclude_self=...)`` of ``mantissa_embed.evaluation.knn``."""

    def __call__(self, query, reference, k, *, exclude_self: bool = False):
        return _default_knn(query, reference, k, exclude_self=exclude_self, metric="euclidean")


def _check_labels_nd(y, name, n):
    if y is None:
        raise TypeError(f"{name} must be an integer array, got None")
    arr = np.asarray(y)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must have an integer dtype, got {arr.dtype}")
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D or 2-D, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} must have length {n} (one per embedding), got {arr.shape[0]}")
    if arr.ndim == 2 and arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one column, got shape {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.int64)


class AccuracyCalculator:
    """Retrieval and clustering accuracy of embeddings, as pytorch-metric-learning computes it.

    Parameters
    ----------
    include : tuple or list of str, default ()
        Metrics to compute (empty: all). Built in: ``"precision_at_1"``, ``"r_precision"``,
        ``"mean_average_precision_at_r"``, ``"mean_average_precision"``,
        ``"mean_reciprocal_rank"``, ``"NMI"``, ``"AMI"``, plus any ``calculate_<name>`` of a
        subclass.
    exclude : tuple or list of str, default ()
        Metrics to leave out.
    avg_of_avgs : bool, default False
        Average per class first, then over classes.
    return_per_class : bool, default False
        Return, for each k-NN metric, the list of per-class means (classes in sorted order).
        Exclusive with ``avg_of_avgs``.
    k : int, "max_bin_count", "all" or None, default None
        Neighbours per query: None / "all" every reference, "max_bin_count" the largest
        number of references sharing a query label (exact R-precision and MAP@R), or an int.
    label_comparison_fn : callable, optional
        ``fn(x, y) -> bool array``, broadcast over the leading axes; default equality.
    knn_func : callable, optional
        ``knn_func(query, reference, k, *, exclude_self) -> (indices (n, k), distances)``, as
        ``knn``; default the exact Euclidean k-NN.
    kmeans_func : callable, optional
        ``kmeans_func(x, n_clusters) -> (n,) int`` cluster ids; default ``default_kmeans``:
        faiss's k-means with PML's settings when faiss is installed (then NMI / AMI equal PML's on
        the same input), scikit-learn's ``KMeans`` (20 iterations, one seeded start) otherwise.

    Raises
    ------
    TypeError
        ``include``/``exclude`` not a tuple or list; non-bool flags; ``k`` of a wrong type;
        non-callable functions.
    ValueError
        Unknown metric names, ``avg_of_avgs`` with ``return_per_class``, ``k < 1`` or an
        unknown ``k`` string.
    NotImplementedError
        ``label_comparison_fn`` together with a clustering metric.
    """

    function_keyword = "calculate_"

    def __init__(
        self,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        avg_of_avgs: bool = False,
        return_per_class: bool = False,
        k: int | str | None = None,
        label_comparison_fn: Callable[..., Any] | None = None,
        knn_func: Callable[..., Any] | None = None,
        kmeans_func: Callable[..., Any] | None = None,
    ) -> None:
        names = [x for x in dir(self) if x.startswith(self.function_keyword)]
        metrics = [x.replace(self.function_keyword, "", 1) for x in names]
        self.original_function_dict = {m: getattr(self, f) for m, f in zip(metrics, names)}
        self.check_primary_metrics(include, exclude)
        self.original_function_dict = self.get_function_dict(include, exclude)
        self.curr_function_dict = self.get_function_dict()

        avg_of_avgs = check_bool(avg_of_avgs, "avg_of_avgs")
        return_per_class = check_bool(return_per_class, "return_per_class")
        if avg_of_avgs and return_per_class:
            raise ValueError("avg_of_avgs and return_per_class are mutually exclusive")
        self.avg_of_avgs = avg_of_avgs
        self.return_per_class = return_per_class

        if isinstance(k, str):
            if k not in ("max_bin_count", "all"):
                raise ValueError(f"k must be an int > 0, None, 'max_bin_count' or 'all', got {k!r}")
        elif k is not None:
            if isinstance(k, bool) or not isinstance(k, numbers.Integral):
                raise TypeError(
                    f"k must be an int > 0, None, 'max_bin_count' or 'all', got {type(k).__name__}"
                )
            if k < 1:
                raise ValueError(f"k must be an int > 0, None, 'max_bin_count' or 'all', got {k}")
            k = int(k)
        self.k = k

        for fn, nm in (
            (label_comparison_fn, "label_comparison_fn"),
            (knn_func, "knn_func"),
            (kmeans_func, "kmeans_func"),
        ):
            if fn is not None and not callable(fn):
                raise TypeError(f"{nm} must be callable, got {type(fn).__name__}")
        self.knn_func = _DefaultKNN() if knn_func is None else knn_func
        self.kmeans_func = default_kmeans() if kmeans_func is None else kmeans_func
        if label_comparison_fn:
            self.label_comparison_fn = label_comparison_fn
            if any(x in self.requires_clustering() for x in self.get_curr_metrics()):
                raise NotImplementedError("Unsupported: clustering + custom label comparison")
        else:
            self.label_comparison_fn = EQUALITY

    # -- metric bookkeeping (PML's API) -------------------------------------------------
    def get_function_dict(
        self, include: Sequence[str] = (), exclude: Sequence[str] = ()
    ) -> dict[str, Callable[..., Any]]:
        if len(include) == 0:
            include = list(self.original_function_dict.keys())
        keep = [m for m in include if m not in exclude]
        return {m: f for m, f in self.original_function_dict.items() if m in keep}

    def get_curr_metrics(self) -> list[str]:
        return list(self.curr_function_dict.keys())

    def requires_clustering(self) -> list[str]:
        return ["NMI", "AMI"]

    def requires_knn(self) -> list[str]:
        return [
            "precision_at_1",
            "mean_average_precision",
            "mean_average_precision_at_r",
            "r_precision",
            "mean_reciprocal_rank",
        ]

    def check_primary_metrics(self, include=(), exclude=(), _all_defined: bool = False):
        primary = list(self.original_function_dict.keys())
        if _all_defined:  # every calculate_<name> of the class, even if excluded at construction
            primary = [
                x.replace(self.function_keyword, "", 1)
                for x in dir(self)
                if x.startswith(self.function_keyword)
            ]
        for arg, nm in ((include, "include"), (exclude, "exclude")):
            if not isinstance(arg, (tuple, list)):
                raise TypeError(f"{nm} must be a tuple or list, not {type(arg).__name__}")
            bad = [m for m in arg if m not in primary]
            if bad:
                raise ValueError(f"{nm}: unknown metric(s) {bad}; metrics must be one or more of: {primary}")

    def description(self) -> str:
        return "avg_of_avgs" if self.avg_of_avgs else ""

    # -- built-in metrics ----------------------------------------------------------------
    def get_cluster_labels(self, query: np.ndarray, query_labels: np.ndarray, **kwargs: Any) -> np.ndarray:
        n_clusters = len(np.unique(query_labels.reshape(-1)))
        return np.asarray(self.kmeans_func(query, n_clusters)).reshape(-1)

    def calculate_NMI(self, query_labels: np.ndarray, cluster_labels: np.ndarray, **kwargs: Any) -> float:
        return float(normalized_mutual_info_score(query_labels, cluster_labels))

    def calculate_AMI(self, query_labels: np.ndarray, cluster_labels: np.ndarray, **kwargs: Any) -> float:
        return float(adjusted_mutual_info_score(query_labels, cluster_labels))

    def calculate_precision_at_1(self, knn_labels, query_labels, not_lone_query_mask, label_counts, **kwargs):
        knn_labels, query_labels = try_getting_not_lone_labels(knn_labels, query_labels, not_lone_query_mask)
        if knn_labels is None:
            return nan_accuracy(label_counts[0], self.return_per_class)
        return precision_at_k(
            knn_labels,
            query_labels[:, None],
            1,
            self.avg_of_avgs,
            self.return_per_class,
            self.label_comparison_fn,
        )

    def calculate_mean_average_precision_at_r(
        self, knn_labels, query_labels, not_lone_query_mask, ref_includes_query, label_counts, **kwargs
    ):
        knn_labels, query_labels = try_getting_not_lone_labels(knn_labels, query_labels, not_lone_query_mask)
        if knn_labels is None:
            return nan_accuracy(label_counts[0], self.return_per_class)
        return mean_average_precision(
            knn_labels,
            query_labels[:, None],
            ref_includes_query,
            label_counts,
            self.avg_of_avgs,
            self.return_per_class,
            self.label_comparison_fn,
            at_r=True,
        )

    def calculate_mean_average_precision(
        self, knn_labels, query_labels, not_lone_query_mask, ref_includes_query, label_counts, **kwargs
    ):
        knn_labels, query_labels = try_getting_not_lone_labels(knn_labels, query_labels, not_lone_query_mask)
        if knn_labels is None:
            return nan_accuracy(label_counts[0], self.return_per_class)
        return mean_average_precision(
            knn_labels,
            query_labels[:, None],
            ref_includes_query,
            label_counts,
            self.avg_of_avgs,
            self.return_per_class,
            self.label_comparison_fn,
        )

    def calculate_mean_reciprocal_rank(
        self, knn_labels, query_labels, not_lone_query_mask, label_counts, **kwargs
    ):
        knn_labels, query_labels = try_getting_not_lone_labels(knn_labels, query_labels, not_lone_query_mask)
        if knn_labels is None:
            return nan_accuracy(label_counts[0], self.return_per_class)
        return mean_reciprocal_rank(
            knn_labels,
            query_labels[:, None],
            self.avg_of_avgs,
            self.return_per_class,
            self.label_comparison_fn,
        )

    def calculate_r_precision(
        self, knn_labels, query_labels, not_lone_query_mask, ref_includes_query, label_counts, **kwargs
    ):
        knn_labels, query_labels = try_getting_not_lone_labels(knn_labels, query_labels, not_lone_query_mask)
        if knn_labels is None:
            return nan_accuracy(label_counts[0], self.return_per_class)
        return r_precision(
            knn_labels,
            query_labels[:, None],
            ref_includes_query,
            label_counts,
            self.avg_of_avgs,
            self.return_per_class,
            self.label_comparison_fn,
        )

    # -- driver --------------------------------------------------------------------------
    def get_accuracy(
        self,
        query: ArrayLike,
        query_labels: ArrayLike,
        reference: ArrayLike | None = None,
        reference_labels: ArrayLike | None = None,
        ref_includes_query: bool = False,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
    ) -> dict[str, Any]:
        """Compute the current metrics.

        Parameters
        ----------
        query : array_like, float, shape (n, D)
        query_labels : array_like of int, shape (n,) or (n, L)
        reference : array_like, float, shape (M, D), optional
            Default: the queries (then ``ref_includes_query`` is forced to True).
        reference_labels : array_like of int, shape (M,) or (M, L); required with ``reference``
        ref_includes_query : bool, default False
            The first n rows of ``reference`` (and labels) are the queries: a query is never
            its own neighbour and ``R`` counts one less.
        include, exclude : tuple or list of str, default ()
            Restrict the metrics of the constructor for this call.

        Returns
        -------
        dict[str, float | list[float]]
            Metric name -> value (a list per class with ``return_per_class``); k-NN metrics are
            in [0, 1] or nan (every query lone).

        Raises
        ------
        ValueError
            Empty, NaN/Inf or non-2-D embeddings, mismatched D, label lengths, a missing
            ``reference_labels``, ``ref_includes_query`` with a reference that does not start
            with the queries, ``k`` larger than the references available, NMI/AMI with 2-D
            labels, unknown metric names.
        TypeError
            Non-numeric embeddings, non-integer labels, non-bool ``ref_includes_query``.
        """
        if reference is None:
            if reference_labels is not None:
                raise ValueError("reference_labels given without reference")
            reference, reference_labels, ref_includes_query = query, query_labels, True
        ref_includes_query = check_bool(ref_includes_query, "ref_includes_query")
        q = check_array(query, "query", ndim=2, allow_empty=False)
        r = check_array(reference, "reference", ndim=2, allow_empty=False)
        if q.shape[1] != r.shape[1]:
            raise ValueError(
                f"query and reference must have the same dimension, got {q.shape[1]} and {r.shape[1]}"
            )
        if reference_labels is None:
            raise ValueError("reference_labels is required when reference is given")
        q_lab = _check_labels_nd(query_labels, "query_labels", q.shape[0])
        r_lab = _check_labels_nd(reference_labels, "reference_labels", r.shape[0])
        if q_lab.shape[1:] != r_lab.shape[1:]:
            raise ValueError(
                f"query_labels and reference_labels must have the same number of "
                f"columns, got shapes {q_lab.shape} and {r_lab.shape}"
            )
        n = q.shape[0]
        if ref_includes_query and not (
            r.shape[0] >= n and np.allclose(q, r[:n]) and np.array_equal(q_lab, r_lab[:n])
        ):
            raise ValueError(
                "When ref_includes_query is True, the first len(query) rows of "
                "reference (and reference_labels) must equal query (and query_labels)"
            )
        # names excluded at construction are silently dropped (PML); unknown names raise
        self.check_primary_metrics(include, exclude, _all_defined=True)
        self.curr_function_dict = self.get_function_dict(include, exclude)
        curr = self.get_curr_metrics()

        kwargs = {
            "query": q,
            "reference": r,
            "query_labels": q_lab,
            "reference_labels": r_lab,
            "ref_includes_query": ref_includes_query,
            "label_comparison_fn": self.label_comparison_fn,
        }
        if any(m in self.requires_knn() for m in curr):
            kwargs.update(
                self._knn_kwargs(
                    q_lab,
                    r_lab,
                    ref_includes_query,
                    r.shape[0],
                    lambda k: self.knn_func(q, r, k, exclude_self=ref_includes_query),
                )
            )
        if any(m in self.requires_clustering() for m in curr):
            if q_lab.ndim != 1:
                raise ValueError(f"NMI/AMI need 1-D query_labels, got shape {q_lab.shape}")
            kwargs["cluster_labels"] = self.get_cluster_labels(**kwargs)
        return self._get_accuracy(self.curr_function_dict, **kwargs)

    def _get_accuracy(self, function_dict, **kwargs):
        return {m: f(**kwargs) for m, f in function_dict.items()}

    def _knn_kwargs(self, q_lab, r_lab, ref_includes_query, num_reference, knn):
        """The k-NN metrics' kwargs: label counts, lone queries, ``k`` (``determine_k``) and the labels of
        the neighbours ``knn(k) -> (indices (n, k) int, distances)`` finds (``distributed.evaluate``'s too)."""
        n = q_lab.shape[0]
        label_counts = get_label_match_counts(q_lab, r_lab, self.label_comparison_fn)
        lone_labels, not_lone = get_lone_query_labels(
            q_lab, label_counts, ref_includes_query, self.label_comparison_fn
        )
        num_k = self.determine_k(label_counts[1], num_reference, ref_includes_query)
        avail = num_reference - int(ref_includes_query)
        if num_k > avail:
            raise ValueError(
                f"k must be <= {avail} (the number of reference rows"
                f"{', excluding the query itself' if ref_includes_query else ''})"
                f", got k={num_k}"
            )
        if not np.any(not_lone):
            warnings.warn(
                "None of the query labels are in the reference set: the k-NN metrics are nan",
                RuntimeWarning,
                stacklevel=3,
            )
        if num_k < 1:  # every query lone with "max_bin_count": nothing to retrieve
            knn_idx = np.zeros((n, 0), dtype=np.int64)
            knn_dist = np.zeros((n, 0), dtype=np.float32)
        else:
            knn_idx, knn_dist = knn(num_k)
            knn_idx = np.asarray(knn_idx)
            if knn_idx.shape != (n, num_k) or knn_idx.dtype.kind not in "iu":
                raise ValueError(
                    f"knn_func must return integer indices of shape ({n}, {num_k}),"
                    f" got {knn_idx.dtype} {knn_idx.shape}"
                )
        return {
            "label_counts": label_counts,
            "knn_labels": r_lab[knn_idx],
            "knn_distances": np.asarray(knn_dist),
            "lone_query_labels": lone_labels,
            "not_lone_query_mask": not_lone,
        }

    def determine_k(self, bin_counts, num_reference_embeddings, ref_includes_query):
        """Neighbours to retrieve, from ``self.k`` and the label bin counts."""
        self_count = int(ref_includes_query)
        max_bin_count = int(np.max(bin_counts)) if len(bin_counts) else 0
        if self.k == "max_bin_count":
            return max_bin_count - self_count
        if self.k is None or self.k == "all":
            return num_reference_embeddings - self_count
        if self.k < max_bin_count:
            inter = set(self.get_curr_metrics()) & {"r_precision", "mean_average_precision_at_r"}
            if inter:
                warnings.warn(
                    f"You are computing {sorted(inter)}, but k ({self.k}) is less than the max bin "
                    f"count ({max_bin_count}), so these metrics are truncated. Set "
                    f"k='max_bin_count' to fix it; for MAP@{self.k} use 'mean_average_precision'.",
                    RuntimeWarning,
                    stacklevel=4,  # get_accuracy's caller (via _knn_kwargs)
                )
        return self.k
