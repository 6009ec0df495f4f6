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


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 70000),
    pos=st.floats(0, 1),
    bad=st.sampled_from([None, np.nan, np.inf, -np.inf]),
    seed=st.integers(0, 2**31 - 1),
)
def test_out_is_a_bitwise_copy_whatever_the_answer(n, pos, bad, seed):
    x = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    x[: min(n, 3)] = [-0.0, 1e-45, 3.4028235e38][: min(n, 3)]  # signed zero, subnormal, largest finite
    if bad is not None and n:
        x[min(int(pos * n), n - 1)] = bad
    outs = [np.full(n, 7.0, np.float32), np.full(n, 7.0, np.float32)]
    got = [be.all_finite(x, out=o) for be, o in zip((engine, ref), outs)]
    assert got[0] is got[1] is (bad is None or n == 0)
    for o in outs:
        assert np.array_equal(o.view(np.uint32), x.view(np.uint32))


def test_out_with_two_threads_finds_a_late_value(threads):
    x = np.ones((300, 1000), np.float32)
    out = np.empty_like(x)
    assert engine.all_finite(x, out=out) and np.array_equal(out, x)
    x[299, 999] = np.nan
    assert not engine.all_finite(x, out=out)
    assert np.isnan(out[299, 999]) and np.array_equal(out[:299], x[:299])


@pytest.mark.parametrize("be", [engine, ref], ids=["engine", "numpy"])
def test_rejects_a_wrong_out(be):
    x = np.zeros((4, 6), np.float32)
    for out, err, msg in [
        (np.zeros((4, 6)), TypeError, "out must have dtype float32"),
        (np.zeros((4, 5), np.float32), ValueError, "out must have shape"),
        (np.zeros((4, 12), np.float32)[:, ::2], ValueError, "out must be C-contiguous"),
        (np.broadcast_to(np.float32(0), (4, 6)), ValueError, "out must be"),
        (x, ValueError, "out must not share memory with x"),
        ([0.0] * 24, TypeError, "out must be a numpy.ndarray"),
    ]:
        with pytest.raises(err, match=msg):
            be.all_finite(x, out=out)
    frozen = np.zeros((4, 6), np.float32)
    frozen.setflags(write=False)
    with pytest.raises(ValueError, match="out must be writeable"):
        be.all_finite(x, out=frozen)
    big = np.zeros(30, np.float32)
    with pytest.raises(ValueError, match="out must not share memory with x"):
        be.all_finite(big[:24].reshape(4, 6), out=big[6:].reshape(4, 6))
