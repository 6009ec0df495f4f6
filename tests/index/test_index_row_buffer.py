"""RowBuffer (the storage behind Index's arrays): growth keeps the filled rows, a big buffer
grows in place as a memory map on Linux, a view alive elsewhere keeps its memory (the rows are
copied instead), and a failed growth leaves the rows as they were."""

import mmap
import sys

import numpy as np
import pytest

from mantissa_embed import _rowbuffer
from mantissa_embed._rowbuffer import RowBuffer

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mremap is Linux's")


@pytest.mark.parametrize("row_shape, dtype", [((64,), np.float32), ((), np.int64), ((3,), np.int8)])
def test_growth_keeps_the_filled_rows(row_shape, dtype):
    rb = RowBuffer(10, row_shape, dtype)
    assert rb.rows.shape == (10,) + row_shape and rb.rows.dtype == dtype and rb.rows.base is rb.flat
    want = np.arange(10 * int(np.prod(row_shape))).astype(dtype).reshape(rb.rows.shape)
    rb.rows[:] = want
    filled = 10
    for cap in (25, 1000, 40000, 90000):  # across MAP_MIN: numpy arrays, then a map
        rb.grow(cap, filled)
        assert rb.rows.shape[0] >= cap and rb.rows.base is rb.flat and rb.ahead is None
        if cap * rb.rows[0].nbytes < _rowbuffer.MAP_MIN:  # small: exactly the capacity, no map
            assert rb.rows.shape[0] == cap and rb._map is None
        assert np.array_equal(rb.rows[:10], want)
        filled = cap
    rb.rows[-1] = 1  # the whole capacity is writeable
    assert np.array_equal(rb.rows[:10], want)


@linux
def test_a_big_buffer_is_a_map_that_grows_in_place():
    rb = RowBuffer(16, (64,), np.float32)
    rb.grow(_rowbuffer.MAP_MIN // 256, 16)
    m = rb._map
    assert m is not None and len(m) % (1 << 21) == 0
    rb.rows[:100] = 3.0
    rb.grow(rb.rows.shape[0] * 4, 100)
    assert rb._map is m and len(m) >= rb.rows.shape[0] * 256  # remapped, not copied
    assert (rb.rows[:100] == 3.0).all()


@linux
def test_a_view_alive_elsewhere_keeps_its_memory():
    rb = RowBuffer(16, (64,), np.float32)
    rb.grow(_rowbuffer.MAP_MIN // 256, 16)
    rb.rows[:50] = 5.0
    held = rb.rows[:50]
    old_map = rb._map
    rb.grow(rb.rows.shape[0] * 2, 50)  # the map cannot move under `held`: a copy
    assert rb._map is not old_map and rb.rows.base is rb.flat
    rb.rows[:50] = -1.0
    assert (held == 5.0).all() and (rb.rows[:50] == -1.0).all()
    del held
    m = rb._map
    rb.grow(rb.rows.shape[0] * 2, 50)
    assert rb._map is m  # no view left: in place again


@pytest.mark.parametrize("mapped", [False, True])
def test_a_failed_growth_leaves_the_rows(mapped):
    rb = RowBuffer(16, (8,), np.float32)
    if mapped:
        rb.grow(_rowbuffer.MAP_MIN // 32, 16)
    rb.rows[:16] = 2.0
    before = rb.rows.shape
    with pytest.raises((MemoryError, OSError, OverflowError, ValueError)):
        rb.grow(1 << 55, 16)  # 2**60 bytes
    assert rb.rows.shape == before and (rb.rows[:16] == 2.0).all() and rb.rows.base is rb.flat
    rb.grow(before[0] * 2, 16)
    assert (rb.rows[:16] == 2.0).all()


def test_maps_only_when_they_can_grow_in_place():
    assert _rowbuffer._REMAP == (
        sys.platform.startswith("linux") and hasattr(mmap, "MAP_PRIVATE") and hasattr(mmap, "MAP_ANONYMOUS")
    )
