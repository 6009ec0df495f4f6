"""query_gallery_metrics: equal to AccuracyCalculator on the same embeddings, CMC@K and OML's
precision@K against a float64 brute force, masks and bad input."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from mantissa_embed.evaluation import AccuracyCalculator, query_gallery_metrics

PML = ("precision_at_1", "r_precision", "mean_average_precision_at_r")


def _data(n, d, c, seed, integer=False):
    """Clustered embeddings; ``integer``: small integer coordinates (exact ties, duplicate rows)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, size=n)
    if integer:
        x = rng.integers(-2, 3, size=(n, d))
    else:
        x = rng.normal(size=(c, d))[y] * 2 + rng.normal(size=(n, d))
    return x.astype(np.float32), y


def _roles(n, seed, kinds):
    """Random is_query / is_gallery from per-item roles drawn among ``kinds`` ("q", "g", "b", "-")."""
    role = np.random.default_rng(seed + 1).choice(list(kinds), size=n)
    return np.isin(role, ["q", "b"]), np.isin(role, ["g", "b"])


def _accuracy(*args, **kwargs):
    calc = AccuracyCalculator(include=PML, k="max_bin_count")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return calc.get_accuracy(*args, **kwargs)


def _brute(x, y, is_q, is_g, ks):
    """Per query from the definitions: float64 distance matrix, stable argsort over the gallery in
    item order, the query's own row left out; lone queries skipped."""
    x64 = x.astype(np.float64)
    gal = np.flatnonzero(is_g)
    per = {}
    for i in np.flatnonzero(is_q):
        cand = gal[gal != i]
        d = np.sqrt(((x64[cand] - x64[i]) ** 2).sum(axis=1))
        rel = (y[cand[np.argsort(d, kind="stable")]] == y[i]).astype(np.float64)
        R = int(rel.sum())
        if R == 0:
            continue
        row = {}
        for K in ks:
            row[f"cmc_at_{K}"] = float(rel[:K].any())
            row[f"precision_at_{K}"] = rel[:K].sum() / min(K, R)
        row["precision_at_1"] = rel[0]
        row["r_precision"] = rel[:R].sum() / R
        prec = np.cumsum(rel) / np.arange(1, len(rel) + 1)
        row["mean_average_precision_at_r"] = (prec * rel)[:R].sum() / R
        for m, v in row.items():
            per.setdefault(m, []).append(v)
    return {m: float(np.mean(v)) for m, v in per.items()}


def _near_tie(x, is_q, is_g):
    """Two gallery items at distances from a query closer than the float32 k-NN resolves."""
    x64 = x.astype(np.float64)
    for i in np.flatnonzero(is_q):
        cand = np.flatnonzero(is_g & (np.arange(len(x)) != i))
        s = np.sort(np.sqrt(((x64[cand] - x64[i]) ** 2).sum(axis=1)))
        if np.any(np.diff(s) < 1e-4 * (1.0 + s[1:])):
            return True
    return False


