"""AccuracyCalculator against pytorch-metric-learning 2.9's, on the same embeddings.

PML's default k-NN (faiss ``IndexFlatL2``) is replaced, on its side only, by its own
``CustomKNN(LpDistance(normalize_embeddings=False))`` -- the same ranking (Euclidean on the raw
embeddings) computed by torch; ours uses its default (mantissa exact k-NN). NMI/AMI use the
same deterministic k-means function on both sides.
"""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_metric_learning")
from pytorch_metric_learning.distances import LpDistance  # noqa: E402
from pytorch_metric_learning.utils import accuracy_calculator as pml_ac  # noqa: E402
from pytorch_metric_learning.utils.inference import CustomKNN  # noqa: E402
from sklearn.cluster import KMeans  # noqa: E402

from mantissa_embed.evaluation import AccuracyCalculator  # noqa: E402

ALL = (
    "precision_at_1",
    "r_precision",
    "mean_average_precision_at_r",
    "mean_average_precision",
    "mean_reciprocal_rank",
    "NMI",
    "AMI",
)


def _kmeans_np(x, n_clusters):
    x = np.asarray(x, dtype=np.float64)
    return KMeans(n_clusters=n_clusters, n_init=3, random_state=7).fit_predict(x)


def _kmeans_torch(x, n_clusters):
    return torch.as_tensor(_kmeans_np(x.cpu().numpy(), n_clusters))


def _pml(**kw):
    return pml_ac.AccuracyCalculator(
        device=torch.device("cpu"),
        knn_func=CustomKNN(LpDistance(normalize_embeddings=False)),
        kmeans_func=_kmeans_torch,
        **kw,
    )


def _ours(**kw):
    return AccuracyCalculator(kmeans_func=_kmeans_np, **kw)


def _data(kind, n, d, n_classes, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, size=n)
    if kind == "random":
        x = rng.normal(size=(n, d))
    else:  # clustered: class centres plus noise, overlapping a little
        centres = rng.normal(size=(n_classes, d)) * 2.0
        x = centres[labels] + rng.normal(size=(n, d))
    return x.astype(np.float32), labels.astype(np.int64)


def _compare(ours, theirs):
    assert set(ours) == set(theirs)
    for m in theirs:
        a, b = ours[m], theirs[m]
        if isinstance(b, list):
            assert isinstance(a, list) and len(a) == len(b), m
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-6, err_msg=m)
        else:
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-6, err_msg=m)


def _run(calc_kw, args, kwargs=None):
    kwargs = kwargs or {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = _ours(**calc_kw).get_accuracy(*args, **kwargs)
        targs = [torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args]
        theirs = _pml(**calc_kw).get_accuracy(*targs, **kwargs)
    _compare(ours, theirs)
    return ours


@pytest.mark.parametrize("kind", ["random", "clustered"])
@pytest.mark.parametrize("k", [None, "max_bin_count", 5, 40])
def test_query_is_reference(kind, k):
    x, y = _data(kind, 120, 8, 6, seed=1)
    _run({"k": k}, (x, y))


@pytest.mark.parametrize("kind", ["random", "clustered"])
@pytest.mark.parametrize("k", [None, "max_bin_count", 3])
def test_separate_reference(kind, k):
    x, y = _data(kind, 150, 6, 7, seed=2)
    # labels 7 and 8 appear only in the queries: lone queries are left out
    yq = y[:60].copy()
    yq[:4] = 7
    yq[4] = 8
    _run({"k": k}, (x[:60], yq, x[60:], y[60:], False))


@pytest.mark.parametrize("k", [None, "max_bin_count", 7])
def test_ref_includes_query(k):
    x, y = _data("clustered", 130, 5, 5, seed=3)
    y[0] = 9  # a class with a single member: lone when the reference includes the query
    _run({"k": k}, (x[:50], y[:50], x, y, True))


@pytest.mark.parametrize("mode", [{"avg_of_avgs": True}, {"return_per_class": True}])
@pytest.mark.parametrize("ref", [False, True])
def test_per_class_and_avg_of_avgs(mode, ref):
    x, y = _data("clustered", 140, 4, 6, seed=4)
    if ref:
        _run({"k": "max_bin_count", **mode}, (x[:70], y[:70], x[70:], y[70:], False))
    else:
        _run(dict(mode), (x, y))


def test_include_exclude_in_call():
    x, y = _data("random", 80, 3, 4, seed=5)
    out = _run({"exclude": ("NMI",)}, (x, y), {"include": ("r_precision", "AMI", "NMI"), "exclude": ("AMI",)})
    assert set(out) == {"r_precision"}


def test_all_metrics_present():
    x, y = _data("clustered", 90, 4, 3, seed=6)
    out = _run({}, (x, y))
    assert set(out) == set(ALL)


def test_multilabel_with_comparison_fn():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(100, 5)).astype(np.float32)
    y = rng.integers(0, 4, size=(100, 2)).astype(np.int64)

    def same_first(a, b):  # works on numpy arrays and torch tensors alike
        return a[..., 0] == b[..., 0]

    kw = {
        "include": (
            "precision_at_1",
            "r_precision",
            "mean_average_precision_at_r",
            "mean_average_precision",
            "mean_reciprocal_rank",
        ),
        "label_comparison_fn": same_first,
    }
    _run(kw, (x, y))
    _run(kw, (x[:40], y[:40], x[40:], y[40:], False))


