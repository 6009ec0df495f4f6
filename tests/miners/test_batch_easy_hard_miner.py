"""BatchEasyHardMiner: every strategy pair returns what its definition says (float64 brute
force, near-ties tolerated); allowed ranges; invalid combinations raise."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import labelled_batch as _batch, mat64 as _mat64
from mantissa_embed.distances import CosineSimilarity
from mantissa_embed.miners import BatchEasyHardMiner

TOL = 1e-5
STRATS = ["easy", "hard", "semihard", "all"]
VALID = [
    (p, q) for p in STRATS for q in STRATS if not (p == q == "semihard") and {p, q} != {"all", "semihard"}
]


@settings(max_examples=80, deadline=None)
@given(
    strat=st.sampled_from(VALID),
    rng_on=st.sampled_from([None, "pos", "neg"]),
    seed=st.integers(0, 2**31),
    n=st.integers(0, 12),
    m=st.one_of(st.none(), st.integers(0, 10)),
    d=st.integers(1, 5),
    k=st.integers(1, 4),
    cosine=st.booleans(),
)
def test_definition(strat, rng_on, seed, n, m, d, k, cosine):
    ps, ns = strat
    x, y, r, ry = _batch(seed, n, m, d, k)
    same = r is None
    ry_ = y if same else ry
    lo, hi = (-0.4, 0.6) if cosine else (0.3, 1.3)
    pr = (lo, hi) if rng_on == "pos" else None
    nr = (lo, hi) if rng_on == "neg" else None
    miner = BatchEasyHardMiner(ps, ns, pr, nr, distance=CosineSimilarity() if cosine else None)
    a1, p, a2, nn = miner(x, y, r, ry)
    assert np.all(ry_[p] == y[a1]) and np.all(ry_[nn] != y[a2])
    if same:
        assert np.all(a1 != p)
    mat = _mat64(x, r, cosine)
    N, M = len(y), len(ry_)

    def cands(i, is_pos, rge):
        js = [j for j in range(M) if (ry_[j] == y[i]) == is_pos and not (is_pos and same and i == j)]
        if rge is not None:
            js = [j for j in js if rge[0] - TOL <= mat[i, j] <= rge[1] + TOL]
        return js

    def hard(i, j, is_pos):  # larger = harder
        v = mat[i, j]
        s = 1.0 if is_pos else -1.0
        return -s * v if cosine else s * v

    def best(i, js, is_pos, strategy):
        if not js:
            return None
        h = [hard(i, j, is_pos) for j in js]
        return max(h) if strategy in ("hard", "semihard") else min(h)

    if ps == "all":
        exp = {(i, j) for i in range(N) for j in cands(i, True, None)}
        assert set(zip(a1.tolist(), p.tolist())) == exp and len(a1) == len(exp)
    if ns == "all":
        exp = {(i, j) for i in range(N) for j in cands(i, False, None)}
        assert set(zip(a2.tolist(), nn.tolist())) == exp and len(a2) == len(exp)
    if "all" not in strat:
        assert np.array_equal(a1, a2) and list(a1) == sorted(set(a1.tolist()))
    # each chosen element is a candidate and no candidate beats it (within TOL)
    for anchors, others, is_pos, strategy, rge in ((a1, p, True, ps, pr), (a2, nn, False, ns, nr)):
        if strategy == "all":
            continue
        for i, j in zip(anchors.tolist(), others.tolist()):
            js = cands(i, is_pos, rge)
            assert j in js
            h = hard(i, j, is_pos)
            if strategy == "semihard":
                # semihard: among the candidates on the easy side of the other side's choice
                # (positive closer than the chosen negative, negative farther than the chosen
                # positive), the hardest
                oj = (nn if is_pos else p)[list(anchors).index(i)]
                dv = (lambda v: -v) if cosine else (lambda v: v)  # as a distance
                od = dv(mat[i, oj])
                js = [q for q in js if (dv(mat[i, q]) < od + TOL if is_pos else dv(mat[i, q]) > od - TOL)]
                b = max(hard(i, q, is_pos) for q in js)
                assert abs(h - b) < TOL or any(abs(dv(mat[i, q]) - od) < TOL for q in js)
                continue
            b = best(i, js, is_pos, strategy)
            assert abs(h - b) < TOL
    # anchors with candidates on both sides are present (unless "semihard" emptied them)
    if "all" not in strat and "semihard" not in strat:
        for i in range(N):
            has = bool(cands(i, True, pr)) and bool(cands(i, False, nr))
            if has and all(abs(mat[i, j] - lo) > TOL and abs(mat[i, j] - hi) > TOL for j in range(M)):
                assert i in set(a1.tolist())


def test_invalid_combinations():
    with pytest.raises(ValueError, match="pos_strategy"):
        BatchEasyHardMiner(pos_strategy="medium")
    with pytest.raises(ValueError, match="neg_strategy"):
        BatchEasyHardMiner(neg_strategy="medium")
    with pytest.raises(ValueError, match="semihard"):
        BatchEasyHardMiner("semihard", "semihard")
    with pytest.raises(ValueError, match="semihard"):
        BatchEasyHardMiner("all", "semihard")
    with pytest.raises(TypeError, match="allowed_pos_range"):
        BatchEasyHardMiner(allowed_pos_range=0.5)
    with pytest.raises(ValueError, match="allowed_neg_range"):
        BatchEasyHardMiner(allowed_neg_range=(1.0, 0.0))


def test_defaults_match_pml():
    m = BatchEasyHardMiner()
    assert (m.pos_strategy, m.neg_strategy, m.allowed_pos_range, m.allowed_neg_range) == (
        "easy",
        "semihard",
        None,
        None,
    )
