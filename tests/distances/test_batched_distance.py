"""BatchedDistance: the chunks reassemble the full matrix, (start, end) follow PML's rule
(end = start + batch_size, possibly past N), attribute delegation, errors."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed.distances import BatchedDistance, CosineSimilarity, LpDistance, SNRDistance


def _emb(seed, n, d):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 40),
    m=st.one_of(st.none(), st.integers(1, 20)),
    d=st.integers(2, 6),
    bs=st.integers(1, 50),
    which=st.sampled_from(["lp", "lp1", "cos", "snr"]),
)
def test_chunks_reassemble_full_matrix(seed, n, m, d, bs, which):
    dist = {"lp": LpDistance(), "lp1": LpDistance(p=1), "cos": CosineSimilarity(), "snr": SNRDistance()}[
        which
    ]
    q = _emb(seed, n, d)
    r = None if m is None else _emb(seed + 1, m, d)
    full = dist(q, r)
    calls = []
    out = np.full(full.shape, np.nan, dtype=np.float32)

    def iter_fn(mat, s, e):
        calls.append((s, e, mat.shape))
        out[s:e] = mat

    assert BatchedDistance(dist, iter_fn, batch_size=bs)(q, r) is None
    starts = list(range(0, n, bs))
    assert [c[:2] for c in calls] == [(s, s + bs) for s in starts]
    assert all(shape == (min(e, n) - s, full.shape[1]) for s, e, shape in calls)
    # each chunk is computed on its own rows: same values up to float32 GEMM blocking
    np.testing.assert_allclose(out, full, rtol=1e-5, atol=1e-6)


def test_delegates_attributes():
    b = BatchedDistance(CosineSimilarity(), lambda *a: None)
    assert b.is_inverted is True and b.power == 1 and b.batch_size == 32 and b.iter_fn is not None
    np.testing.assert_array_equal(b.margin(np.float32(1), np.float32(3)), 2)
    with pytest.raises(AttributeError):
        b.no_such_attribute


def test_errors():
    with pytest.raises(TypeError, match="distance"):
        BatchedDistance("lp")
    with pytest.raises(TypeError, match="iter_fn"):
        BatchedDistance(LpDistance(), iter_fn=3)
    with pytest.raises(ValueError, match="batch_size"):
        BatchedDistance(LpDistance(), lambda *a: None, batch_size=0)
    with pytest.raises(TypeError, match="batch_size"):
        BatchedDistance(LpDistance(), lambda *a: None, batch_size=2.5)
    with pytest.raises(TypeError, match="iter_fn"):
        BatchedDistance(LpDistance())(_emb(0, 3, 2))
    with pytest.raises(ValueError, match="ref_emb"):
        BatchedDistance(LpDistance(), lambda *a: None)(_emb(0, 3, 2), _emb(0, 3, 4))
