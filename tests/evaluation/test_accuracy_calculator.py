"""AccuracyCalculator: metrics against a brute-force per-query loop, properties, API, bad input."""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from mantissa_embed.evaluation import AccuracyCalculator, accuracy_calculator as ac, knn

KNN_METRICS = (
    "precision_at_1",
    "r_precision",
    "mean_average_precision_at_r",
    "mean_average_precision",
    "mean_reciprocal_rank",
)


def _brute(q, ql, r, rl, ref_includes_query, k):
    """Per-query loop straight from the definitions, on a float64 stable argsort."""
    d = _dist64(q, r)
    per = {m: [] for m in KNN_METRICS}
    for i in range(len(q)):
        order = np.argsort(d[i], kind="stable")
        if ref_includes_query:
            order = order[order != i]
        R = int(np.sum(rl == ql[i])) - int(ref_includes_query)
        if R <= 0:
            continue
        rel = (rl[order[:k]] == ql[i]).astype(float)
        prec = np.cumsum(rel) / np.arange(1, len(rel) + 1)
        per["precision_at_1"].append(rel[0])
        per["r_precision"].append(rel[:R].sum() / min(R, len(rel)))
        per["mean_average_precision_at_r"].append((prec * rel)[:R].sum() / R)
        per["mean_average_precision"].append((prec * rel).sum() / R)
        hits = np.flatnonzero(rel)
        per["mean_reciprocal_rank"].append(1.0 / (hits[0] + 1) if len(hits) else 0.0)
    return {m: float(np.mean(v)) for m, v in per.items()}


def _dist64(q, r):
    return np.sqrt(((q[:, None, :].astype(np.float64) - r[None].astype(np.float64)) ** 2).sum(-1))


def _near_tie(q, r):
    """Two references at distances closer than float32 k-NN resolves (their order may differ)."""
    s = np.sort(_dist64(q, r), axis=1)
    return bool(np.any(np.diff(s, axis=1) < 1e-4 * (1.0 + s[:, 1:])))


def _clustered(n, d, c, seed, spread=1.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, size=n)
    x = rng.normal(size=(c, d))[y] * 2 + spread * rng.normal(size=(n, d))
    return x.astype(np.float32), y


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(2, 40),
    m=st.integers(1, 40),
    d=st.integers(1, 6),
    c=st.integers(1, 5),
    seed=st.integers(0, 2**31 - 1),
    mode=st.sampled_from(["self", "separate", "includes"]),
    kmode=st.sampled_from([None, "max_bin_count", "int"]),
)
def test_matches_brute_force_and_in_unit_interval(n, m, d, c, seed, mode, kmode):
    x, y = _clustered(n + m, d, c, seed)
    if mode == "self":
        q, ql, r, rl, inc = x[:n], y[:n], x[:n], y[:n], True
        args = (q, ql)
    elif mode == "separate":
        q, ql, r, rl, inc = x[:n], y[:n], x[n:], y[n:], False
        args = (q, ql, r, rl, False)
    else:
        q, ql, r, rl, inc = x[:n], y[:n], x, y, True
        args = (q, ql, r, rl, True)
    avail = len(r) - int(inc)
    if avail < 1:
        return
    counts = np.array([np.sum(rl == v) for v in np.unique(ql)])
    if kmode is None:
        k = avail
    elif kmode == "max_bin_count":
        k = int(counts.max()) - int(inc)
        if k < 1:
            return
    else:
        k = int(np.random.default_rng(seed).integers(1, avail + 1))
        kmode = k
    calc = AccuracyCalculator(include=KNN_METRICS, k=kmode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = calc.get_accuracy(*args)
    assume(not _near_tie(q, r))
    want = _brute(q, ql, r, rl, inc, k)
    for metric in KNN_METRICS:
        if np.isnan(want[metric]):
            assert np.isnan(got[metric])
            continue
        assert 0.0 <= got[metric] <= 1.0
        np.testing.assert_allclose(got[metric], want[metric], atol=1e-9, err_msg=metric)


@settings(max_examples=20, deadline=None)
@given(c=st.integers(2, 6), per=st.integers(2, 6), d=st.integers(2, 5), seed=st.integers(0, 10**6))
def test_perfect_embedding_gives_one(c, per, d, seed):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(c), per)
    rng.shuffle(y)
    centres = np.eye(max(c, d))[:c, :d] * 100.0 if c <= d else rng.normal(size=(c, d)) * 100.0
    x = (centres[y] + 0.01 * rng.normal(size=(len(y), d))).astype(np.float32)
    for k in (None, "max_bin_count"):
        # k-means++ starts (scikit-learn) find separated clusters; faiss's single random start
        # (PML's default, ours with faiss) can merge two of them
        out = AccuracyCalculator(k=k, kmeans_func=ac.SklearnKMeans()).get_accuracy(x, y)
        for metric, v in out.items():
            assert v == pytest.approx(1.0, abs=1e-12), (metric, k)
        out = AccuracyCalculator(k=k).get_accuracy(x[:5], y[:5], x, y, True)
        for metric in KNN_METRICS:
            assert out[metric] == pytest.approx(1.0, abs=1e-12)


