"""Index.add grows amortized buffers: many small adds store exactly what one large add stores
(codes, scales, float32 copies, ids, labels), search the same, survive remove / save / load /
pickling, and never write into a memory-mapped file."""

import pickle

import numpy as np
import pytest

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


def test_growth_is_amortized():
    idx = Index(4)
    buffers = set()
    for _ in range(1000):
        idx.add(np.ones((3, 4), np.float32))
        buffers.add(id(idx._bufs["_codes"]))
    assert len(idx) == 3000 and len(buffers) <= 10  # doubling from 16 rows: 8 reallocations


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
