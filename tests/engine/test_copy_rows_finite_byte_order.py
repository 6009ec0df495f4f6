"""engine.copy_rows_finite and its numpy twin take float32 of the machine's byte order only: a
byte-swapped float32 array is the same numpy type number but other bits (declined as ``x``, a
TypeError as ``rows``), never copied as if it were native."""

import numpy as np
import pytest

from mantissa_embed import _reference as ref, engine

BACKENDS = pytest.mark.parametrize("be", [engine, ref], ids=["engine", "numpy"])
SWAPPED = np.dtype(np.float32).newbyteorder()


@BACKENDS
def test_swapped_x_is_declined_and_nothing_written(be):
    x = np.arange(8, dtype=SWAPPED).reshape(2, 4)
    rows = np.full((4, 4), 7.0, np.float32)
    assert be.copy_rows_finite(x, rows, 1) == -1
    assert (rows == 7).all()


@BACKENDS
def test_swapped_rows_are_a_type_error(be):
    rows = np.zeros((4, 4), SWAPPED)
    with pytest.raises(TypeError, match="rows must be"):
        be.copy_rows_finite(np.ones((1, 4), np.float32), rows, 0)
    assert (rows == 0).all()
