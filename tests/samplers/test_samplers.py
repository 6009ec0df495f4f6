"""MPerClassSampler: PML's semantics and validation, batch-yielding."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed.samplers import MPerClassSampler


@st.composite
def sampler_case(draw):
    n_classes = draw(st.integers(1, 8))
    counts = draw(st.lists(st.integers(1, 12), min_size=n_classes, max_size=n_classes))
    labels = np.repeat(np.arange(n_classes) * 3 + 1, counts)  # non-contiguous label values
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    labels = rng.permutation(labels)
    m = draw(st.integers(1, 6))
    k = draw(st.integers(1, n_classes))  # classes per batch
    use_none = draw(st.booleans())
    batch_size = None if use_none else m * k
    length = draw(st.integers(m * n_classes if use_none else m * k, 200))
    return labels, m, batch_size, length, draw(st.integers(0, 1000))


@settings(max_examples=60, deadline=None)
@given(sampler_case())
def test_batches_are_m_per_class(case):
    labels, m, batch_size, length, seed = case
    s = MPerClassSampler(labels, m, batch_size=batch_size, length_before_new_iter=length, seed=seed)
    n_classes = len(np.unique(labels))
    blen = m * n_classes if batch_size is None else batch_size
    batches = list(s)
    assert len(batches) == len(s) >= 1
    assert s.list_size % blen == 0 or len(batches) == 1
    for b in batches:
        assert b.dtype == np.int64 and b.shape == (blen,)
        assert b.min() >= 0 and b.max() < labels.shape[0]
        lab = labels[b]
        # consecutive runs of m indices share one class; the runs' classes are distinct
        runs = lab.reshape(-1, m)
        assert (runs == runs[:, :1]).all()
        assert len(np.unique(runs[:, 0])) == blen // m
        for run_idx, run in zip(b.reshape(-1, m), runs):
            available = int((labels == run[0]).sum())
            if available >= m:  # without replacement
                assert len(np.unique(run_idx)) == m


def test_with_replacement_for_small_classes():
    labels = np.array([0, 0, 1, 1, 1, 1, 1, 1])
    s = MPerClassSampler(labels, 4, batch_size=8, length_before_new_iter=80, seed=3)
    for b in s:
        small = b[labels[b] == 0]
        assert small.shape == (4,) and set(small.tolist()) <= {0, 1}


def test_seeded_and_reproducible():
    labels = np.repeat(np.arange(10), 7)
    a = [b.tolist() for b in MPerClassSampler(labels, 4, 16, 160, seed=5)]
    b = [b.tolist() for b in MPerClassSampler(labels, 4, 16, 160, seed=5)]
    c = [b.tolist() for b in MPerClassSampler(labels, 4, 16, 160, seed=6)]
    assert a == b and a != c
    # successive iterations continue the stream
    s = MPerClassSampler(labels, 4, 16, 160, seed=5)
    assert [x.tolist() for x in s] != [x.tolist() for x in s]
    # a Generator is accepted, and the global RNG is untouched
    state = np.random.get_state()[1].copy()
    list(MPerClassSampler(labels, 4, 16, 160, seed=np.random.default_rng(1)))
    assert (np.random.get_state()[1] == state).all()


def test_lengths_follow_pml():
    labels = np.repeat(np.arange(5), 20)
    s = MPerClassSampler(labels, 4, batch_size=12, length_before_new_iter=100)
    assert s.list_size == 96 and len(s) == 8 and s.indices().shape == (96,)
    s = MPerClassSampler(labels, 4, batch_size=None, length_before_new_iter=100)
    assert s.list_size == 100 - 100 % 20 and len(s) == 5
    s = MPerClassSampler(labels, 4)  # default length 100000
    assert s.list_size == 100000 and len(s) == 100000 // 20


def test_same_distribution_as_pml():
    """Per-batch class composition matches PML's sampler (structure, not the random stream)."""
    torch = pytest.importorskip("torch")
    pml_samplers = pytest.importorskip("pytorch_metric_learning.samplers")
    labels = np.repeat(np.arange(6), [3, 9, 9, 9, 9, 9])
    ref = pml_samplers.MPerClassSampler(torch.tensor(labels), 4, batch_size=12, length_before_new_iter=120)
    ours = MPerClassSampler(labels, 4, batch_size=12, length_before_new_iter=120)
    assert len(ref) == ours.list_size
    ref_idx = np.array(list(iter(ref)))
    for idx in (ref_idx, ours.indices()):
        runs = labels[idx].reshape(-1, 12).reshape(-1, 3, 4)
        assert (runs == runs[..., :1]).all()
        assert all(len(set(r[:, 0])) == 3 for r in runs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(m=3, batch_size=8), "divide batch_size"),
        (dict(m=2, batch_size=16), r"m \* \(number of unique labels\)"),
        (dict(m=0, batch_size=16), "m must be >= 1"),
        (dict(m=4, batch_size=16, length_before_new_iter=8), "length_before_new_iter"),
    ],
)
def test_validation_errors(kwargs, match):
    labels = np.repeat(np.arange(5), 4)
    with pytest.raises(ValueError, match=match):
        MPerClassSampler(labels, **kwargs)


def test_type_errors():
    with pytest.raises(TypeError, match="labels"):
        MPerClassSampler(np.array([0.0, 1.0]), 1)
    with pytest.raises(TypeError, match="m must be an int"):
        MPerClassSampler(np.array([0, 1]), 1.5)
    with pytest.raises(TypeError, match="batch_size"):
        MPerClassSampler(np.array([0, 1]), 1, batch_size="2")
    with pytest.raises(ValueError, match="labels"):
        MPerClassSampler(np.array([], dtype=np.int64), 1)
