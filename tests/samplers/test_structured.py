"""FixedSetOfTriplets and HierarchicalSampler: PML's structure, seeded, batch-yielding."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed.samplers import FixedSetOfTriplets, HierarchicalSampler


@st.composite
def flat_labels(draw):
    k = draw(st.integers(2, 6))
    counts = draw(st.lists(st.integers(1, 6), min_size=k, max_size=k))
    y = np.repeat(np.arange(k) * 5 + 2, counts)
    return np.random.default_rng(draw(st.integers(0, 2**31))).permutation(y)


@settings(max_examples=50, deadline=None)
@given(y=flat_labels(), t=st.integers(1, 25), tpb=st.integers(1, 4), seed=st.integers(0, 2**31))
def test_fixed_triplets_are_valid_fixed_and_batched(y, t, tpb, seed):
    s = FixedSetOfTriplets(y, t, seed=seed, triplets_per_batch=tpb)
    T = s.fixed_set_of_triplets
    assert T.shape == (t, 3) and T.dtype == np.int64
    a, p, n = T.T
    assert (y[a] == y[p]).all() and (y[a] != y[n]).all()
    sizes = {c: int((y == c).sum()) for c in np.unique(y)}
    big = np.array([sizes[c] >= 2 for c in y[a]])
    assert (a[big] != p[big]).all()
    first = sorted(map(tuple, T.tolist()))
    for _ in range(2):
        batches = list(s)
        assert len(batches) == len(s) == -(-t // tpb)
        assert all(b.shape == (3 * tpb,) for b in batches[:-1])
        flat = np.concatenate(batches).reshape(-1, 3)
        assert sorted(map(tuple, flat.tolist())) == first  # same set, new order


def test_fixed_triplets_seeded_and_errors():
    y = np.repeat(np.arange(4), 5)
    a = FixedSetOfTriplets(y, 30, seed=1).fixed_set_of_triplets
    b = FixedSetOfTriplets(y, 30, seed=np.random.default_rng(1)).fixed_set_of_triplets
    c = FixedSetOfTriplets(y, 30, seed=2).fixed_set_of_triplets
    assert (a == b).all() and not (a == c).all()
    with pytest.raises(ValueError, match="2 distinct classes"):
        FixedSetOfTriplets(np.zeros(5, np.int64), 3)
    with pytest.raises(ValueError, match="num_triplets"):
        FixedSetOfTriplets(y, 0)
    with pytest.raises(TypeError, match="labels"):
        FixedSetOfTriplets(y.astype(float), 3)


@st.composite
def hier_case(draw):
    n_super = draw(st.integers(2, 4))
    rows = []
    cls = 0
    for s in range(n_super):
        for _ in range(draw(st.integers(1, 4))):
            rows += [(cls, s)] * draw(st.integers(1, 6))
            cls += 1
    labels = np.array(rows, dtype=np.int64)
    labels = labels[np.random.default_rng(draw(st.integers(0, 1000))).permutation(len(labels))]
    k = draw(st.integers(1, min(3, n_super)))
    spc = draw(st.sampled_from([1, 2, 3, "all"]))
    sub = draw(st.integers(1, 4)) * (spc if spc != "all" else 1)
    return labels, sub * k, spc, draw(st.integers(1, 3)), k, draw(st.integers(0, 2**31))


@settings(max_examples=50, deadline=None)
@given(hier_case())
def test_hierarchical_batches_have_pml_structure(case):
    labels, bs, spc, bpst, k, seed = case
    s = HierarchicalSampler(
        labels, bs, spc, batches_per_super_tuple=bpst, super_classes_per_batch=k, seed=seed
    )
    supers = sorted(set(labels[:, 1].tolist()))
    combos = list(itertools.combinations(supers, k))
    assert len(s) == len(combos) * bpst
    sub_len = bs // k
    seen_combos = []
    for b in s:
        assert b.dtype == np.int64 and len(b) <= bs
        sup = labels[b, 1]
        seen_combos.append(tuple(sorted(set(sup.tolist()))))
        for sl in set(sup.tolist()):
            part = b[sup == sl]
            assert len(part) <= sub_len
            for c in set(labels[part, 0].tolist()):
                rows = part[labels[part, 0] == c]
                size = int((labels[:, 0] == c).sum())
                want = size if spc == "all" else spc
                assert len(rows) == want
                if spc != "all" and size >= spc:
                    assert len(np.unique(rows)) == spc
    # every batch uses classes from one combination only
    for sc in seen_combos:
        assert any(set(sc) <= set(c) for c in combos)


def test_hierarchical_matches_pml_length_and_reshuffles():
    torch = pytest.importorskip("torch")  # noqa: F841
    pml_samplers = pytest.importorskip("pytorch_metric_learning.samplers")
    labels = np.array([(c, c // 3) for c in range(9) for _ in range(4)], dtype=np.int64)
    ref = pml_samplers.HierarchicalSampler(labels, 8, 2, batches_per_super_tuple=3)
    ours = HierarchicalSampler(labels, 8, 2, batches_per_super_tuple=3, seed=0)
    assert len(ours) == len(ref) == 9
    for batch in list(iter(ref)) + list(ours):
        assert len(batch) == 8  # 3 classes of 4 per super-class: 2 classes x 2 rows fill 4 slots
    a = [b.tolist() for b in ours]
    b = [b.tolist() for b in ours]
    assert a != b


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(batch_size=7, samples_per_class=1), ValueError, "multiple of super_classes_per_batch"),
        (dict(batch_size=8, samples_per_class=3), ValueError, "multiple of samples_per_class"),
        (dict(batch_size=8, samples_per_class="some"), TypeError, "samples_per_class"),
        (dict(batch_size=8, samples_per_class=2, super_classes_per_batch=4), ValueError, "super-classes"),
        (dict(batch_size=8, samples_per_class=2, outer_label=2), ValueError, "outer_label"),
    ],
)
def test_hierarchical_errors(kwargs, exc, match):
    labels = np.array([(c, c // 2) for c in range(6) for _ in range(3)], dtype=np.int64)
    with pytest.raises(exc, match=match):
        HierarchicalSampler(labels, **kwargs)
    with pytest.raises(ValueError, match="2-D"):
        HierarchicalSampler(labels[:, 0], 4, 2)