# -- equal to AccuracyCalculator -------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 50),
    d=st.integers(1, 6),
    c=st.integers(1, 8),
    seed=st.integers(0, 2**31 - 1),
    integer=st.booleans(),
    backend=st.sampled_from(["mantissa", "numpy"]),
)
def test_all_items_query_and_gallery_equal_accuracy_calculator(n, d, c, seed, integer, backend):
    x, y = _data(n, d, c, seed, integer)
    want = _accuracy(x, y)
    if np.isnan(want["precision_at_1"]):
        with pytest.raises(ValueError, match="lone"):
            query_gallery_metrics(x, y, backend=backend)
        return
    got = query_gallery_metrics(x, y, metrics=(*PML, "cmc_at_1"), backend=backend)
    for m in PML:
        assert got[m] == want[m], m
    assert got["cmc_at_1"] == got["precision_at_1"]
    # the explicit all-True masks (bool and 0/1) are the default
    ones = np.ones(n, dtype=np.int64)
    assert (
        query_gallery_metrics(x, y, ones, ones.astype(bool), metrics=(*PML, "cmc_at_1"), backend=backend)
        == got
    )


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 60),
    d=st.integers(1, 6),
    c=st.integers(1, 6),
    seed=st.integers(0, 2**31 - 1),
    integer=st.booleans(),
)
def test_disjoint_query_gallery_equal_accuracy_calculator(n, d, c, seed, integer):
    x, y = _data(n, d, c, seed, integer)
    is_q, is_g = _roles(n, seed, "qg-")
    assume(is_q.any() and is_g.any())
    want = _accuracy(x[is_q], y[is_q], x[is_g], y[is_g])
    if np.isnan(want["precision_at_1"]):
        with pytest.raises(ValueError, match="lone"):
            query_gallery_metrics(x, y, is_q, is_g)
        return
    got = query_gallery_metrics(x, y, is_q, is_g, metrics=(*PML, "cmc_at_1"))
    for m in PML:
        assert got[m] == want[m], m
    assert got["cmc_at_1"] == got["precision_at_1"]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 60),
    d=st.integers(1, 6),
    c=st.integers(1, 6),
    seed=st.integers(0, 2**31 - 1),
    integer=st.booleans(),
)
def test_mixed_roles_are_the_weighted_mean_of_two_accuracy_calculator_calls(n, d, c, seed, integer):
    """Queries inside the gallery: AccuracyCalculator's ref_includes_query layout (those queries
    first, then the gallery-only items); queries outside it: the gallery in item order."""
    x, y = _data(n, d, c, seed, integer)
    is_q, is_g = _roles(n, seed, "qgb-")
    assume(is_q.any() and is_g.any())
    both, only_q, only_g = is_q & is_g, is_q & ~is_g, is_g & ~is_q
    parts = []
    if both.any():
        ref = np.concatenate([np.flatnonzero(both), np.flatnonzero(only_g)])
        kept = sum(np.sum(y[is_g] == v) >= 2 for v in y[both])
        parts.append((_accuracy(x[both], y[both], x[ref], y[ref], True), kept))
    if only_q.any():
        kept = sum(np.sum(y[is_g] == v) >= 1 for v in y[only_q])
        parts.append((_accuracy(x[only_q], y[only_q], x[is_g], y[is_g]), kept))
    parts = [(acc, k) for acc, k in parts if k > 0]
    if not parts:
        with pytest.raises(ValueError, match="lone"):
            query_gallery_metrics(x, y, is_q, is_g)
        return
    got = query_gallery_metrics(x, y, is_q, is_g, metrics=(*PML, "cmc_at_1"))
    total = sum(k for _, k in parts)
    for m in PML:
        want = sum(acc[m] * k for acc, k in parts) / total
        assert got[m] == pytest.approx(want, abs=1e-12, rel=0), m
    assert got["cmc_at_1"] == got["precision_at_1"]


# -- against a float64 brute force -----------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(2, 50),
    d=st.integers(1, 6),
    c=st.integers(1, 6),
    seed=st.integers(0, 2**31 - 1),
    kinds=st.sampled_from(["b", "qg", "qgb-", "bg", "qb"]),
    ks=st.lists(st.integers(1, 60), min_size=1, max_size=4, unique=True),
    backend=st.sampled_from(["mantissa", "numpy"]),
)
def test_matches_brute_force(n, d, c, seed, kinds, ks, backend):
    x, y = _data(n, d, c, seed)
    is_q, is_g = _roles(n, seed, kinds)
    assume(is_q.any() and is_g.any())
    assume(not _near_tie(x, is_q, is_g))
    want = _brute(x, y, is_q, is_g, ks)
    names = list(dict.fromkeys([f"{f}_at_{K}" for K in ks for f in ("cmc", "precision")] + list(PML)))
    if not want:
        with pytest.raises(ValueError, match="lone"):
            query_gallery_metrics(x, y, is_q, is_g, metrics=names, backend=backend)
        return
    got = query_gallery_metrics(x, y, is_q, is_g, metrics=names, backend=backend)
    assert list(got) == names
    for m in names:
        assert 0.0 <= got[m] <= 1.0
        assert got[m] == pytest.approx(want[m], abs=1e-12, rel=0), m
    if 1 in ks:
        assert got["cmc_at_1"] == got["precision_at_1"]
    # the default metric set, through the same definitions
    default = query_gallery_metrics(x, y, is_q, is_g, backend=backend)
    assert list(default) == ["cmc_at_1", "cmc_at_5", "precision_at_5", "mean_average_precision_at_r"]
    full = _brute(x, y, is_q, is_g, (1, 5))
    for m, v in default.items():
        assert v == pytest.approx(full[m], abs=1e-12, rel=0), m


def test_hand_computed_values():
    # query 0 (label 0) on a line; gallery 1..6 with labels 0 1 0 1 1 1: relevant at ranks 1 and 3
    x = np.arange(7, dtype=np.float32)[:, None]
    y = np.array([0, 0, 1, 0, 1, 1, 1])
    is_q = np.arange(7) == 0
    got = query_gallery_metrics(
        x,
        y,
        is_q,
        ~is_q,
        metrics=(
            "cmc_at_1",
            "precision_at_1",
            "precision_at_2",
            "precision_at_5",
            "precision_at_10",
            "cmc_at_10",
            "r_precision",
            "mean_average_precision_at_r",
        ),
    )
    assert got == {
        "cmc_at_1": 1.0,
        "precision_at_1": 1.0,
        "precision_at_2": 0.5,
        "precision_at_5": 1.0,  # 2 hits / min(5, 2 relevant): OML's definition
        "precision_at_10": 1.0,
        "cmc_at_10": 1.0,  # K beyond the gallery: all of it
        "r_precision": 0.5,
        "mean_average_precision_at_r": 0.5,
    }


