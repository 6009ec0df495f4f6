"""mantissa_embed.testing's hypothesis strategies draw what their docstrings promise."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed.testing import batches, embeddings, labels, pair_tuples, triplet_tuples


@settings(max_examples=40, deadline=None)
@given(x=embeddings(st.integers(0, 7), st.integers(1, 5), min_norm=1e-3, max_norm=1e3))
def test_embeddings_are_finite_float32_with_bounded_norms(x):
    assert x.dtype == np.float32 and x.ndim == 2 and x.shape[0] <= 7 and 1 <= x.shape[1] <= 5
    assert np.isfinite(x).all()
    norms = np.linalg.norm(x.astype(np.float64), axis=1)
    assert np.all(norms <= 1e3 * 1.05)
    assert np.all(norms >= 1e-3 * 0.5 * 0.95)  # the row factor is in [0.5, 1]


@given(x=embeddings(5, 3, dtype=np.float64, near_duplicates=False))
def test_fixed_shape_and_dtype(x):
    assert x.shape == (5, 3) and x.dtype == np.float64


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n=st.integers(0, 12), c=st.integers(1, 5), m=st.integers(0, 3))
def test_labels_cover_every_class_min_per_class_times(data, n, c, m):
    y = data.draw(labels(n, c, min_per_class=m))
    assert y.dtype == np.int64 and y.shape == (n,)
    assert n == 0 or (y.min() >= 0 and y.max() < c)
    if m and n:
        k = max(1, min(c, n // m))
        counts = np.bincount(y, minlength=k)[:k]
        assert np.all(counts >= min(m, n))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), ref=st.booleans())
def test_pair_and_triplet_tuples_are_valid(data, ref):
    y = data.draw(labels(6, 3))
    ry = data.draw(labels(5, 3)) if ref else None
    r = y if ry is None else ry
    a1, p, a2, n = data.draw(pair_tuples(y, ry))
    assert all(t.dtype == np.int64 for t in (a1, p, a2, n))
    assert np.all(y[a1] == r[p]) and np.all(y[a2] != r[n])
    if not ref:
        assert not np.any(a1 == p)
    a, p, n = data.draw(triplet_tuples(y, ry))
    assert len(a) == len(p) == len(n) and np.all(y[a] == r[p]) and np.all(y[a] != r[n])
    if not ref:
        assert not np.any(a == p)


@settings(max_examples=30, deadline=None)
@given(b=batches(mined=st.sampled_from([None, "pairs", "triplets"])))
def test_batches_bundle_consistent_inputs(b):
    kw = b.kwargs()
    assert kw["embeddings"].shape[0] == len(kw["labels"])
    if "ref_emb" in kw:
        assert kw["ref_emb"].shape == (len(kw["ref_labels"]), kw["embeddings"].shape[1])
    assert "indices_tuple" not in kw or len(kw["indices_tuple"]) in (3, 4)


def test_bad_arguments():
    with pytest.raises(ValueError, match="min_norm"):
        embeddings(2, 2, min_norm=0).example()
    with pytest.raises(TypeError, match="n must be an int"):
        embeddings(2.5, 2).example()
    with pytest.raises(ValueError, match="mined must be"):
        batches(mined="quads").example()
