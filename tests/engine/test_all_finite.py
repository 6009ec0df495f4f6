"""engine.all_finite (the finiteness check behind check_array for large float32 inputs) against
its numpy twin: one non-finite value anywhere (block edges, the tail, a single value) is found,
with one and two threads."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mantissa_embed
from mantissa_embed import _reference as ref, engine
from mantissa_embed._validation import check_array


@pytest.fixture(params=[1, 2])
def threads(request):
    prev = mantissa_embed.get_num_threads()
    mantissa_embed.set_num_threads(request.param)
    yield request.param
    mantissa_embed.set_num_threads(prev)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 70000),
    pos=st.floats(0, 1),
    bad=st.sampled_from([None, np.nan, np.inf, -np.inf]),
    scale=st.sampled_from([1.0, 1e-40, 3e38]),
    seed=st.integers(0, 2**31 - 1),
)
def test_matches_twin(n, pos, bad, scale, seed):
    x = np.clip(np.random.default_rng(seed).standard_normal(n) * scale, -3e38, 3e38).astype(np.float32)
    if bad is not None and n:
        x[min(int(pos * n), n - 1)] = bad
    assert engine.all_finite(x) is ref.all_finite(x) is (bad is None or n == 0)


@pytest.mark.parametrize("i", [0, 15, 16, 16383, 16384, 65535, 65536, 200703])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_finds_one_value_anywhere(threads, i, bad):
    x = np.ones((256, 1, 28, 28), np.float32)
    assert engine.all_finite(x)
    x.reshape(-1)[i] = bad
    assert not engine.all_finite(x)


def test_check_array_uses_it_for_large_inputs(threads):
    x = np.zeros(100000, np.float32)
    x[-1] = np.inf
    with pytest.raises(ValueError, match="X contains NaN or Inf"):
        check_array(x, "X")
    check_array(x, "X", finite=False)


@pytest.mark.parametrize("be", [engine, ref], ids=["engine", "numpy"])
@pytest.mark.parametrize("x", [np.zeros(4), np.zeros((4, 4), np.float32)[:, ::2], [1.0, 2.0]])
def test_rejects_other_layouts(be, x):
    with pytest.raises(TypeError, match="x must be"):
        be.all_finite(x)
