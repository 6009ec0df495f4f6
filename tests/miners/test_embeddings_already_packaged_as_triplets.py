"""EmbeddingsAlreadyPackagedAsTriplets: consecutive rows are (a, p, n), labels ignored; errors."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed.miners import EmbeddingsAlreadyPackagedAsTriplets


@settings(max_examples=20, deadline=None)
@given(t=st.integers(0, 20), seed=st.integers(0, 1000))
def test_layout(t, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3 * t, 4)).astype(np.float32)
    y = rng.integers(0, 3, 3 * t)
    a, p, n = EmbeddingsAlreadyPackagedAsTriplets()(x, y)
    assert all(v.dtype == np.int64 for v in (a, p, n))
    assert a.tolist() == [3 * i for i in range(t)]
    assert p.tolist() == [3 * i + 1 for i in range(t)]
    assert n.tolist() == [3 * i + 2 for i in range(t)]


def test_errors():
    m = EmbeddingsAlreadyPackagedAsTriplets()
    x = np.ones((4, 2), np.float32)
    with pytest.raises(ValueError, match="multiple of 3"):
        m(x, np.arange(4))
    with pytest.raises(ValueError, match="ref_emb"):
        m(x[:3], np.arange(3), x[:3], np.arange(3))
    with pytest.raises(TypeError, match="labels"):
        m(x[:3], np.zeros(3))
