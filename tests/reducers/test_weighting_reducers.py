"""SumReducer, ThresholdReducer, ClassWeightedReducer and PerAnchorReducer: values and gradients
vs independent numpy computations and finite differences."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from mantissa_embed.reducers import (
    ClassWeightedReducer,
    MeanReducer,
    PerAnchorReducer,
    SumReducer,
    ThresholdReducer,
)

losses = arrays(np.float64, st.integers(0, 30), elements=st.floats(-1, 3))
KINDS = ["element", "pos_pair", "neg_pair", "triplet"]


def _fd(f, v, eps=1e-6):
    g = np.zeros_like(v)
    for k in range(len(v)):
        e = np.zeros_like(v)
        e[k] = eps
        g[k] = (f(v + e) - f(v - e)) / (2 * eps)
    return g


@settings(max_examples=40, deadline=None)
@given(v=losses, kind=st.sampled_from(KINDS))
def test_sum(v, kind):
    value, d = SumReducer()(v, None, kind)
    assert value == pytest.approx(float(np.sum(v)), abs=1e-9)
    np.testing.assert_array_equal(d, np.ones(len(v)))


@settings(max_examples=60, deadline=None)
@given(
    v=losses,
    low=st.one_of(st.none(), st.floats(-1, 2)),
    high=st.one_of(st.none(), st.floats(-0.5, 3)),
    kind=st.sampled_from(KINDS),
)
def test_threshold(v, low, high, kind):
    if low is None and high is None:
        low = 0.0
    r = ThresholdReducer(low=low, high=high)
    value, d = r(v, None, kind)
    kept = [x for x in v if (low is None or x > low) and (high is None or x < high)]
    assert value == pytest.approx(float(np.mean(kept)) if kept else 0.0, abs=1e-9)
    assert r.stats["num_past_filter"] == len(kept)
    # away from the thresholds the reduction is smooth: compare with finite differences
    margin = min([abs(x - t) for x in v for t in (low, high) if t is not None] + [1.0])
    if margin > 1e-4:
        np.testing.assert_allclose(d, _fd(lambda u: r(u, None, kind)[0], v), atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 20), k=st.integers(1, 5), kind=st.sampled_from(KINDS))
def test_class_weighted(seed, n, k, kind):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, 12)
    w = rng.uniform(0, 2, k)
    v = rng.uniform(0, 2, n)
    idx = rng.integers(0, 12, n)
    indices = (
        idx
        if kind == "element"
        else (idx,) + tuple(rng.integers(0, 12, n) for _ in range(1 + (kind == "triplet")))
    )
    r = ClassWeightedReducer(w)
    value, d = r(v, indices, kind, None, labels)
    expect = sum(v[i] * w[labels[idx[i]]] for i in range(n)) / n
    assert value == pytest.approx(expect, rel=1e-12)
    np.testing.assert_allclose(d, _fd(lambda u: r(u, indices, kind, None, labels)[0], v), atol=1e-6)


def test_class_weighted_errors():
    with pytest.raises(ValueError, match="weights"):
        ClassWeightedReducer(np.ones((2, 2)))
    with pytest.raises(TypeError, match="weights"):
        ClassWeightedReducer(["a"])
    r = ClassWeightedReducer([1.0, 2.0])
    with pytest.raises(ValueError, match="labels"):
        r(np.ones(2), np.arange(2), "element", None, None)
    with pytest.raises(ValueError, match="labels must lie"):
        r(np.ones(2), np.arange(2), "element", None, np.array([0, 5]))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 10),
    npairs=st.integers(1, 40),
    inner=st.sampled_from(["mean", "sum", "thr"]),
    kind=st.sampled_from(["pos_pair", "neg_pair"]),
)
def test_per_anchor(seed, n, npairs, inner, kind):
    rng = np.random.default_rng(seed)
    a, o = rng.integers(0, n, npairs), rng.integers(0, n, npairs)
    v = rng.uniform(0, 2, npairs)
    red = {"mean": MeanReducer(), "sum": SumReducer(), "thr": ThresholdReducer(low=0.5)}[inner]
    r = PerAnchorReducer(red)
    emb = np.zeros((n, 2))
    value, d = r(v, (a, o), kind, emb, None)
    # independent: a dict of the last loss per cell, then a per-row mean
    cells = {}
    for i in range(npairs):
        cells[(a[i], o[i])] = v[i]
    rows = []
    for i in range(n):
        vals = [x for (ai, _), x in cells.items() if ai == i]
        rows.append(np.mean(vals) if vals else 0.0)
    expect = red(np.array(rows))[0]
    assert value == pytest.approx(expect, rel=1e-12, abs=1e-12)
    if inner != "thr" or min(abs(np.array(rows) - 0.5)) > 1e-4:
        np.testing.assert_allclose(d, _fd(lambda u: r(u, (a, o), kind, emb, None)[0], v), atol=1e-6)


def test_per_anchor_element_and_errors():
    v = np.array([1.0, 2.0, 4.0])
    assert PerAnchorReducer()(v, np.arange(3), "element", np.zeros((3, 2)))[0] == pytest.approx(7 / 3)
    with pytest.raises(NotImplementedError):
        PerAnchorReducer()(v, (np.arange(3),) * 3, "triplet", np.zeros((3, 2)))
    with pytest.raises(ValueError, match="pair indices"):
        PerAnchorReducer()(v, (np.arange(3), np.array([0, 1, 5])), "pos_pair", np.zeros((3, 2)))
    with pytest.raises(TypeError, match="aggregation_func"):
        PerAnchorReducer(aggregation_func=lambda x, n: x.sum(1))
    with pytest.raises(TypeError, match="reducer"):
        PerAnchorReducer(reducer=object())


def test_threshold_errors():
    with pytest.raises(ValueError, match="low or high"):
        ThresholdReducer()
    with pytest.raises(ValueError, match="high"):
        ThresholdReducer(high=float("nan"))
    with pytest.raises(TypeError, match="low"):
        ThresholdReducer(low="x")
