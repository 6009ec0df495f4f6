"""The shared scatter-add kernel (np.add.at in C) and its gather backward equal their numpy twins
bitwise (hypothesis: random shapes, duplicate and empty index arrays), for any thread count."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import _reference as R, engine as E


def _case(seed, n, k, d):
    rng = np.random.default_rng(seed)
    shape = (k,) if d is None else (k, d)
    src = rng.standard_normal(shape).astype(np.float32)
    index = rng.integers(0, max(n, 1), k) if n else np.zeros(0, np.int64)
    out = rng.standard_normal((n,) if d is None else (n, d)).astype(np.float32)
    return src, index, out


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 9),
    k=st.integers(0, 40),
    d=st.one_of(st.none(), st.integers(0, 7)),
)
def test_scatter_add_equals_twin(seed, n, k, d):
    k = k if n else 0
    src, index, out = _case(seed, n, k, d)
    a = E.scatter_add_forward(src, index, out.copy())
    b = R.scatter_add_forward(src, index, out.copy())
    np.testing.assert_array_equal(a, b)
    ref = out.astype(np.float64)
    np.add.at(ref, index, src)
    np.testing.assert_allclose(a, ref, rtol=1e-5, atol=1e-5)
    dout = out + 1
    np.testing.assert_array_equal(E.scatter_add_backward(dout, index), R.scatter_add_backward(dout, index))
    np.testing.assert_array_equal(E.scatter_add_backward(dout, index), dout[index])


def test_pair_scatter_into_a_matrix():
    rng = np.random.default_rng(0)
    m = np.zeros((5, 7), np.float32)
    r, c = rng.integers(0, 5, 30), rng.integers(0, 7, 30)
    v = rng.standard_normal(30).astype(np.float32)
    for mod in (E, R):
        got = mod.scatter_add_forward(v, r * 7 + c, m.copy().reshape(-1)).reshape(5, 7)
        ref = m.copy()
        np.add.at(ref, (r, c), v)
        np.testing.assert_array_equal(got, ref)


def test_bitwise_identical_across_thread_counts():
    rng = np.random.default_rng(1)
    src = rng.standard_normal((50000, 3)).astype(np.float32)
    index = rng.integers(0, 40, 50000)
    old = E.get_num_threads()
    try:
        outs = []
        for t in (1, 2, 3):
            E.set_num_threads(t)
            outs.append(E.scatter_add_forward(src, index, np.zeros((40, 3), np.float32)))
    finally:
        E.set_num_threads(old)
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])
    np.testing.assert_array_equal(outs[0], R.scatter_add_forward(src, index, np.zeros((40, 3), np.float32)))


@pytest.mark.parametrize("mod", [E, R])
def test_bad_arguments_raise(mod):
    out = np.zeros((4, 2), np.float32)
    with pytest.raises(ValueError, match="index must hold indices"):
        mod.scatter_add_forward(np.ones((1, 2)), [4], out)
    with pytest.raises(ValueError, match="src must have shape"):
        mod.scatter_add_forward(np.ones((2, 3)), [0, 1], out)
    with pytest.raises(TypeError):
        mod.scatter_add_forward(np.ones((1, 2)), [0], [[0.0, 0.0]])
    with pytest.raises(ValueError):
        mod.scatter_add_forward(np.ones((1, 2)), [0], np.zeros((4, 2)))
    ro = np.zeros((4, 2), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        mod.scatter_add_forward(np.ones((1, 2)), [0], ro)
    with pytest.raises(ValueError):
        mod.scatter_add_forward(out[:1], [0], out)
    with pytest.raises(ValueError, match="index must hold indices"):
        mod.scatter_add_backward(out, [-1])
