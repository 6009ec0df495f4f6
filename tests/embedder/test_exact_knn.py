"""``_exact_knn.exact_knn`` (the search of ``Embedder.retrieve``) equals a float64 brute force,
ties aside, where the float32 ``|a|^2 + |b|^2 - 2ab`` ranking of ``evaluation.knn`` does not:
near-duplicate references with large norms."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed.embedder import _exact_knn
from mantissa_embed.embedder._exact_knn import exact_knn
from mantissa_embed.evaluation import knn

BACKENDS = ["mantissa", "numpy"]


def brute64(Q, G, k):
    """Indices and float32 distances of a float64 brute force, ordered by (distance, index)."""
    d2 = ((G[None].astype(np.float64) - Q[:, None].astype(np.float64)) ** 2).sum(-1)
    order = np.lexsort((np.broadcast_to(np.arange(G.shape[0]), d2.shape), d2), axis=-1)[:, :k]
    return order, np.sqrt(np.take_along_axis(d2, order, axis=1)).astype(np.float32)


def near_duplicates(rng, n_groups, per_group, D, scale=1000.0, far=100):
    """Groups of references within 1e-4..1e-2 of a centre of norm ~scale * sqrt(D), far rows,
    and one query near each centre: the float32 expansion cannot order a group."""
    centres = rng.standard_normal((n_groups, D)) * scale
    G = [c + rng.standard_normal((per_group, D)) * rng.uniform(1e-4, 1e-2, (per_group, 1)) for c in centres]
    G.append(rng.standard_normal((far, D)) * scale)
    G = np.concatenate(G)[rng.permutation(n_groups * per_group + far)]
    Q = centres + rng.standard_normal(centres.shape) * 1e-3
    return Q.astype(np.float32), G.astype(np.float32)


@pytest.fixture
def calls(monkeypatch):
    """How many candidate searches and full scans exact_knn ran."""
    seen = {"knn": 0, "scan": 0}
    knn0, scan0 = _exact_knn.knn, _exact_knn._scan

    def counted_knn(*a, **kw):
        seen["knn"] += 1
        return knn0(*a, **kw)

    def counted_scan(*a, **kw):
        seen["scan"] += 1
        return scan0(*a, **kw)

    monkeypatch.setattr(_exact_knn, "knn", counted_knn)
    monkeypatch.setattr(_exact_knn, "_scan", counted_scan)
    return seen


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", [1, 5, 39])
def test_near_duplicates_match_float64_brute_force(backend, k):
    Q, G = near_duplicates(np.random.default_rng(k), 5, 40, 32)
    want_i, want_d = brute64(Q, G, k)
    assert not np.array_equal(knn(Q, G, k, backend=backend)[0], want_i)  # the fast ranking mis-ranks
    got_i, got_d = exact_knn(Q, G, k, backend=backend)
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_array_equal(got_d, want_d)
    assert got_i.dtype == np.int64 and got_d.dtype == np.float32


@pytest.mark.parametrize("backend", BACKENDS)
def test_hundreds_of_near_ties_fall_back_to_the_exact_scan(backend, calls):
    Q, G = near_duplicates(np.random.default_rng(7), 2, 300, 16)  # 300 > 16k + 128 candidates
    got = exact_knn(Q, G, 3, backend=backend)
    assert calls["scan"] == 1
    want = brute64(Q, G, 3)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_well_separated_data_needs_one_search(backend, calls):
    rng = np.random.default_rng(3)
    G = rng.standard_normal((500, 24)).astype(np.float32)
    G /= np.linalg.norm(G, axis=1, keepdims=True)
    Q = G[:40] + np.float32(0.05) * rng.standard_normal((40, 24)).astype(np.float32)
    got = exact_knn(Q, G, 5, backend=backend)
    assert calls == {"knn": 1, "scan": 0}
    np.testing.assert_array_equal(got[0], brute64(Q, G, 5)[0])


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 7),
    m=st.integers(1, 60),
    D=st.integers(1, 9),
    k=st.integers(1, 60),
    seed=st.integers(0, 2**31 - 1),
    dup=st.booleans(),
    backend=st.sampled_from(BACKENDS),
)
def test_random_shapes_match_brute_force(n, m, D, k, seed, dup, backend):
    rng = np.random.default_rng(seed)
    k = min(k, m)
    G = (rng.standard_normal((m, D)) * 300).astype(np.float32)
    if dup:  # near-duplicates of the first row, at distinct distances
        G[1:] = G[0] + (rng.standard_normal((m - 1, D)) * rng.uniform(1e-3, 1e-1, (m - 1, 1))).astype(
            np.float32
        )
    Q = (G[rng.integers(0, m, n)] + rng.standard_normal((n, D)) * 1e-2).astype(np.float32)
    want_i, want_d = brute64(Q, G, k)
    got_i, got_d = exact_knn(Q, G, k, backend=backend)
    d2 = ((G[None].astype(np.float64) - Q[:, None].astype(np.float64)) ** 2).sum(-1)
    # ties aside: equal float64 distances may come in either order only if they are equal
    np.testing.assert_array_equal(np.take_along_axis(d2, got_i, 1), np.take_along_axis(d2, want_i, 1))
    np.testing.assert_array_equal(got_d, want_d)


@pytest.mark.parametrize(
    "kwargs, exc, pat",
    [
        (dict(k=0), ValueError, r"k must be >= 1"),
        (dict(k=1.5), TypeError, r"k must be an int"),
        (dict(k=11), ValueError, r"k must be <= 10"),
        (dict(query=np.full((2, 3), np.nan, np.float32)), ValueError, r"query contains NaN or Inf"),
        (dict(reference=np.zeros((10, 4), np.float32)), ValueError, r"same number of columns"),
        (dict(query=np.zeros(3, np.float32)), ValueError, r"query must be 2-D"),
    ],
)
def test_bad_input(kwargs, exc, pat):
    args = dict(query=np.zeros((2, 3), np.float32), reference=np.ones((10, 3), np.float32), k=2)
    args.update(kwargs)
    with pytest.raises(exc, match=pat):
        exact_knn(**args)
