"""``evaluate``: pytorch-metric-learning's ``AccuracyCalculator`` k-NN metrics over a gallery
held in blocks on the workers."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._validation import check_bool, check_int
from ..embedder import Embedder
from ..evaluation.accuracy_calculator import AccuracyCalculator, _check_labels_nd
from ._common import check_gallery, check_queries, dask_modules, get_client
from ._embed import embed
from ._knn import KNN_METRICS, gallery_neighbors

__all__ = ["evaluate", "KNN_ACCURACY_METRICS"]

KNN_ACCURACY_METRICS = (
    "precision_at_1",
    "r_precision",
    "mean_average_precision_at_r",
    "mean_average_precision",
    "mean_reciprocal_rank",
)
"""The metric names ``evaluate`` accepts in ``include`` (``AccuracyCalculator``'s k-NN metrics)."""

_DEFAULT = ("precision_at_1", "r_precision", "mean_average_precision_at_r")


def _unused(*args, **kwargs):  # pragma: no cover - the calculator's own search and k-means
    raise NotImplementedError("distributed.evaluate finds the neighbours on the workers and never clusters")


def _labels(labels, name, n):
    _, da, _ = dask_modules()
    if isinstance(labels, da.Array):
        labels = labels.compute()
    return _check_labels_nd(labels, name, n)


def _as_dask(x, name, like_rows):
    """A dask array of ``x`` (dask or array_like), chunked along axis 0 by ``like_rows`` rows."""
    _, da, _ = dask_modules()
    if isinstance(x, da.Array):
        return x
    arr = np.asarray(x) if not isinstance(x, (str, bytes)) else x
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be a dask array or a numeric array, got {type(x).__name__}")
    return da.from_array(arr, chunks=(like_rows,) + arr.shape[1:])


def evaluate(
    embedder_or_embeddings: Any,
    labels: Any,
    images: Any = None,
    *,
    query: Any = None,
    query_labels: Any = None,
    include: Sequence[str] = _DEFAULT,
    k: int | str = "max_bin_count",
    avg_of_avgs: bool = False,
    return_per_class: bool = False,
    metric: str = "euclidean",
    batch_size: int = 256,
    normalize: bool = True,
    split_every: int = 8,
    client: Any = None,
) -> dict[str, Any]:
    """pytorch-metric-learning's ``AccuracyCalculator`` k-NN metrics of a gallery held in blocks
    on the workers: ``AccuracyCalculator(include, k=k, ...).get_accuracy`` on the whole, without
    gathering the embeddings.

    Each query's k nearest gallery rows are found block by block, as ``knn`` (a bounded running
    top k per query block, ordered by distance, ties to the lower row); the labels, the lone
    queries, ``k`` and the metrics are then computed in this process by the ``AccuracyCalculator``
    code itself (``determine_k``, ``evaluation.knn_metrics``), so on data that fits in one
    process the result equals ``AccuracyCalculator(...).get_accuracy`` with its default exact
    Euclidean ``knn_func`` (``metric="euclidean"``), up to float32 rounding: two gallery rows
    whose distances to a query differ by about 1e-7 of their size may swap at the k-th place,
    since the blocks are searched in other tiles than one ``evaluation.knn`` call. Definitions: Musgrave, Belongie & Lim 2020,
    "A Metric Learning Reality Check" (R-precision and MAP@R); PML 2.9's
    ``utils/accuracy_calculator.py``.

    Parameters
    ----------
    embedder_or_embeddings : dask array (N, D) float, or a fitted Embedder
        The gallery's embeddings, chunked along axis 0 (persisted or lazy); or an Embedder,
        then ``images`` are embedded on the workers with ``embed`` (``batch_size``,
        ``normalize``), never gathered.
    labels : array_like or dask array, int, (N,) or (N, L)
        The gallery's labels (gathered: N x L int64 in this process).
    images : dask array, (N, *embedder.input_shape_), required with an Embedder
    query, query_labels : optional, together
        Separate queries (PML's ``get_accuracy(query, query_labels, reference,
        reference_labels)`` with ``ref_includes_query=False``): embeddings (nq, D) with an
        embeddings gallery, images with an Embedder; a dask array or array_like (then cut into
        blocks of the gallery's largest chunk). Default: the gallery queries itself, each
        query's own row left out (``ref_includes_query=True``; other identical rows still
        count), and R counts one less.
    include : tuple or list of str, default ("precision_at_1", "r_precision", "mean_average_precision_at_r")
        A non-empty subset of ``KNN_ACCURACY_METRICS`` (PML's names).
    k : int >= 1 or "max_bin_count", default "max_bin_count"
        Neighbours per query, as ``AccuracyCalculator``: "max_bin_count" is the largest number
        of gallery rows sharing a query's label (minus one without ``query``), which makes
        R-precision and MAP@R exact; an int below it truncates them (``RuntimeWarning``).
        PML's default ``k=None`` ("all") would retrieve every gallery row for every query and
        is refused; for precision_at_1, r_precision and MAP@R it gives the same values as
        "max_bin_count".
    avg_of_avgs, return_per_class : bool, default False
        As ``AccuracyCalculator`` (per-class means; exclusive).
    metric : {"euclidean", "sqeuclidean", "cosine"}, default "euclidean"
        The distance that ranks the neighbours (PML's default ``FaissKNN`` ranks by Euclidean).
    batch_size : int >= 1, default 256; normalize : bool, default True
        ``embed``'s, with an Embedder.
    split_every : int >= 2, default 8
    client : distributed.Client, optional
        Default: the current client.

    Returns
    -------
    dict[str, float | list[float]]
        Metric name -> float64 value in [0, 1] (a list per class with ``return_per_class``),
        nan with a ``RuntimeWarning`` when every query is lone.

    Memory: the workers hold what ``knn`` holds plus one (rows, k) top k per query block in
    flight; this process gathers the labels and the neighbours' indices, distances and labels
    (about 20 bytes x nq x k).

    Raises
    ------
    TypeError
        ``embedder_or_embeddings`` neither an Embedder nor a dask array; a non-dask ``images``;
        non-integer labels; non-bool flags; a ``k`` that is neither an int nor a string.
    ValueError
        An Embedder without ``images`` or ``images`` with embeddings; a gallery that is not
        2-D; labels of another length; ``query`` without ``query_labels`` (or the other way
        round) or of another width; an unknown or clustering metric in ``include``; ``k`` None,
        "all", < 1 or larger than the gallery rows available; an unknown ``metric``; NaN/Inf
        embeddings (raised by the worker that meets them).
    ImportError
        Without dask / distributed.
    """
    _, da, _ = dask_modules()
    if isinstance(embedder_or_embeddings, Embedder):
        if images is None:
            raise ValueError("images is required when embedder_or_embeddings is an Embedder")
    elif images is not None:
        raise ValueError("images is only for an Embedder; embedder_or_embeddings is already embeddings")
    elif not isinstance(embedder_or_embeddings, da.Array):
        raise TypeError(
            "embedder_or_embeddings must be an Embedder or a dask array of embeddings, "
            f"got {type(embedder_or_embeddings).__name__}"
        )
    if (query is None) != (query_labels is None):
        raise ValueError("query and query_labels must be given together")
    if isinstance(include, str) or not isinstance(include, (tuple, list)):
        raise TypeError(f"include must be a tuple or list of metric names, got {type(include).__name__}")
    bad = [m for m in include if m not in KNN_ACCURACY_METRICS]
    if bad or not include:
        raise ValueError(
            f"include must be a non-empty subset of {KNN_ACCURACY_METRICS} (the clustering metrics "
            f"NMI/AMI need every embedding in one process), got {list(include)!r}"
        )
    if k is None or k == "all":
        raise ValueError(
            f"k={k!r} would retrieve every gallery row for every query; use k='max_bin_count' "
            "(the same precision_at_1, r_precision and mean_average_precision_at_r) or an int"
        )
    if not isinstance(k, (str, numbers.Integral)) or isinstance(k, bool):
        raise TypeError(f"k must be an int or 'max_bin_count', got {type(k).__name__}")
    if (isinstance(k, str) and k != "max_bin_count") or (not isinstance(k, str) and k < 1):
        raise ValueError(f"k must be an int >= 1 or 'max_bin_count', got {k!r}")
    if metric not in KNN_METRICS:
        raise ValueError(f"metric must be one of {KNN_METRICS}, got {metric!r}")
    check_bool(normalize, "normalize")
    split_every = check_int(split_every, "split_every", minimum=2)
    # validates avg_of_avgs and return_per_class as get_accuracy would
    calc = AccuracyCalculator(
        include=list(include),
        k=k,
        avg_of_avgs=avg_of_avgs,
        return_per_class=return_per_class,
        knn_func=_unused,
        kmeans_func=_unused,
    )
    c = get_client(client)

    if isinstance(embedder_or_embeddings, Embedder):
        gallery = embed(embedder_or_embeddings, images, batch_size, normalize, client=c)
    else:
        gallery = embedder_or_embeddings
    gallery = check_gallery(gallery, "embedder_or_embeddings")
    N = int(gallery.shape[0])
    if N == 0:
        raise ValueError("embedder_or_embeddings must have at least one row")
    r_lab = _labels(labels, "labels", N)
    if query is None:
        own, q_lab, q_blocks = True, r_lab, list(gallery.to_delayed().ravel())
    else:
        own = False
        rows = max(gallery.chunks[0]) if N else 1
        if isinstance(embedder_or_embeddings, Embedder):
            Zq = embed(
                embedder_or_embeddings, _as_dask(query, "query", rows), batch_size, normalize, client=c
            )
        else:
            Zq = _as_dask(query, "query", rows)
            if Zq.ndim != 2 or Zq.shape[1] != gallery.shape[1]:
                raise ValueError(f"query must have shape (nq, {gallery.shape[1]}), got {Zq.shape}")
            if not isinstance(query, da.Array):
                check_queries(query, int(gallery.shape[1]), "query")  # NaN/Inf here, not on a worker
        Zq = Zq.rechunk({1: -1})
        if Zq.shape[0] == 0:
            raise ValueError("query must have at least one row")
        q_lab = _labels(query_labels, "query_labels", int(Zq.shape[0]))
        q_blocks = list(Zq.to_delayed().ravel())
    if q_lab.shape[1:] != r_lab.shape[1:]:
        raise ValueError(
            f"query_labels and labels must have the same number of columns, got shapes {q_lab.shape} and "
            f"{r_lab.shape}"
        )

    def neighbors(num_k):
        futs = gallery_neighbors(
            c, gallery, q_blocks, num_k, metric, split_every, own_rows=own, name="embeddings"
        )
        parts = c.gather(futs)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    kwargs = {
        "query": None,
        "reference": None,
        "query_labels": q_lab,
        "reference_labels": r_lab,
        "ref_includes_query": own,
        "label_comparison_fn": calc.label_comparison_fn,
    }
    kwargs.update(calc._knn_kwargs(q_lab, r_lab, own, N, neighbors))
    return calc._get_accuracy(calc.curr_function_dict, **kwargs)
