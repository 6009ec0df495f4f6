"""engine.triplet_margin_mine / engine.angular_mine (src/engine_c/mining.c) against their numpy
twins (mantissa_embed._reference): same triplets in the same order, same stats, same errors."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import _reference as R, engine as E

KINDS = ["every", "all", "hard", "semihard", "easy"]


def _case(seed, n, m, k, quant):
    """mat (n, m') float32 with many exact ties when quant, labels; m None: the batch itself."""
    rng = np.random.default_rng(seed)
    same = m is None
    mm = n if same else m
    mat = rng.random((n, mm)).astype(np.float32)
    if quant:
        mat = (np.round(mat * 10) / 10).astype(np.float32)  # ties at tm == 0 and tm == margin
    lab = rng.integers(0, k, n)
    ref = lab if same else rng.integers(0, k, mm)
    return mat, lab, ref, same


def _eq(x, y):
    assert len(x) == len(y)
    for u, v in zip(x, y):
        assert u.dtype == np.int64 and v.dtype == np.int64
        np.testing.assert_array_equal(u, v)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 40),
    m=st.one_of(st.none(), st.integers(0, 40)),
    k=st.integers(1, 5),
    quant=st.booleans(),
    kind=st.sampled_from(KINDS),
    margin=st.sampled_from([0.0, 0.1, 0.2, 0.5, -0.1]),
    inverted=st.booleans(),
)
def test_triplet_margin_mine_matches_twin(seed, n, m, k, quant, kind, margin, inverted):
    mat, lab, ref, same = _case(seed, n, m, k, quant)
    got = E.triplet_margin_mine(mat, lab, ref, same, kind, margin, inverted)
    _eq(got, R.triplet_margin_mine(mat, lab, ref, same, kind, margin, inverted))
    a, p, nn = got
    # order (a, p, n) and the selection rule, checked directly
    key = (a * max(mat.shape[1], 1) + p) * max(mat.shape[1], 1) + nn
    assert np.all(np.diff(key) > 0)
    assert np.all(lab[a] == ref[p]) and np.all(lab[a] != ref[nn])
    if same:
        assert not np.any(a == p)
    ap, an = mat[a, p], mat[a, nn]
    tm = (ap - an) if inverted else (an - ap)
    m32 = np.float32(margin)
    rule = {
        "every": np.ones_like(tm, bool),
        "all": tm <= m32,
        "hard": (tm <= m32) & (tm <= 0),
        "semihard": (tm <= m32) & (tm > 0),
        "easy": tm > m32,
    }[kind]
    assert rule.all()


def test_kinds_partition_every():
    mat, lab, ref, same = _case(3, 30, None, 3, True)
    every = E.triplet_margin_mine(mat, lab, ref, same, "every", 0.2, False)
    parts = [E.triplet_margin_mine(mat, lab, ref, same, k, 0.2, False) for k in ("hard", "semihard", "easy")]
    allk = E.triplet_margin_mine(mat, lab, ref, same, "all", 0.2, False)
    key = lambda t: set(zip(*[x.tolist() for x in t]))  # noqa: E731
    assert key(parts[0]) | key(parts[1]) == key(allk)
    assert key(allk) | key(parts[2]) == key(every)
    assert sum(len(p[0]) for p in parts) == len(every[0])


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 14),
    m=st.one_of(st.none(), st.integers(0, 12)),
    d=st.integers(1, 140),
    k=st.integers(1, 4),
    dup=st.booleans(),
    angle=st.sampled_from([0.0, 20.0, 45.0, 80.0]),
)
def test_angular_mine_matches_twin(seed, n, m, d, k, dup, angle):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    if dup and n > 1:
        x[1::2] = x[0]  # duplicate embeddings: degenerate angles
    same = m is None
    r = x if same else rng.standard_normal((m, d)).astype(np.float32)
    lab = rng.integers(0, k, n)
    ref = lab if same else rng.integers(0, k, r.shape[0])
    thr = np.radians(angle)
    *got, gs = E.angular_mine(x, r, lab, ref, same, thr)
    *exp, es = R.angular_mine(x, r, lab, ref, same, thr)
    # the angles agree to the last bit of arctan (numpy may use a SIMD arctan): the sets agree
    # except on triplets whose angle is within 1e-12 of the threshold (none in practice)
    _eq(got, exp)
    assert gs[0] == es[0] and gs[1] == es[1]
    np.testing.assert_allclose(gs[2:], es[2:], rtol=1e-12, atol=1e-12)


def test_empty_and_no_triplets():
    z = np.zeros((0, 0), np.float32)
    e = np.zeros(0, np.int64)
    for mod in (E, R):
        _eq(mod.triplet_margin_mine(z, e, e, True, "all", 0.2, False), (e, e, e))
        _eq(
            mod.triplet_margin_mine(np.zeros((3, 0), np.float32), np.arange(3), e, False, "all", 0.2, False),
            (e, e, e),
        )
        one = np.ones((4, 4), np.float32)  # a single class: no negatives
        _eq(
            mod.triplet_margin_mine(one, np.zeros(4, int), np.zeros(4, int), True, "every", 0.2, False),
            (e, e, e),
        )
        *t, s = mod.angular_mine(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32), e, e, True, 0.3)
        _eq(t, (e, e, e))
        assert s[0] == 0


@pytest.mark.parametrize("mod", [E, R], ids=["engine", "numpy"])
def test_bad_input(mod):
    mat = np.zeros((3, 3), np.float32)
    lab = np.arange(3)
    with pytest.raises(ValueError, match="type_of_triplets"):
        mod.triplet_margin_mine(mat, lab, lab, True, "medium", 0.2, False)
    with pytest.raises(TypeError, match="labels"):
        mod.triplet_margin_mine(mat, lab.astype(float), lab, True, "all", 0.2, False)
    with pytest.raises(ValueError, match="ref_labels"):
        mod.triplet_margin_mine(mat, lab, lab[:2], True, "all", 0.2, False)
    with pytest.raises(ValueError, match="margin"):
        mod.triplet_margin_mine(mat, lab, lab, True, "all", float("nan"), False)
    with pytest.raises(ValueError, match="exclude_self"):
        mod.triplet_margin_mine(np.zeros((3, 4), np.float32), lab, np.arange(4), True, "all", 0.2, False)
    with pytest.raises(ValueError, match="mat"):
        mod.triplet_margin_mine(np.zeros((3, 3, 1), np.float32), lab, lab, True, "all", 0.2, False)
    x = np.zeros((3, 2), np.float32)
    with pytest.raises(ValueError, match="columns"):
        mod.angular_mine(x, np.zeros((3, 4), np.float32), lab, lab, True, 0.3)
    with pytest.raises(ValueError, match="angle"):
        mod.angular_mine(x, x, lab, lab, True, float("nan"))
    with pytest.raises(ValueError, match="labels"):
        mod.angular_mine(x, x, lab[:1], lab, True, 0.3)
