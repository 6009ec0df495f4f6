"""MultiSimilarityMiner: valid pairs, and exactly the pairs of the definition (float64 brute
force, ties within float32 rounding tolerated); empty cases; errors."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import labelled_batch as _batch, mat64 as _mat64
from mantissa_embed.distances import CosineSimilarity, LpDistance
from mantissa_embed.miners import MultiSimilarityMiner

TOL = 1e-5


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 14),
    m=st.one_of(st.none(), st.integers(0, 12)),
    d=st.integers(1, 5),
    k=st.integers(1, 4),
    cosine=st.booleans(),
    eps=st.sampled_from([0.0, 0.1, 0.4]),
)
def test_definition(seed, n, m, d, k, cosine, eps):
    x, y, r, ry = _batch(seed, n, m, d, k)
    same = r is None
    ry_ = y if same else ry
    miner = MultiSimilarityMiner(epsilon=eps, distance=None if cosine else LpDistance())
    a1, p, a2, nn = miner(x, y, r, ry)
    assert all(t.dtype == np.int64 for t in (a1, p, a2, nn))
    assert np.all(ry_[p] == y[a1]) and np.all(ry_[nn] != y[a2])
    if same:
        assert np.all(a1 != p)
    mat = _mat64(x, r, cosine)
    M = len(ry_)
    posm = y[:, None] == ry_[None, :]
    if same:
        np.fill_diagonal(posm, False)
    negm = y[:, None] != ry_[None, :]
    got_p, got_n = set(zip(a1.tolist(), p.tolist())), set(zip(a2.tolist(), nn.tolist()))
    assert len(got_p) == len(a1) and len(got_n) == len(a2)
    if not posm.any() or not negm.any():
        assert not got_p and not got_n
        return
    for i in range(len(y)):
        for j in range(M):
            v = mat[i, j]
            if posm[i, j]:
                if not negm[i].any():
                    assert (i, j) not in got_p
                    continue
                thr = mat[i, negm[i]].max() + eps if cosine else mat[i, negm[i]].min() - eps
                want = v < thr if cosine else v > thr
                assert abs(v - thr) < TOL or ((i, j) in got_p) == want
            elif negm[i, j]:
                if not posm[i].any():
                    assert (i, j) not in got_n
                    continue
                thr = mat[i, posm[i]].min() - eps if cosine else mat[i, posm[i]].max() + eps
                want = v > thr if cosine else v < thr
                assert abs(v - thr) < TOL or ((i, j) in got_n) == want


def test_default_distance_and_errors():
    assert isinstance(MultiSimilarityMiner().distance, CosineSimilarity)
    with pytest.raises(TypeError, match="epsilon"):
        MultiSimilarityMiner(epsilon="big")
    with pytest.raises(ValueError, match="epsilon"):
        MultiSimilarityMiner(epsilon=float("nan"))
    out = MultiSimilarityMiner()(np.ones((3, 2), np.float32), np.array([0, 1, 2]))
    assert all(len(t) == 0 for t in out)


def test_backends_agree():
    x, y, _, _ = _batch(3, 40, None, 6, 4)
    a = MultiSimilarityMiner(backend="mantissa")(x, y)
    b = MultiSimilarityMiner(backend="numpy")(x, y)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
