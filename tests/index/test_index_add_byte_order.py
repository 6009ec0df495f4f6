"""Index.add of byte-swapped float32 rows stores their values (as numpy reads them), on the fast
path's index (float32, euclidean) as on any other, bit for bit as a native-order add."""

import numpy as np
import pytest

from mantissa_embed.index import Index


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8"])
def test_swapped_rows_store_their_values(dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    swapped = x.astype(x.dtype.newbyteorder())
    idx = Index(4, dtype=dtype).add(rng.standard_normal((20, 4)).astype(np.float32))
    idx.add(np.zeros((1, 4), np.float32))  # the buffers have spare rows: the fast path's turn
    idx.add(swapped)
    want = Index(4, dtype=dtype).add(x)
    np.testing.assert_array_equal(idx._codes[-5:].view(np.uint8), want._codes.view(np.uint8))
    np.testing.assert_array_equal(idx.ids, np.arange(26))