def test_custom_metric_subclass():
    x, y = _data("clustered", 90, 4, 5, seed=9)

    class Ours(AccuracyCalculator):
        def calculate_precision_at_2(self, knn_labels, query_labels, **kwargs):
            from mantissa_embed.evaluation import accuracy_calculator as ac

            return ac.precision_at_k(
                knn_labels,
                query_labels[:, None],
                2,
                self.avg_of_avgs,
                self.return_per_class,
                self.label_comparison_fn,
            )

        def requires_knn(self):
            return super().requires_knn() + ["precision_at_2"]

    class Theirs(pml_ac.AccuracyCalculator):
        def calculate_precision_at_2(self, knn_labels, query_labels, **kwargs):
            return pml_ac.precision_at_k(
                knn_labels,
                query_labels[:, None],
                2,
                self.avg_of_avgs,
                self.return_per_class,
                self.label_comparison_fn,
            )

        def requires_knn(self):
            return super().requires_knn() + ["precision_at_2"]

    ours = Ours(include=("precision_at_2",)).get_accuracy(x, y)
    theirs = Theirs(
        include=("precision_at_2",),
        device=torch.device("cpu"),
        knn_func=CustomKNN(LpDistance(normalize_embeddings=False)),
    ).get_accuracy(torch.from_numpy(x), torch.from_numpy(y))
    _compare(ours, theirs)


def test_k_all_is_pml_none():
    x, y = _data("random", 70, 4, 5, seed=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = _ours(k="all").get_accuracy(x, y)
        theirs = _pml(k=None).get_accuracy(torch.from_numpy(x), torch.from_numpy(y))
    _compare(ours, theirs)


def test_kmeans_metrics_match_pml_given_the_same_kmeans():
    from mantissa_embed.evaluation import SklearnKMeans

    x, y = _data("clustered", 100, 4, 5, seed=11)
    km = SklearnKMeans()
    ours = AccuracyCalculator(include=("NMI", "AMI"), kmeans_func=km).get_accuracy(x, y)
    theirs = pml_ac.AccuracyCalculator(
        include=("NMI", "AMI"),
        device=torch.device("cpu"),
        knn_func=CustomKNN(LpDistance(normalize_embeddings=False)),
        kmeans_func=lambda t, c: torch.as_tensor(km(t.numpy(), c)),
    ).get_accuracy(torch.from_numpy(x), torch.from_numpy(y))
    _compare(ours, theirs)


@pytest.mark.parametrize("mode", [{"avg_of_avgs": True}, {"return_per_class": True}])
def test_per_class_with_lone_queries(mode):
    x, y = _data("clustered", 120, 4, 5, seed=12)
    yq = y[:50].copy()
    yq[:3] = 11  # not in the reference: lone
    _run({"k": "max_bin_count", "exclude": ("NMI", "AMI"), **mode}, (x[:50], yq, x[50:], y[50:], False))