def test_avg_of_avgs_and_per_class_by_hand():
    # 1-D, class 0 = {0, 1, 2}, class 1 = {10, 11}; query 2 is nearer class 1's 10 than to 0
    x = np.array([[0.0], [1.0], [6.0], [10.0], [11.0]], dtype=np.float32)
    y = np.array([0, 0, 0, 1, 1])
    per_sample = [1.0, 1.0, 0.0, 1.0, 1.0]  # precision@1
    out = AccuracyCalculator(include=("precision_at_1",)).get_accuracy(x, y)
    assert out["precision_at_1"] == pytest.approx(np.mean(per_sample))
    out = AccuracyCalculator(include=("precision_at_1",), avg_of_avgs=True).get_accuracy(x, y)
    assert out["precision_at_1"] == pytest.approx((2 / 3 + 1.0) / 2)
    out = AccuracyCalculator(include=("precision_at_1",), return_per_class=True).get_accuracy(x, y)
    assert out["precision_at_1"] == pytest.approx([2 / 3, 1.0])


def test_lone_queries_give_nan_with_warning():
    x = np.arange(6, dtype=np.float32)[:, None]
    calc = AccuracyCalculator(include=("precision_at_1", "r_precision"))
    with pytest.warns(RuntimeWarning, match="None of the query labels"):
        out = calc.get_accuracy(x[:3], [0, 1, 2], x[3:], [5, 6, 7], False)
    assert all(np.isnan(v) for v in out.values())
    calc = AccuracyCalculator(include=("precision_at_1",), return_per_class=True)
    with pytest.warns(RuntimeWarning):
        out = calc.get_accuracy(x[:3], [0, 1, 2], x[3:], [5, 6, 7], False)
    assert len(out["precision_at_1"]) == 3 and np.isnan(out["precision_at_1"]).all()


def test_small_int_k_warns_for_r_metrics():
    x, y = _clustered(60, 3, 3, 0)
    with pytest.warns(RuntimeWarning, match="max bin"):
        AccuracyCalculator(include=("r_precision",), k=2).get_accuracy(x, y)


def test_custom_metrics_by_subclassing():
    seen = {}

    class Calc(AccuracyCalculator):
        def calculate_precision_at_2(self, knn_labels, query_labels, **kwargs):
            seen["knn"] = kwargs["knn_distances"].shape
            return ac.precision_at_k(
                knn_labels,
                query_labels[:, None],
                2,
                self.avg_of_avgs,
                self.return_per_class,
                self.label_comparison_fn,
            )

        def calculate_n_clusters(self, cluster_labels, **kwargs):
            return len(np.unique(cluster_labels))

        def requires_knn(self):
            return super().requires_knn() + ["precision_at_2"]

        def requires_clustering(self):
            return super().requires_clustering() + ["n_clusters"]

    x, y = _clustered(50, 3, 4, 1, spread=0.05)
    calc = Calc(k="max_bin_count")
    assert "precision_at_2" in calc.get_curr_metrics() and "n_clusters" in calc.get_curr_metrics()
    out = calc.get_accuracy(x, y)
    assert out["n_clusters"] == len(np.unique(y))
    assert out["precision_at_2"] == pytest.approx(1.0)
    assert seen["knn"][0] == 50
    out = calc.get_accuracy(x, y, include=("precision_at_2",))
    assert list(out) == ["precision_at_2"]


def test_knn_func_signature_is_knn():
    calls = []

    def my_knn(query, reference, k, *, exclude_self=False):
        calls.append((query.shape, reference.shape, k, exclude_self))
        return knn(query, reference, k, exclude_self=exclude_self, backend="numpy")

    x, y = _clustered(30, 3, 3, 2)
    a = AccuracyCalculator(include=KNN_METRICS, knn_func=my_knn).get_accuracy(x, y)
    b = AccuracyCalculator(include=KNN_METRICS).get_accuracy(x, y)
    assert calls == [((30, 3), (30, 3), 29, True)]
    assert a == pytest.approx(b)


def test_multilabel_default_equality_is_row_equality():
    x, y1 = _clustered(40, 3, 4, 3)
    y2 = np.stack([y1, y1 * 10], axis=1)  # the same partition, as 2-column labels
    a = AccuracyCalculator(include=KNN_METRICS).get_accuracy(x, y1)
    b = AccuracyCalculator(include=KNN_METRICS).get_accuracy(x, y2)
    assert a == pytest.approx(b)
    with pytest.raises(ValueError, match="NMI"):
        AccuracyCalculator(include=("NMI",)).get_accuracy(x, y2)


def test_nmi_ami_perfect_and_deterministic():
    x, y = _clustered(60, 4, 3, 4, spread=0.01)
    calc = AccuracyCalculator(include=("NMI", "AMI"))
    out = calc.get_accuracy(x, y)
    assert out["NMI"] == pytest.approx(1.0) and out["AMI"] == pytest.approx(1.0)
    x, y = _clustered(60, 4, 3, 5, spread=3.0)
    assert calc.get_accuracy(x, y) == calc.get_accuracy(x, y)


