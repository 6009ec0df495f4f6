"""A deflated __config__ entry of 400 MB (a 390 kB file: a real, valid header and data) is
refused from its header's size before its data is read, rather than read and parsed (7 s and
1.4 GB)."""

import io
import time
import tracemalloc
import zipfile

import numpy as np
import pytest
from numpy.lib import format as npy_format

from mantissa_embed import Embedder


def test_deflated_config_bomb_is_rejected_from_its_header(tmp_path):
    buf = io.BytesIO()
    npy_format.write_array(buf, np.array('{"format": "' + "a" * 5 * 10**6 + '"}'))
    path = tmp_path / "cfg_bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("__config__.npy", buf.getvalue())
    del buf
    assert path.stat().st_size < 2**20
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(ValueError, match=r"cfg_bomb\.npz.*'__config__' entry claims 200000\d+ bytes"):
            Embedder.load(path)
        seconds, peak = time.perf_counter() - t0, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seconds < 1.0 and peak < 16 * 2**20
