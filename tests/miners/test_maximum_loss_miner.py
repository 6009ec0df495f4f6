"""MaximumLossMiner: returns the trial subset with the largest loss (trials replayed with the
same generator and losses evaluated independently), distinct in-range rows, stats, no side
effect on the loss's parameter gradients; errors."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed.losses import ContrastiveLoss, TripletMarginLoss
from mantissa_embed.miners import MaximumLossMiner, TripletMarginMiner


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 20),
    k=st.integers(1, 4),
    trials=st.integers(1, 6),
    use_miner=st.booleans(),
    frac=st.sampled_from([0.3, 0.5, 1.0]),
)
def test_picks_the_largest_loss(seed, n, k, trials, use_miner, frac):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = rng.integers(0, k, n)
    size = max(1, int(frac * n))
    loss, inner = TripletMarginLoss(margin=0.3), (TripletMarginMiner(margin=0.3) if use_miner else None)
    miner = MaximumLossMiner(loss, inner, num_trials=trials, output_batch_size=size, seed=seed)
    idx = miner(x, y)
    assert idx.dtype == np.int64 and idx.shape == (size,)
    assert len(np.unique(idx)) == size and idx.min() >= 0 and idx.max() < n
    # replay: the same generator draws the same subsets; evaluate the loss on each
    replay = np.random.default_rng(seed)
    vals, subs = [], []
    for _ in range(trials):
        s = np.sort(replay.choice(n, size=size, replace=False))
        it = None if inner is None else TripletMarginMiner(margin=0.3)(x[s], y[s])
        vals.append(float(TripletMarginLoss(margin=0.3)(x[s], y[s], it)))
        subs.append(s)
    assert np.array_equal(idx, subs[int(np.argmax(vals))])
    assert miner.stats["max_loss"] == pytest.approx(max(vals))
    st_ = miner.stats  # the mean of equal floats may round one ulp above them
    assert st_["min_loss"] - 1e-9 <= st_["avg_loss"] <= st_["max_loss"] + 1e-9


def test_default_size_and_errors():
    x = np.random.default_rng(0).standard_normal((9, 3)).astype(np.float32)
    y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    assert len(MaximumLossMiner(ContrastiveLoss(), seed=0)(x, y)) == 5
    with pytest.raises(TypeError, match="loss"):
        MaximumLossMiner(3)
    with pytest.raises(TypeError, match="miner"):
        MaximumLossMiner(ContrastiveLoss(), miner=3)
    with pytest.raises(ValueError, match="num_trials"):
        MaximumLossMiner(ContrastiveLoss(), num_trials=0)
    with pytest.raises(ValueError, match="output_batch_size"):
        MaximumLossMiner(ContrastiveLoss(), output_batch_size=10)(x, y)
    with pytest.raises(ValueError, match="ref_emb"):
        MaximumLossMiner(ContrastiveLoss())(x, y, x, y)
    with pytest.raises(ValueError, match="labels"):
        MaximumLossMiner(ContrastiveLoss())(x, y[:4])