# ---- bad input -------------------------------------------------------------------------
def _xy():
    return _clustered(20, 3, 2, 6)


def test_k_larger_than_reference():
    x, y = _xy()
    with pytest.raises(ValueError, match="k must be <= 19"):
        AccuracyCalculator(k=20).get_accuracy(x, y)
    with pytest.raises(ValueError, match="k must be <= 5"):
        AccuracyCalculator(k=6).get_accuracy(x, y, x[:5], y[:5], False)


def test_wrong_label_length():
    x, y = _xy()
    with pytest.raises(ValueError, match="query_labels"):
        AccuracyCalculator().get_accuracy(x, y[:-1])
    with pytest.raises(ValueError, match="reference_labels"):
        AccuracyCalculator().get_accuracy(x, y, x, y[:-2], False)
    with pytest.raises(ValueError, match="reference_labels is required"):
        AccuracyCalculator().get_accuracy(x, y, x)
    with pytest.raises(TypeError, match="query_labels"):
        AccuracyCalculator().get_accuracy(x, y.astype(float))


def test_nan_and_dims():
    x, y = _xy()
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="query contains NaN"):
        AccuracyCalculator().get_accuracy(bad, y)
    with pytest.raises(ValueError, match="reference contains NaN"):
        AccuracyCalculator().get_accuracy(x, y, bad, y, False)
    with pytest.raises(ValueError, match="same dimension"):
        AccuracyCalculator().get_accuracy(x, y, x[:, :2], y, False)
    with pytest.raises(ValueError, match="query must be 2-D"):
        AccuracyCalculator().get_accuracy(x[:, 0], y)
    with pytest.raises(ValueError, match="must not be empty"):
        AccuracyCalculator().get_accuracy(x[:0], y[:0])


def test_ref_includes_query_must_hold():
    x, y = _xy()
    with pytest.raises(ValueError, match="ref_includes_query"):
        AccuracyCalculator().get_accuracy(x[:5], y[:5], x[5:], y[5:], True)


def test_constructor_errors():
    with pytest.raises(ValueError, match="mutually exclusive"):
        AccuracyCalculator(avg_of_avgs=True, return_per_class=True)
    with pytest.raises(ValueError, match="k must be"):
        AccuracyCalculator(k=0)
    with pytest.raises(ValueError, match="k must be"):
        AccuracyCalculator(k="max")
    with pytest.raises(TypeError, match="k must be"):
        AccuracyCalculator(k=2.5)
    with pytest.raises(TypeError, match="include"):
        AccuracyCalculator(include="NMI")
    with pytest.raises(ValueError, match="unknown metric"):
        AccuracyCalculator(include=("precision_at_5",))
    with pytest.raises(ValueError, match="unknown metric"):
        AccuracyCalculator().get_accuracy(*_xy(), include=("nope",))
    with pytest.raises(NotImplementedError):
        AccuracyCalculator(label_comparison_fn=lambda a, b: a == b)
    with pytest.raises(TypeError, match="knn_func"):
        AccuracyCalculator(knn_func=3)


def test_mean_reciprocal_rank_alone_runs_the_knn():
    # PML 2.9 forgets it in requires_knn (KeyError when asked alone); here it works
    x, y = _clustered(30, 3, 3, 7)
    alone = AccuracyCalculator(include=("mean_reciprocal_rank",)).get_accuracy(x, y)
    full = AccuracyCalculator().get_accuracy(x, y)
    assert alone["mean_reciprocal_rank"] == full["mean_reciprocal_rank"]


def test_clustering_matches_pml_with_faiss():
    """With faiss installed the default k-means is PML's (faiss.Kmeans, niter 20, its seed), so
    NMI and AMI equal pytorch-metric-learning's on the same input."""
    pytest.importorskip("faiss")
    torch = pytest.importorskip("torch")
    pml = pytest.importorskip("pytorch_metric_learning.utils.accuracy_calculator")
    from mantissa_embed.evaluation.accuracy_calculator import FaissKMeans

    rng = np.random.default_rng(4)
    y = rng.integers(0, 6, 400)
    x = (rng.normal(size=(6, 10))[y] * 2 + rng.normal(size=(400, 10))).astype(np.float32)
    calc = AccuracyCalculator(include=("NMI", "AMI"))
    assert isinstance(calc.kmeans_func, FaissKMeans)
    ours = calc.get_accuracy(x, y)
    theirs = pml.AccuracyCalculator(include=("NMI", "AMI"), device=torch.device("cpu")).get_accuracy(
        torch.from_numpy(x), torch.from_numpy(y)
    )
    assert ours["NMI"] == pytest.approx(theirs["NMI"], abs=1e-12)
    assert ours["AMI"] == pytest.approx(theirs["AMI"], abs=1e-12)


def test_without_faiss_the_default_is_scikit_learn(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "faiss", None)  # import faiss -> ImportError
    assert isinstance(ac.default_kmeans(), ac.SklearnKMeans)
    assert isinstance(AccuracyCalculator().kmeans_func, ac.SklearnKMeans)
