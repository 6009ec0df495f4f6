"""mantissa_embed.utils (PML's loss_and_miner_utils) against brute-force enumerations."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import utils

labels = st.lists(st.integers(0, 3), min_size=0, max_size=12).map(lambda v: np.array(v, dtype=np.int64))


@settings(max_examples=60, deadline=None)
@given(y=labels, ry=st.one_of(st.none(), labels))
def test_all_pairs_and_triplets(y, ry):
    same = ry is None
    r = y if same else ry
    a1, p, a2, n = utils.get_all_pairs_indices(y, ry)
    pos = [(i, j) for i in range(len(y)) for j in range(len(r)) if y[i] == r[j] and not (same and i == j)]
    neg = [(i, j) for i in range(len(y)) for j in range(len(r)) if y[i] != r[j]]
    assert list(zip(a1.tolist(), p.tolist())) == pos
    assert list(zip(a2.tolist(), n.tolist())) == neg
    a, p, n = utils.get_all_triplets_indices(y, ry)
    trip = [(i, j, k) for i, j in pos for k in range(len(r)) if y[i] != r[k]]
    assert list(zip(a.tolist(), p.tolist(), n.tolist())) == trip
    assert all(t.dtype == np.int64 for t in (a, p, n))
    assert utils._count_triplets(y, r, same) == len(trip)
    assert utils._count_pairs(y, r, same) == (len(pos), len(neg))


def test_identity_rule_for_self_pairs():
    y = np.array([0, 0, 1])
    assert len(utils.get_all_pairs_indices(y, y)[0]) == 2
    assert len(utils.get_all_pairs_indices(y, y.copy())[0]) == 5


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), k1=st.integers(0, 10), k2=st.integers(0, 10))
def test_convert_to_triplets_from_pairs(seed, k1, k2):
    rng = np.random.default_rng(seed)
    a1, p, a2, n = (rng.integers(0, 5, k) for k in (k1, k1, k2, k2))
    a, pp, nn = utils.convert_to_triplets((a1, p, a2, n), None)
    want = [(a1[i], p[i], n[j]) for i in range(k1) for j in range(k2) if a1[i] == a2[j]]
    assert list(zip(a.tolist(), pp.tolist(), nn.tolist())) == [tuple(map(int, w)) for w in want]


def test_convert_to_pairs():
    t = (np.array([0]), np.array([1]), np.array([2]))
    a1, p, a2, n = utils.convert_to_pairs(t, None)
    assert a1 is t[0] and a2 is t[0] and p is t[1] and n is t[2]
    assert utils.pos_pairs_from_tuple((1, 2, 3, 4)) == (1, 2)
    assert utils.neg_pairs_from_tuple((1, 2, 3, 4)) == (3, 4)


@settings(max_examples=40, deadline=None)
@given(y=labels, t=st.one_of(st.none(), st.integers(1, 4)), seed=st.integers(0, 1000), weighted=st.booleans())
def test_random_triplets_valid(y, t, seed, weighted):
    w = None
    if weighted:
        w = np.random.default_rng(seed).random((len(y), len(y)))
        w[:, ::2] = 0
    a, p, n = utils.get_random_triplet_indices(y, t_per_anchor=t, weights=w, seed=seed)
    assert np.all(y[a] == y[p]) and np.all(y[a] != y[n]) and np.all(a != p)
    if w is not None and len(a):
        assert np.all(w[a, n] > 0)
    b = utils.get_random_triplet_indices(y, t_per_anchor=t, weights=w, seed=seed)
    assert all(np.array_equal(u, v) for u, v in zip((a, p, n), b))
    if w is None and t is not None:
        eligible = [i for i in range(len(y)) if np.sum(y == y[i]) >= 2 and np.any(y != y[i])]
        assert len(a) == t * len(eligible)


def test_weights_and_helpers():
    y = np.array([0, 0, 1, 1])
    np.testing.assert_array_equal(utils.convert_to_weights(None, y), np.ones(4))
    w = utils.convert_to_weights((np.array([0, 0]), np.array([1, 1]), np.array([2, 3])), y)
    np.testing.assert_allclose(w, [1, 1, 0.5, 0.5])
    # the seed's mining-weights contract: an empty mined tuple gives all zeros ...
    empty = (np.array([], np.int64),) * 3
    np.testing.assert_array_equal(utils.convert_to_weights(empty, y), np.zeros(4))
    # ... while the losses keep PML's rule (uniform weights) for it
    np.testing.assert_array_equal(utils._miner_weights(empty, y), np.ones(4))
    np.testing.assert_array_equal(utils.repeat_to_match_size(np.array([1, 2]), 5, 2), [1, 2, 1, 2, 1])
    p, n = utils.matched_size_indices(np.array([1, 2, 3]), np.array([9]))
    np.testing.assert_array_equal(n, [9, 9, 9])
    np.testing.assert_array_equal(utils.get_anchors(([1], [2], [3], [4])), [1, 3])


def test_check_indices_tuple():
    out = utils.check_indices_tuple(([0, 1], [1, 0], [2, 2]), 3)
    assert all(a.dtype == np.int64 for a in out)
    with pytest.raises(ValueError, match="in \\[0, 3\\)"):
        utils.check_indices_tuple(([0], [3], [1]), 3)
    with pytest.raises(ValueError, match="a1 and p"):
        utils.check_indices_tuple(([0], [1, 2], [1], [2]), 3)
    with pytest.raises(ValueError, match="1-D"):
        utils.check_indices_tuple(([[0]], [1], [2]), 3)
    with pytest.raises(TypeError, match="integer"):
        utils.check_indices_tuple(([0.5], [1], [2]), 3)
    # empty float arrays (np.array([])) are accepted as empty index arrays
    assert len(utils.check_indices_tuple((np.array([]),) * 3, 3)[0]) == 0
