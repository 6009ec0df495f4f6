"""Index.add grows amortized buffers (RowBuffer): many small adds store exactly what one large add stores
(codes, scales, float32 copies, ids, labels), search the same, survive remove / save / load /
pickling, and never write into a memory-mapped file."""

import pickle

import numpy as np
import pytest

from mantissa_embed._rowbuffer import RowBuffer
from mantissa_embed.index import Index


def _data(n, dim=8, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, dim)).astype(np.float32), rng.integers(0, 5, n)


def _stored(idx):
    return {
        k: None if v is None else np.array(v)
        for k in ("_codes", "_scales", "_f32", "_ids", "_labels")
        for v in [getattr(idx, k)]
    }


def _same(a, b):
    sa, sb = _stored(a), _stored(b)
    for k in sa:
        if sa[k] is None or sb[k] is None:
            assert sa[k] is None and sb[k] is None, k
        else:
            assert sa[k].dtype == sb[k].dtype and np.array_equal(sa[k], sb[k]), k


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8"])
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_small_adds_store_what_one_add_stores(dtype, metric):
    x, y = _data(203)
    one = Index(8, metric, dtype, keep_float32=True).add(x, labels=y)
    many = Index(8, metric, dtype, keep_float32=True)
    for s in range(0, 203, 7):
        many.add(x[s : s + 7], labels=y[s : s + 7])
    _same(one, many)
    q = x[:9] + 0.01
    for a, b in zip(one.search(q, 5), many.search(q, 5)):
        assert np.array_equal(a, b)
    assert many.nbytes == one.nbytes  # the spare capacity is not counted as stored vectors


def test_growth_is_amortized(monkeypatch):
    growths = []
    orig = RowBuffer.grow
    monkeypatch.setattr(RowBuffer, "grow", lambda self, c, k: (growths.append(c), orig(self, c, k)))
    idx = Index(4)
    for _ in range(1000):
        idx.add(np.ones((3, 4), np.float32))
        assert idx._bufs["_codes"].rows.shape[0] >= len(idx)
    # doubling from 16 rows: 8 growths of each of the two arrays (codes, ids)
    assert len(idx) == 3000 and len(growths) <= 16 and len(idx._bufs) == 2


def test_a_view_taken_before_a_growth_keeps_its_rows():
    rng = np.random.default_rng(2)
    idx = Index(64)
    for _ in range(100):
        idx.add(rng.standard_normal((100, 64)).astype(np.float32))
    state = idx.__getstate__()  # views of the stored rows, as a pickler holds them
    before = np.array(state["_codes"])
    for _ in range(300):  # growths past a memory map's first size
        idx.add(rng.standard_normal((100, 64)).astype(np.float32))
    assert np.array_equal(state["_codes"], before) and np.array_equal(idx._codes[:10000], before)
    assert np.array_equal(pickle.loads(pickle.dumps(state["_codes"])), before)


def test_add_after_remove_load_and_pickle(tmp_path):
    x, y = _data(60)
    ref = Index(8).add(x[:40], labels=y[:40])
    ref.remove(np.arange(10))
    ref.add(x[40:], labels=y[40:])
    idx = Index(8)
    for s in range(0, 40, 4):
        idx.add(x[s : s + 4], labels=y[s : s + 4])
    assert idx.remove(np.arange(10)) == 10
    for s in range(40, 60, 5):
        idx.add(x[s : s + 5], labels=y[s : s + 5])
    _same(ref, idx)
    path = idx.save(tmp_path / "a.index")
    before = (tmp_path / "a.index").read_bytes()
    loaded = Index.load(path, mmap=True)
    loaded.add(x[:3] * 2, labels=y[:3])  # copies out of the map, never writes into it
    assert (tmp_path / "a.index").read_bytes() == before
    assert len(loaded) == 53 and np.array_equal(loaded.ids[-3:], [60, 61, 62])
    clone = pickle.loads(pickle.dumps(idx))
    _same(clone, idx)
    clone.add(x[:2], labels=y[:2])
    assert len(clone) == 52 and len(idx) == 50


def test_labels_rule_and_failed_add_leave_the_index_unchanged():
    x, y = _data(10)
    idx = Index(8).add(x[:5], labels=y[:5])
    snapshot = _stored(idx)
    with pytest.raises(ValueError, match="labels missing"):
        idx.add(x[5:])
    with pytest.raises(ValueError, match="ids must be distinct"):
        idx.add(x[5:7], ids=[0, 99], labels=y[5:7])
    for k, v in _stored(idx).items():
        assert v is None and snapshot[k] is None or np.array_equal(v, snapshot[k])


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_a_growth_without_memory_leaves_the_index_unchanged(monkeypatch, dtype):
    x, y = _data(40)
    idx = Index(8, dtype=dtype, keep_float32=True)
    for s in range(0, 32, 8):
        idx.add(x[s : s + 8], labels=y[s : s + 8])
    snapshot, n = _stored(idx), len(idx)
    orig = RowBuffer.grow
    calls = []

    def fail_second(self, c, k):
        calls.append(c)
        if len(calls) == 2:  # one array already grown, the next one fails
            raise MemoryError
        orig(self, c, k)

    monkeypatch.setattr(RowBuffer, "grow", fail_second)
    with pytest.raises(MemoryError):
        idx.add(x[32:40], labels=y[32:40])
    assert len(idx) == n and idx.nbytes == Index(8, dtype=dtype, keep_float32=True).add(x[:32]).nbytes
    for k, v in _stored(idx).items():
        assert np.array_equal(v, snapshot[k]), k
    monkeypatch.setattr(RowBuffer, "grow", orig)
    idx.add(x[32:40], labels=y[32:40])
    _same(idx, Index(8, dtype=dtype, keep_float32=True).add(x, labels=y))
