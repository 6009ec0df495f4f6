"""TripletMarginMiner: backend "mantissa" (C engine) == backend "numpy" (twin), and against
pytorch-metric-learning 2.9.0: the triplet sets agree except on float32 ties, triplets whose
margin (in float64) lies within 1e-5 of 0 or of ``margin``; there the two libraries' float32
distance matrices (PML's has ~1e-3 on its diagonal and differs from ours in the last bit off it)
legitimately round to different sides of the boundary."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed.distances import CosineSimilarity, LpDistance
from mantissa_embed.miners import AngularMiner, TripletMarginMiner

KINDS = ["all", "hard", "semihard", "easy"]


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 30),
    m=st.one_of(st.none(), st.integers(1, 20)),
    kind=st.sampled_from(KINDS),
    cos=st.booleans(),
    margin=st.sampled_from([0.0, 0.05, 0.2]),
)
def test_backends_agree(seed, n, m, kind, cos, margin):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 6)).astype(np.float32)
    y = rng.integers(0, 3, n)
    r = ry = None
    if m is not None:
        r = rng.standard_normal((m, 6)).astype(np.float32)
        ry = rng.integers(0, 3, m)
    dist = (lambda b: CosineSimilarity(backend=b)) if cos else (lambda b: LpDistance(backend=b))
    got = TripletMarginMiner(margin, kind, distance=dist("mantissa"))(x, y, r, ry)
    exp = TripletMarginMiner(margin, kind, distance=dist("numpy"), backend="numpy")(x, y, r, ry)
    for u, v in zip(got, exp):
        np.testing.assert_array_equal(u, v)


def test_angular_backends_agree():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 8)).astype(np.float32)
    y = rng.integers(0, 4, 40)
    m1, m2 = AngularMiner(), AngularMiner(distance=LpDistance(backend="numpy"), backend="numpy")
    for u, v in zip(m1(x, y), m2(x, y)):
        np.testing.assert_array_equal(u, v)
    for key in ("average_angle", "min_angle", "max_angle"):
        assert m1.stats[key] == pytest.approx(m2.stats[key], rel=1e-12)


@pytest.mark.parametrize(
    "kind,quant",
    [
        ("semihard", False),
        ("hard", False),
        ("all", False),
        ("easy", False),
        ("semihard", True),
        ("all", True),
    ],
)
def test_pml_agrees_away_from_ties(kind, quant):
    torch = pytest.importorskip("torch")
    pml = pytest.importorskip("pytorch_metric_learning.miners")
    rng = np.random.default_rng(7)
    n, margin = 200, 0.2
    x = rng.standard_normal((n, 16)).astype(np.float32)
    if quant:  # coarse coordinates: many equal distances, so many exact ties
        x = np.round(x).astype(np.float32)
        x[np.abs(x).sum(axis=1) == 0, 0] = 1.0
    y = rng.integers(0, 6, n)
    ours = TripletMarginMiner(margin, kind)(x, y)
    theirs = [
        t.numpy().astype(np.int64)
        for t in pml.TripletMarginMiner(margin=margin, type_of_triplets=kind)(
            torch.tensor(x), torch.tensor(y)
        )
    ]
    ko = (ours[0] * n + ours[1]) * n + ours[2]
    kt = (theirs[0] * n + theirs[1]) * n + theirs[2]
    assert len(ko) > 0
    diff = np.setxor1d(ko, kt)
    a, rest = np.divmod(diff, n * n)
    p, q = np.divmod(rest, n)
    x64 = x.astype(np.float64)
    x64 /= np.linalg.norm(x64, axis=1, keepdims=True)
    tm = np.linalg.norm(x64[a] - x64[q], axis=1) - np.linalg.norm(x64[a] - x64[p], axis=1)
    near_tie = (np.abs(tm) < 1e-5) | (np.abs(tm - margin) < 1e-5)
    assert near_tie.all(), (len(diff), tm[~near_tie][:5])
    if not quant:  # random data: ties are rare
        assert len(diff) <= 1e-3 * len(ko)
    # same order where the sets agree (both sorted by (a, p, n))
    assert np.all(np.diff(ko) > 0) and np.all(np.diff(kt) > 0)
