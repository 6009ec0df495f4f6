"""engine.copy_rows_finite (the checked copy behind Index.add's appends) against its numpy twin:
the rows land bit for bit wherever they start, a non-finite value anywhere is reported, and
what does not fit or is not C-contiguous float32 of the right width is declined untouched."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mantissa_embed
from mantissa_embed import _reference as ref, engine

BACKENDS = pytest.mark.parametrize("be", [engine, ref], ids=["engine", "numpy"])


def _unaligned(shape, value=0.0):
    """A C-contiguous float32 array starting one byte into its buffer (numpy's aligned flag off)."""
    n = int(np.prod(shape))
    a = np.frombuffer(bytearray(4 * n + 1), np.float32, count=n, offset=1).reshape(shape)
    a[...] = value
    assert not a.flags.aligned and a.flags.c_contiguous and a.flags.writeable
    return a


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(0, 1200),
    d=st.integers(1, 70),
    spare=st.integers(0, 5),
    start_frac=st.floats(0, 1),
    bad=st.sampled_from([None, np.nan, np.inf, -np.inf]),
    pos=st.floats(0, 1),
    seed=st.integers(0, 2**31 - 1),
)
def test_matches_twin_bit_for_bit(n, d, spare, start_frac, bad, pos, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    x.reshape(-1)[: min(x.size, 3)] = [-0.0, 1e-45, 3.4028235e38][: min(x.size, 3)]
    if bad is not None and x.size:
        x.reshape(-1)[min(int(pos * x.size), x.size - 1)] = bad
    m = n + spare
    start = int(start_frac * spare)
    rows = [np.full((m, d), 7.0, np.float32) for _ in range(2)]
    got = [be.copy_rows_finite(x, r, start) for be, r in zip((engine, ref), rows)]
    assert got[0] == got[1] == (1 if bad is None or x.size == 0 else 0)
    for r in rows:
        assert np.array_equal(r[start : start + n].view(np.uint32), x.view(np.uint32))
        assert (r[:start] == 7).all() and (r[start + n :] == 7).all()


@pytest.mark.parametrize("threads", [1, 2])
def test_a_large_copy_finds_a_late_value_on_any_thread_count(threads):
    prev = mantissa_embed.get_num_threads()
    mantissa_embed.set_num_threads(threads)
    try:
        x = np.ones((3000, 64), np.float32)
        rows = np.zeros((3010, 64), np.float32)
        assert engine.copy_rows_finite(x, rows, 10) == 1 and np.array_equal(rows[10:], x)
        x[2999, 63] = np.inf
        assert engine.copy_rows_finite(x, rows, 5) == 0 and np.isinf(rows[3004, 63])
    finally:
        mantissa_embed.set_num_threads(prev)


@BACKENDS
@pytest.mark.parametrize(
    "x",
    [
        np.ones((3, 4)),  # float64
        np.ones((3, 8), np.float32)[:, ::2],  # strided
        np.ones((3, 5), np.float32),  # another width
        np.ones(4, np.float32),  # 1-D
        np.ones((3, 4, 1), np.float32),  # 3-D
        [[1.0] * 4] * 3,  # not an array
        np.ones((7, 4), np.float32),  # does not fit from start 4 of 10 rows
        _unaligned((3, 4), 1.0),  # floats at odd addresses
    ],
    ids=["float64", "strided", "width", "1-D", "3-D", "list", "no-room", "unaligned"],
)
def test_declines_what_it_cannot_copy_and_writes_nothing(be, x):
    rows = np.full((10, 4), 7.0, np.float32)
    assert be.copy_rows_finite(x, rows, 4) == -1
    assert (rows == 7).all()


@BACKENDS
def test_rejects_bad_rows_and_start(be):
    x = np.zeros((2, 4), np.float32)
    frozen = np.zeros((5, 4), np.float32)
    frozen.setflags(write=False)
    for rows in [
        np.zeros((5, 4)),
        np.zeros((5, 8), np.float32)[:, ::2],
        np.zeros(20, np.float32),
        frozen,
        [0.0],
    ]:
        with pytest.raises(TypeError, match="rows must be a C-contiguous, aligned, writeable float32"):
            be.copy_rows_finite(x, rows, 0)
    rows = np.zeros((5, 4), np.float32)
    for start in (-1, 6):
        with pytest.raises(ValueError, match=r"start must be in \[0, 5\]"):
            be.copy_rows_finite(x, rows, start)
    with pytest.raises(TypeError):
        be.copy_rows_finite(x, rows, 1.5)
    with pytest.raises(ValueError, match="rows must not share memory with x"):
        be.copy_rows_finite(rows[1:3], rows, 2)
    assert be.copy_rows_finite(rows[1:3], rows, 3) == 1  # adjacent, not overlapping
