"""WeightedSampler and TuplesToWeightsSampler: support, distribution, batching, exact weights."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed.layers import Dense, Sequential
from mantissa_embed.miners import PairMarginMiner
from mantissa_embed.samplers import TuplesToWeightsSampler, WeightedSampler


@st.composite
def weights_case(draw):
    n = draw(st.integers(1, 30))
    w = np.array(draw(st.lists(st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.5, 7.0]), min_size=n, max_size=n)))
    if not (w > 0).any():
        w[draw(st.integers(0, n - 1))] = 1.0
    return w


@settings(max_examples=60, deadline=None)
@given(
    w=weights_case(),
    num=st.integers(1, 50),
    bs=st.one_of(st.none(), st.integers(1, 9)),
    repl=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_zero_weight_rows_are_never_drawn_and_batches_are_well_formed(w, num, bs, repl, seed):
    support = np.flatnonzero(w > 0)
    if not repl:
        num = min(num, len(support))
    s = WeightedSampler(w, num, replacement=repl, generator=seed, batch_size=bs)
    for _ in range(2):
        batches = list(s)
        assert len(batches) == len(s)
        flat = np.concatenate(batches)
        assert flat.dtype == np.int64 and flat.shape == (num,)
        assert set(flat.tolist()) <= set(support.tolist())
        if bs is not None:
            assert all(len(b) == bs for b in batches[:-1]) and 1 <= len(batches[-1]) <= bs
        if not repl:
            assert len(np.unique(flat)) == num


def test_with_replacement_frequencies_follow_the_weights():
    w = np.array([1.0, 0.0, 3.0, 6.0])
    s = WeightedSampler(w, 200_000, generator=0)
    freq = np.bincount(s.indices(), minlength=4) / 200_000
    np.testing.assert_allclose(freq, w / w.sum(), atol=5e-3)
    assert freq[1] == 0


def test_without_replacement_is_successive_sampling():
    # P(first=i, second=j) = p_i p_j / (1 - p_i): torch.multinomial(replacement=False)
    p = np.array([0.5, 0.3, 0.2])
    s = WeightedSampler(p, 2, replacement=False, generator=1)
    counts = np.zeros((3, 3))
    for _ in range(20_000):
        i, j = s.indices()
        counts[i, j] += 1
    want = p[:, None] * p[None, :] / (1 - p[:, None])
    np.fill_diagonal(want, 0)
    np.testing.assert_allclose(counts / 20_000, want, atol=0.015)


def test_seeded_reproducible_and_global_rng_untouched():
    w = np.arange(10.0)
    a = [b.tolist() for b in WeightedSampler(w, 30, generator=3, batch_size=8)]
    b = [b.tolist() for b in WeightedSampler(w, 30, generator=np.random.default_rng(3), batch_size=8)]
    c = [b.tolist() for b in WeightedSampler(w, 30, generator=4, batch_size=8)]
    assert a == b and a != c
    state = np.random.get_state()[1].copy()
    list(WeightedSampler(w, 30, generator=5))
    assert (np.random.get_state()[1] == state).all()


@pytest.mark.parametrize(
    "args, kwargs, exc, match",
    [
        (([],), {}, ValueError, "empty"),
        (([1.0, -1.0],), {}, ValueError, "non-negative"),
        (([0.0, 0.0],), {}, ValueError, "positive"),
        (([1.0, np.nan],), {}, ValueError, "NaN"),
        (([[1.0]],), {}, ValueError, "1-D"),
        (([1.0, 0.0, 1.0],), dict(replacement=False, num_samples=3), ValueError, "replacement=False"),
        ((["a"],), {}, TypeError, "weights"),
        (([1.0],), dict(num_samples=0), ValueError, "num_samples"),
        (([1.0],), dict(num_samples=2.0), TypeError, "num_samples"),
        (([1.0],), dict(replacement="yes"), TypeError, "replacement"),
        (([1.0],), dict(batch_size=0), ValueError, "batch_size"),
    ],
)
def test_weighted_sampler_errors(args, kwargs, exc, match):
    kw = dict(num_samples=2)
    kw.update(kwargs)
    with pytest.raises(exc, match=match):
        WeightedSampler(*args, **kw)


class _FixedMiner:
    """Returns a fixed pair tuple in subset coordinates (records what it saw)."""

    def __init__(self, tup):
        self.tup, self.seen = tup, []

    def __call__(self, emb, labels):
        self.seen.append((emb.copy(), labels.copy()))
        return self.tup


def test_tuples_to_weights_exact_mapping_and_zero_weight_rows_never_drawn():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3)).astype(np.float32)
    y = np.arange(20) % 4
    tup = (np.array([0, 1, 1]), np.array([2, 2, 3]), np.array([4]), np.array([2]))
    miner = _FixedMiner(tup)
    s = TuplesToWeightsSampler(lambda z: 2 * z, miner, (X, y), subset_size=8, batch_size=3, seed=1)
    batches = list(s)
    idx = s.subset_indices
    assert len(np.unique(idx)) == 8
    # counts in subset coordinates: 0:1, 1:2, 2:3, 3:1, 4:1  -> / 3
    want_sub = np.zeros(8)
    want_sub[[0, 1, 2, 3, 4]] = np.array([1, 2, 3, 1, 1]) / 3
    want = np.zeros(20)
    want[idx] = want_sub
    np.testing.assert_allclose(s.weights, want, rtol=1e-6)
    emb, lab = miner.seen[0]
    np.testing.assert_array_equal(emb, 2 * X[idx])
    np.testing.assert_array_equal(lab, y[idx])
    flat = np.concatenate(batches)
    assert flat.shape == (8,) and [len(b) for b in batches] == [3, 3, 2] and len(s) == 3
    assert set(flat.tolist()) <= set(idx[:5].tolist())


def test_tuples_to_weights_empty_tuple_is_uniform_over_the_subset():
    X = np.random.default_rng(1).standard_normal((12, 2)).astype(np.float32)
    y = np.arange(12) % 3
    e = np.empty(0, np.int64)
    s = TuplesToWeightsSampler(lambda z: z, _FixedMiner((e, e, e, e)), (X, y), subset_size=5, seed=2)
    flat = np.concatenate(list(s))
    w = s.weights
    assert (w[s.subset_indices] == 1).all() and w.sum() == 5
    assert set(flat.tolist()) <= set(s.subset_indices.tolist())


def test_tuples_to_weights_with_a_model_and_a_real_miner_leaves_the_model_alone():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((30, 5)).astype(np.float32)
    y = np.arange(30) % 3
    model = Sequential([Dense(4)], seed=0).eval()
    model.build((5,))
    before = [p.data.copy() for p in model.parameters()]
    s = TuplesToWeightsSampler(model, PairMarginMiner(), (X, y), batch_size=10, seed=0, embed_batch_size=7)
    flat = np.concatenate(list(s))
    assert flat.shape == (30,) and (s.weights[flat] > 0).all()
    assert not model.training
    assert all((p.data == b).all() for p, b in zip(model.parameters(), before))


def test_tuples_to_weights_errors():
    X = np.zeros((4, 2), np.float32)
    y = np.arange(4)
    m = _FixedMiner(None)
    with pytest.raises(TypeError, match="model"):
        TuplesToWeightsSampler(3, m, (X, y))
    with pytest.raises(TypeError, match="miner"):
        TuplesToWeightsSampler(lambda z: z, None, (X, y))
    with pytest.raises(TypeError, match="dataset"):
        TuplesToWeightsSampler(lambda z: z, m, X)
    with pytest.raises(ValueError, match="subset_size"):
        TuplesToWeightsSampler(lambda z: z, m, (X, y), subset_size=5)
    with pytest.raises(ValueError, match="labels"):
        TuplesToWeightsSampler(lambda z: z, m, (X, y[:3]))
    with pytest.raises(ValueError, match="model must return"):
        list(TuplesToWeightsSampler(lambda z: z[:1], m, (X, y)))