def test_self_excluded_lone_dropped_and_neither_ignored():
    x = np.array([[0.0], [0.1], [5.0], [5.1], [9.0], [100.0], [0.05]], dtype=np.float32)
    y = np.array([0, 0, 1, 2, 3, 0, 1])
    is_q = np.array([1, 1, 1, 1, 1, 0, 0])
    is_g = np.array([1, 1, 1, 1, 0, 0, 0])
    # query 0 -> 1 (hit), 1 -> 0 (hit); 2 and 3 have no other same-label gallery item, 4 is not a
    # gallery item and its label is absent: all three lone; item 5 (query of nothing) is ignored
    got = query_gallery_metrics(x, y, is_q, is_g, metrics=("cmc_at_1", "precision_at_3"))
    assert got == {"cmc_at_1": 1.0, "precision_at_3": 1.0}
    # item 6 flagged neither: not in any gallery, even though it is nearest to queries 0 and 1
    assert query_gallery_metrics(x, y, is_q, is_g) == query_gallery_metrics(x[:6], y[:6], is_q[:6], is_g[:6])
    # a duplicate of the query is still its neighbour (only its own row is left out)
    xd = np.array([[0.0], [0.0], [3.0]], dtype=np.float32)
    assert query_gallery_metrics(xd, np.array([0, 1, 0]), metrics=("cmc_at_1",))["cmc_at_1"] == 0.5


def test_duplicate_metric_names_once_in_order():
    x, y = _data(20, 3, 3, 0)
    got = query_gallery_metrics(x, y, metrics=["precision_at_5", "cmc_at_2", "precision_at_5"])
    assert list(got) == ["precision_at_5", "cmc_at_2"]
    assert query_gallery_metrics(x, y, metrics="cmc_at_2") == {"cmc_at_2": got["cmc_at_2"]}


def test_does_not_import_sklearn():
    code = (
        "import sys; import mantissa_embed.evaluation.query_gallery; "
        "assert not any(m == 'sklearn' or m.startswith('sklearn.') for m in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- bad input -------------------------------------------------------------------------------

X, Y = _data(10, 3, 2, 1)
Q = np.arange(10) < 5


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"labels": Y[:9]}, "labels"),
        ({"is_query": Q[:9]}, "is_query"),
        ({"is_gallery": np.ones(11, bool)}, "is_gallery"),
        ({"is_query": np.ones((10, 1), bool)}, "is_query"),
        ({"is_query": np.where(Q, 2, 0)}, "is_query"),
        ({"is_gallery": np.full(10, 0.5)}, "is_gallery"),
        ({"is_gallery": np.ones(10)}, "is_gallery"),  # floats, even 1.0
        ({"is_query": ["yes"] * 10}, "is_query"),
        ({"is_query": np.full(10, -1)}, "is_query"),
        ({"is_query": np.zeros(10, bool)}, "query"),
        ({"is_gallery": [0] * 10}, "gallery"),
        ({"labels": np.arange(10)}, "lone"),  # every label once: nothing to retrieve
        ({"is_query": Q, "is_gallery": ~Q, "labels": np.where(Q, 0, 1)}, "lone"),
        ({"metrics": ("cmc_at_5", "map_at_5")}, "cmc_at_K"),
        ({"metrics": ("cmc_at_0",)}, ">= 1"),
        ({"metrics": ("precision_at_0",)}, ">= 1"),
        ({"metrics": ("precision_at_05",)}, "precision_at_K"),
        ({"metrics": ("cmc_at_x",)}, "cmc_at_K"),
        ({"metrics": ("precision_at_-1",)}, "precision_at_K"),
        ({"metrics": ()}, "at least one"),
        ({"embeddings": np.where(np.eye(10, 3) > 0, np.nan, X)}, "NaN"),
        ({"embeddings": X[:, :0]}, "embeddings"),
        ({"backend": "torch"}, "backend"),
    ],
)
def test_bad_input_value_error(kwargs, match):
    args = {"embeddings": X, "labels": Y, "is_query": None, "is_gallery": None, **kwargs}
    with pytest.raises(ValueError, match=match):
        query_gallery_metrics(**args)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"labels": Y.astype(float)},
        {"embeddings": np.array([["a"] * 3] * 10)},
        {"metrics": (5,)},
    ],
)
def test_bad_input_type_error(kwargs):
    args = {"embeddings": X, "labels": Y, **kwargs}
    with pytest.raises(TypeError):
        query_gallery_metrics(**args)
