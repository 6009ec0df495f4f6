"""AngularMiner: valid triplets, exactly those whose angle exceeds the threshold (float64 brute
force over all triplets, borderline ones tolerated); stats; distance requirement."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import labelled_batch as _batch
from mantissa_embed.distances import CosineSimilarity, LpDistance
from mantissa_embed.miners import AngularMiner


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 12),
    m=st.one_of(st.none(), st.integers(0, 10)),
    d=st.integers(1, 5),
    k=st.integers(1, 4),
    angle=st.sampled_from([0, 20, 45]),
)
def test_definition(seed, n, m, d, k, angle):
    x, y, r, ry = _batch(seed, n, m, d, k)
    same = r is None
    ry_ = y if same else ry
    ref = (x if same else r).astype(np.float64)
    miner = AngularMiner(angle=angle)
    a, p, nn = miner(x, y, r, ry)
    assert all(t.dtype == np.int64 for t in (a, p, nn))
    got = set(zip(a.tolist(), p.tolist(), nn.tolist()))
    assert len(got) == len(a)
    assert list(zip(a, p, nn)) == sorted(zip(a, p, nn))
    x64 = x.astype(np.float64)
    for i in range(len(y)):
        for j in range(len(ry_)):
            if ry_[j] != y[i] or (same and i == j):
                continue
            for q in range(len(ry_)):
                if ry_[q] == y[i]:
                    continue
                # the paper's angle at the negative, on the embeddings as given (PML)
                ang = math.atan2(
                    np.linalg.norm(x64[i] - ref[j]), 2 * np.linalg.norm(ref[q] - (x64[i] + ref[j]) / 2)
                )
                if abs(ang - math.radians(angle)) > 1e-4:
                    assert ((i, j, q) in got) == (ang > math.radians(angle)), (i, j, q, ang)
    if len(a):
        assert miner.stats["num_triplets"] == len(a)
        assert miner.stats["min_angle"] <= miner.stats["average_angle"] <= miner.stats["max_angle"]


def test_distance_requirement_and_errors():
    for bad in (CosineSimilarity(), LpDistance(power=2), LpDistance(normalize_embeddings=False)):
        with pytest.raises(ValueError, match="LpDistance"):
            AngularMiner(distance=bad)
    with pytest.raises(TypeError, match="angle"):
        AngularMiner(angle="20")
    assert AngularMiner(angle=20).angle == pytest.approx(math.radians(20))
