"""evaluation.retrieval: precision@1, R-precision, MAP@R against a plain per-query implementation."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed.evaluation import (
    mean_average_precision_at_r,
    metrics_from_knn_labels,
    precision_at_1,
    r_precision,
    retrieval_metrics,
)

NAMES = ("precision_at_1", "r_precision", "mean_average_precision_at_r")


def naive_metrics(q, q_lab, r, r_lab, ref_includes_query, avg_of_avgs=False):
    """Per query, in plain Python, from a float64 full sort (ties by index); Musgrave et al. 2020."""
    q64, r64 = q.astype(np.float64), r.astype(np.float64)
    per = {m: [] for m in NAMES}
    kept_labels = []
    for i in range(len(q)):
        d = ((r64 - q64[i]) ** 2).sum(1)
        order = [j for j in np.argsort(d, kind="stable") if not (ref_includes_query and j == i)]
        R = sum(1 for j in range(len(r)) if r_lab[j] == q_lab[i]) - (1 if ref_includes_query else 0)
        if R <= 0:
            continue
        rel = [1 if r_lab[j] == q_lab[i] else 0 for j in order]
        per["precision_at_1"].append(rel[0])
        per["r_precision"].append(sum(rel[:R]) / R)
        hits, ap = 0, 0.0
        for pos in range(R):
            if rel[pos]:
                hits += 1
                ap += hits / (pos + 1)
        per["mean_average_precision_at_r"].append(ap / R)
        kept_labels.append(q_lab[i])
    out = {}
    for m in NAMES:
        v = np.array(per[m], dtype=np.float64)
        if not avg_of_avgs:
            out[m] = float(v.mean())
        else:
            lab = np.array(kept_labels)
            out[m] = float(np.mean([v[lab == c].mean() for c in np.unique(lab)]))
    return out


@st.composite
def retrieval_case(draw):
    n = draw(st.integers(2, 60))
    D = draw(st.integers(1, 6))
    C = draw(st.integers(1, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    spread = draw(st.sampled_from([0.0, 0.5, 3.0]))
    y = rng.integers(0, C, n)
    centers = rng.standard_normal((C, D)) * spread
    X = (centers[y] + rng.standard_normal((n, D))).astype(np.float32)
    with_ref = draw(st.sampled_from(["none", "separate", "includes"]))
    if with_ref == "none":
        return X, y, None, None, None
    m = draw(st.integers(1, 50))
    ry = rng.integers(0, C, m)
    R = (centers[ry] + rng.standard_normal((m, D))).astype(np.float32)
    if with_ref == "includes":
        return X, y, np.concatenate([X, R]), np.concatenate([y, ry]), True
    return X, y, R, ry, False


@settings(max_examples=80, deadline=None)
@given(retrieval_case(), st.booleans())
def test_matches_naive_definition(case, avg_of_avgs):
    X, y, R, ry, inc = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = retrieval_metrics(X, y, R, ry, ref_includes_query=inc, avg_of_avgs=avg_of_avgs)
        ref = naive_metrics(
            X, y, X if R is None else R, y if ry is None else ry, True if R is None else inc, avg_of_avgs
        )
    assert set(got) == set(NAMES)
    for m in NAMES:
        if np.isnan(ref[m]):
            assert np.isnan(got[m])
        else:
            assert 0.0 <= got[m] <= 1.0
            assert got[m] == pytest.approx(ref[m], abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(2, 9), st.integers(1, 5), st.integers(0, 1000))
def test_perfect_embedding_scores_one(C, per_class, D, seed):
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.repeat(np.arange(C), per_class))
    centers = np.eye(max(C, D))[:C, : max(C, D)] * 100.0
    X = (centers[y] + rng.uniform(-0.1, 0.1, (len(y), centers.shape[1]))).astype(np.float32)
    res = retrieval_metrics(X, y)
    assert res == {m: 1.0 for m in NAMES}


def test_single_functions_equal_dict_entries():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 80)
    X = (rng.standard_normal((80, 3)) + y[:, None]).astype(np.float32)
    res = retrieval_metrics(X, y)
    assert precision_at_1(X, y) == res["precision_at_1"]
    assert r_precision(X, y) == res["r_precision"]
    assert mean_average_precision_at_r(X, y, backend="numpy") == res["mean_average_precision_at_r"]
    with pytest.raises(TypeError, match="include"):
        precision_at_1(X, y, include=("r_precision",))


def test_hand_computed_example():
    # labels of the (self-excluded) neighbours, nearest first; reference = queries
    q_lab = np.array([0, 0, 0, 1, 1])
    knn_labels = np.array([[0, 1], [1, 0], [1, 1], [1, 0], [0, 0]])
    res = metrics_from_knn_labels(knn_labels, q_lab, q_lab, ref_includes_query=True)
    # R = 2, 2, 2, 1, 1
    assert res["precision_at_1"] == pytest.approx((1 + 0 + 0 + 1 + 0) / 5)
    assert res["r_precision"] == pytest.approx((1 / 2 + 1 / 2 + 0 + 1 + 0) / 5)
    assert res["mean_average_precision_at_r"] == pytest.approx((1 / 2 + (1 / 2) / 2 + 0 + 1 + 0) / 5)


def test_lone_queries_are_skipped_and_all_lone_is_nan():
    X = np.array([[0.0], [0.1], [5.0], [9.0]], np.float32)
    y = np.array([0, 0, 1, 2])  # classes 1 and 2 have one member: lone
    res = retrieval_metrics(X, y)
    assert res == {m: 1.0 for m in NAMES}
    with pytest.warns(RuntimeWarning, match="lone"):
        res = retrieval_metrics(X[2:], y[2:])
    assert all(np.isnan(v) for v in res.values())
    # separate reference without the query's class
    with pytest.warns(RuntimeWarning, match="lone"):
        res = retrieval_metrics(X[:1], y[:1], X[2:], y[2:])
    assert np.isnan(res["precision_at_1"])


def test_small_k_truncates_with_warning():
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(3), 10)
    X = rng.standard_normal((30, 2)).astype(np.float32)
    with pytest.warns(RuntimeWarning, match="truncated"):
        res = retrieval_metrics(X, y, k=3)
    exact = retrieval_metrics(X, y)
    assert res["precision_at_1"] == exact["precision_at_1"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (
            retrieval_metrics(X, y, include=("precision_at_1",), k=1)["precision_at_1"]
            == exact["precision_at_1"]
        )


def test_errors():
    X = np.zeros((4, 2), np.float32)
    y = np.array([0, 0, 1, 1])
    with pytest.raises(ValueError, match="k must be <= 3"):
        retrieval_metrics(X, y, k=4)
    with pytest.raises(ValueError, match="labels must have length 4"):
        retrieval_metrics(X, y[:3])
    with pytest.raises(TypeError, match="labels"):
        retrieval_metrics(X, y.astype(float))
    with pytest.raises(ValueError, match="embeddings must not be empty"):
        retrieval_metrics(np.zeros((0, 2)), np.zeros(0, np.int64))
    with pytest.raises(ValueError, match="embeddings contains NaN"):
        retrieval_metrics(np.full((4, 2), np.nan), y)
    with pytest.raises(ValueError, match="reference_labels is required"):
        retrieval_metrics(X, y, X)
    with pytest.raises(ValueError, match="needs a separate reference"):
        retrieval_metrics(X, y, ref_includes_query=False)
    with pytest.raises(ValueError, match="first len"):
        retrieval_metrics(X, y, X + 1, y, ref_includes_query=True)
    with pytest.raises(ValueError, match="include"):
        retrieval_metrics(X, y, include=("NMI",))
    with pytest.raises(ValueError, match="same number of columns"):
        retrieval_metrics(X, y, np.zeros((4, 3)), y)
    with pytest.raises(ValueError, match="knn_labels must have shape"):
        metrics_from_knn_labels(np.zeros((3, 2), np.int64), y, y, ref_includes_query=True)
