"""distributed.evaluate on a two-process LocalCluster against the single-process
AccuracyCalculator (the oracle): the same dict, on galleries that fit in one process."""

import warnings

import numpy as np
import pytest

pytest.importorskip("dask", reason="needs the dask extra: pip install '.[dask]'")
pytest.importorskip("distributed", reason="needs the dask extra: pip install '.[dask]'")
import dask.array as da  # noqa: E402

from mantissa_embed import distributed as med  # noqa: E402
from mantissa_embed.evaluation import AccuracyCalculator, knn  # noqa: E402

ALL = med.KNN_ACCURACY_METRICS
DEFAULT = ("precision_at_1", "r_precision", "mean_average_precision_at_r")


def _data(seed, n=600, dim=8, n_classes=23):
    """Clustered embeddings with uneven classes (some of one member: lone queries) and a few
    duplicated rows (equal distances)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    y[:3] = [100, 101, 102]  # lone
    centers = rng.standard_normal((103, dim)).astype(np.float32)
    Z = (centers[y] + 0.8 * rng.standard_normal((n, dim))).astype(np.float32)
    Z[10:15] = Z[20:25]
    return Z, y


def _oracle(*args, metric="euclidean", **kwargs):
    def knn_func(q, r, k, *, exclude_self=False):
        return knn(q, r, k, exclude_self=exclude_self, metric=metric)

    return AccuracyCalculator(knn_func=knn_func, kmeans_func=lambda x, n: None, **kwargs).get_accuracy(*args)


@pytest.mark.parametrize("chunk", [37, 128, 600])
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_equals_accuracy_calculator_on_the_gallery_itself(client, chunk, metric):
    Z, y = _data(chunk)
    got = med.evaluate(da.from_array(Z, chunks=(chunk, 8)), y, include=ALL, metric=metric, client=client)
    want = _oracle(Z, y, include=ALL, k="max_bin_count", metric=metric)
    assert got == want and set(got) == set(ALL)
    assert all(0 < v < 1 for v in got.values())


def test_pml_default_k_gives_the_same_r_metrics(client):
    # k=None (PML's default: every reference) and max_bin_count agree on these three
    Z, y = _data(1)
    got = med.evaluate(da.from_array(Z, chunks=(100, 8)), da.from_array(y, chunks=50), client=client)
    want = AccuracyCalculator(include=DEFAULT, kmeans_func=lambda x, n: None).get_accuracy(Z, y)
    assert set(got) == set(DEFAULT)
    for m in DEFAULT:
        assert abs(got[m] - want[m]) <= 1e-12, m


@pytest.mark.parametrize("flags", [{"avg_of_avgs": True}, {"return_per_class": True}])
def test_per_class_averages(client, flags):
    Z, y = _data(2)
    got = med.evaluate(da.from_array(Z, chunks=(150, 8)), y, include=ALL, client=client, **flags)
    np.testing.assert_equal(got, _oracle(Z, y, include=ALL, k="max_bin_count", **flags))


def test_an_int_k_below_max_bin_count_truncates_with_a_warning(client):
    Z, y = _data(3)
    with pytest.warns(RuntimeWarning, match="less than the max bin count"):
        got = med.evaluate(da.from_array(Z, chunks=(100, 8)), y, include=ALL, k=4, client=client)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert got == _oracle(Z, y, include=ALL, k=4)


def test_separate_queries_and_two_column_labels(client):
    Z, y = _data(4)
    y2 = np.stack([y % 5, y // 5], axis=1)
    Zq, yq = Z[:90] + np.float32(0.05), y2[:90]
    got = med.evaluate(
        da.from_array(Z, chunks=(70, 8)), y2, query=Zq, query_labels=yq, include=ALL, client=client
    )
    assert got == _oracle(Zq, yq, Z, y2, include=ALL, k="max_bin_count")
    got = med.evaluate(  # queries as a dask array too
        da.from_array(Z, chunks=(70, 8)),
        y2,
        query=da.from_array(Zq, chunks=(40, 8)),
        query_labels=da.from_array(yq, chunks=(40, 2)),
        include=ALL,
        client=client,
    )
    assert got == _oracle(Zq, yq, Z, y2, include=ALL, k="max_bin_count")


def test_every_query_lone_is_nan_with_a_warning(client):
    Z = np.random.default_rng(5).standard_normal((40, 8)).astype(np.float32)
    with pytest.warns(RuntimeWarning, match="k-NN metrics are nan"):
        got = med.evaluate(da.from_array(Z, chunks=(15, 8)), np.arange(40), client=client)
    assert all(np.isnan(v) for v in got.values())


def test_an_embedder_and_images(client, fitted):
    emb, X, y = fitted
    images = da.from_array(X, chunks=(64, 1, 12, 12))
    got = med.evaluate(emb, y, images, include=ALL, batch_size=32, client=client)
    Z = med.embed(emb, images, batch_size=32, client=client).compute()  # what the workers embed
    assert got == _oracle(Z, y, include=ALL, k="max_bin_count")
    q = np.arange(len(X)) % 5 == 0  # 8 queries per class, the rest gallery
    got = med.evaluate(emb, y[~q], images[~q], query=X[q], query_labels=y[q], client=client)
    Zq = med.embed(emb, da.from_array(X[q], chunks=(200, 1, 12, 12)), client=client).compute()
    assert got == _oracle(Zq, y[q], Z[~q], y[~q], k="max_bin_count", include=list(DEFAULT))


def test_bad_input(client, fitted):
    emb, X, y = fitted
    Z = da.from_array(np.random.default_rng(6).standard_normal((50, 4)).astype(np.float32), chunks=20)
    lab = np.repeat(np.arange(10), 5)
    cases = [
        (TypeError, "embedder_or_embeddings must be an Embedder or a dask array", (Z.compute(), lab), {}),
        (ValueError, "images is required", (emb, y), {}),
        (ValueError, "images is only for an Embedder", (Z, lab, X), {}),
        (TypeError, "labels must have an integer dtype", (Z, lab.astype(float)), {}),
        (ValueError, "labels must have length 50", (Z, lab[:-1]), {}),
        (ValueError, "query and query_labels must be given together", (Z, lab), {"query": np.zeros((2, 4))}),
        (
            ValueError,
            r"query must have shape \(nq, 4\)",
            (Z, lab),
            {"query": np.zeros((2, 3)), "query_labels": [1, 2]},
        ),
        (
            ValueError,
            "query_labels must have length 2",
            (Z, lab),
            {"query": np.zeros((2, 4)), "query_labels": [1]},
        ),
        (ValueError, "include must be a non-empty subset", (Z, lab), {"include": ("NMI",)}),
        (ValueError, "include must be a non-empty subset", (Z, lab), {"include": ()}),
        (TypeError, "include must be a tuple or list", (Z, lab), {"include": "r_precision"}),
        (ValueError, "would retrieve every gallery row", (Z, lab), {"k": None}),
        (ValueError, "would retrieve every gallery row", (Z, lab), {"k": "all"}),
        (ValueError, "k must be an int >= 1", (Z, lab), {"k": 0}),
        (TypeError, "k must be an int", (Z, lab), {"k": 2.0}),
        (ValueError, "k must be <= 49", (Z, lab), {"k": 50}),
        (ValueError, "metric must be one of", (Z, lab), {"metric": "manhattan"}),
        (TypeError, "avg_of_avgs", (Z, lab), {"avg_of_avgs": "yes"}),
        (ValueError, "mutually exclusive", (Z, lab), {"avg_of_avgs": True, "return_per_class": True}),
        (ValueError, "embeddings contains NaN or Inf", (Z * np.nan, lab), {}),
        (
            ValueError,
            "query contains NaN or Inf",
            (Z, lab),
            {"query": np.full((2, 4), np.inf), "query_labels": [1, 2]},
        ),
    ]
    for exc, match, args, kwargs in cases:
        with pytest.raises(exc, match=match):
            med.evaluate(*args, client=client, **kwargs)
