"""mantissa_embed.testing.check_miner_invariants: each rule of the miner contract is enforced."""

import numpy as np
import pytest

from mantissa_embed import miners
from mantissa_embed.testing import check_miner_invariants

X = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
Y = np.array([0, 0, 1, 1, 2, 2])
ints = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731


class Fixed:
    def __init__(self, out):
        self.out = out

    def __call__(self, embeddings, labels, ref_emb=None, ref_labels=None):
        return self.out


def test_real_miners_pass():
    trip = check_miner_invariants(miners.TripletMarginMiner(margin=10), X, Y)
    assert len(trip) == 3 and len(trip[0]) > 0
    check_miner_invariants(miners.PairMarginMiner(pos_margin=0, neg_margin=10), X, Y, X[:4], Y[:4])


@pytest.mark.parametrize(
    "out, match",
    [
        ([ints(0), ints(1), ints(2)], "must return a tuple"),
        ((ints(0), ints(1)), "tuple of 3 or 4 arrays, got tuple of 2"),
        ((ints(0), ints(1), np.array([2], np.int32)), r"output\[2\] must be a 1-D int64"),
        ((ints(0, 1), ints(1), ints(2, 3)), "a and p differ in length"),
        ((ints(0), ints(1), ints(2), ints(3, 4)), "a2 and n differ in length"),
        ((ints(0), ints(6), ints(2)), r"p\[0\] = 6 is out of range 0..5"),
        ((ints(-1), ints(1), ints(2)), r"a\[0\] = -1 is out of range"),
        ((ints(0), ints(2), ints(3)), "positive #0 .* does not share its anchor's label"),
        ((ints(0), ints(1), ints(1)), "negative #0 .* shares its anchor's label"),
        ((ints(1), ints(1), ints(2)), "positive #0 pairs anchor 1 with itself"),
    ],
)
def test_each_broken_rule_is_named(out, match):
    with pytest.raises(AssertionError, match=match):
        check_miner_invariants(Fixed(out), X, Y)


def test_self_pairs_are_allowed_against_a_reference():
    check_miner_invariants(Fixed((ints(1), ints(1), ints(2))), X, Y, X, Y)
    with pytest.raises(AssertionError, match="with itself"):
        check_miner_invariants(Fixed((ints(1), ints(1), ints(2))), X, Y, X, Y, allow_self_pairs=False)
