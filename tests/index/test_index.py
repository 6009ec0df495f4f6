"""mantissa_embed.index.Index: exact search against a float64 brute force (per storage dtype, on
the decoded vectors), tile merging, re-ranking, ids / labels / remove, files (round trip,
memory map, corrupt files), the Embedder's build_index / retrieve, and threads."""

import json
import struct

import numpy as np
import pytest

from _helpers import run_threads, small_fitted_embedder
from mantissa_embed import engine, index as index_mod
from mantissa_embed._index_codes import _BF16_MAX
from mantissa_embed.index import Index


def _data(n=700, d=12, q=40, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(np.float32)
    if ties:
        X = np.round(X).astype(np.float32)  # many equal distances
    Q = rng.standard_normal((q, d)).astype(np.float32)
    return X, Q


def _brute(Q, X, k, metric="euclidean"):
    q, x = Q.astype(np.float64), X.astype(np.float64)
    if metric == "cosine":
        qn = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-300)
        xn = x / np.where(
            np.linalg.norm(x, axis=1, keepdims=True) > 0, np.linalg.norm(x, axis=1, keepdims=True), 1
        )
        D = np.clip(1 - qn @ xn.T, 0, 2)
    else:
        D = np.sqrt(((q[:, None, :] - x[None]) ** 2).sum(-1))
    order = np.lexsort((np.broadcast_to(np.arange(x.shape[0]), D.shape), D.astype(np.float32)), axis=1)[:, :k]
    return order, np.take_along_axis(D, order, axis=1)


def _decoded(X, dtype):
    """The stored vectors, decoded by an independent computation."""
    if dtype == "float32":
        return X
    if dtype == "float16":
        return X.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        out = np.empty_like(X)
        for i, v in np.ndenumerate(X):  # round to nearest even on the 16 dropped bits, bit by bit
            u = int(np.float32(v).view(np.uint32))
            lo, hi = u & 0xFFFF, u >> 16
            hi += 1 if (lo > 0x8000 or (lo == 0x8000 and hi & 1)) else 0
            out[i] = np.uint32(hi << 16).view(np.float32)
        return out
    s = np.abs(X).max(axis=1) / 127.0
    return (np.clip(np.rint(X / np.where(s > 0, s, 1)[:, None]), -127, 127) * s[:, None]).astype(np.float32)


_CPU = engine.cpu_features()
KERNELS = ["generic"] + [
    k for k, ok in (("avx2", _CPU["avx2"]), ("avx512", _CPU["avx512f"])) if ok and _CPU["fma"]
]


@pytest.mark.parametrize("kernel", KERNELS)  # the search's ranking arithmetic follows it
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8"])
@pytest.mark.parametrize("ties", [False, True])
def test_search_is_exact_on_the_stored_vectors(dtype, ties, kernel, monkeypatch):
    monkeypatch.setattr(index_mod, "_TILE", 128)  # several tiles to merge
    X, Q = _data(ties=ties)
    ix = Index(12, dtype=dtype).add(X)
    prev = engine._set_gemm_kernel(kernel)
    try:
        ids, dist = ix.search(Q, 9)
    finally:
        engine._set_gemm_kernel(prev)
    ref_i, ref_d = _brute(Q, _decoded(X, dtype), 9)
    np.testing.assert_allclose(dist, ref_d, rtol=1e-5, atol=1e-5)
    if not ties:
        np.testing.assert_array_equal(ids, ref_i)
    else:  # ties: the earlier vector first, as the brute force orders them
        same = np.isclose(dist, ref_d, rtol=0, atol=1e-6)
        assert same.all()


@pytest.mark.parametrize("dtype, floor", [("float16", 0.99), ("bfloat16", 0.95), ("int8", 0.9)])
def test_low_precision_recall_and_rerank(dtype, floor):
    X, Q = _data(n=2000, d=32, q=60, seed=3)
    true_i, true_d = _brute(Q, X, 10)
    ix = Index(32, dtype=dtype, keep_float32=True).add(X)
    ids, _ = ix.search(Q, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, true_i)])
    assert recall >= floor
    ids, dist = ix.search(Q, 10, rerank=100)
    np.testing.assert_array_equal(ids, true_i)
    np.testing.assert_allclose(dist, true_d, rtol=1e-6, atol=1e-6)
    assert ix.nbytes > Index(32, dtype=dtype).add(X).nbytes  # the kept float32 copy costs


def test_storage_sizes():
    X, _ = _data(n=100, d=16)
    sizes = {dt: Index(16, dtype=dt).add(X).nbytes for dt in index_mod.DTYPES}
    assert sizes == {"float32": 6400, "float16": 3200, "bfloat16": 3200, "int8": 1600 + 400}


def test_bfloat16_matches_torch():
    torch = pytest.importorskip("torch")
    X, _ = _data(n=50, d=16, seed=9)
    codes, _ = index_mod._encode(X, "bfloat16")
    want = torch.from_numpy(X).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(codes, want)
    # every kind of bit pattern: ties (low half 0x8000) on even and odd, the largest values that
    # stay finite, subnormals, signed zeros
    bits = np.random.default_rng(4).integers(0, 2**32, 40000, dtype=np.uint64).astype(np.uint32)
    bits[::4] = (bits[::4] & 0xFFFF0000) | 0x8000
    x = bits.view(np.float32)
    x = x[np.isfinite(x) & (np.abs(x) <= _BF16_MAX)]
    x = np.concatenate([x, np.float32([0.0, -0.0, 1e-45, -1e-40, _BF16_MAX])])
    x = x[: x.size // 8 * 8].reshape(-1, 8)
    codes, _ = index_mod._encode(x, "bfloat16")
    want = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(codes, want)


def test_cosine_metric():
    X, Q = _data(seed=5)
    X[3] = 0  # an all-zero vector stays at distance 1
    ids, dist = Index(12, metric="cosine").add(X).search(Q, 6)
    ri, rd = _brute(Q, X, 6, metric="cosine")
    np.testing.assert_array_equal(ids, ri)
    np.testing.assert_allclose(dist, rd, atol=1e-5)


def test_ids_labels_remove():
    X, Q = _data(n=50)
    ix = Index(12).add(X[:20], ids=np.arange(100, 120), labels=np.zeros(20, np.int64))
    ix.add(X[20:], labels=np.ones(30, np.int64))  # default ids continue after the largest
    assert len(ix) == 50 and ix.ids[20] == 120 and ix.labels.sum() == 30
    assert ix.remove([100, 121, 999]) == 2
    assert len(ix) == 48 and 100 not in ix.ids
    ids, _ = ix.search(X[1], 1)
    assert ids[0] == 101
    with pytest.raises(ValueError, match="distinct"):
        ix.add(X[:1], ids=[101], labels=[0])
    with pytest.raises(ValueError, match="labels missing"):
        ix.add(X[:1])
    with pytest.raises(ValueError, match="columns"):
        ix.add(np.ones((2, 5), np.float32), labels=[0, 0])
    with pytest.raises(ValueError, match="k must be"):
        ix.search(Q, 49)
    with pytest.raises(ValueError, match="keep_float32"):
        ix.search(Q, 2, rerank=5)
    with pytest.raises(ValueError, match="NaN|finite"):
        ix.search(np.full(12, np.nan), 2)
    with pytest.raises(ValueError, match="float16 range"):
        Index(2, dtype="float16").add(np.array([[1e6, 0]], np.float32))
    with pytest.raises(ValueError, match="dtype"):
        Index(4, dtype="float8")
    with pytest.raises(ValueError, match="metric"):
        Index(4, metric="manhattan")
    with pytest.raises(TypeError, match="ids"):
        ix.remove(["a"])


@pytest.mark.parametrize("mmap", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "int8", "bfloat16"])
def test_file_round_trip(tmp_path, mmap, dtype):
    X, Q = _data(n=300)
    ix = Index(12, dtype=dtype, keep_float32=True).add(X, labels=np.arange(300) % 7)
    ix.remove([5, 6])
    path = tmp_path / "g.meindex"
    ix.save(path)
    assert [p.name for p in tmp_path.iterdir()] == ["g.meindex"]  # no temporary left
    back = Index.load(path, mmap=mmap)
    assert isinstance(back._codes, np.memmap) == mmap
    for a, b in zip(ix.search(Q, 5, rerank=20), back.search(Q, 5, rerank=20)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(back.labels, ix.labels)
    back.add(X[:2], labels=[0, 1])  # works on copies of the mapped arrays
    assert len(back) == 300 and back.ids[-2:].tolist() == [300, 301]


def _write(path, header, payload=b""):
    blob = json.dumps(header).encode()
    path.write_bytes(b"MEINDEX1" + struct.pack("<Q", len(blob)) + blob + b"\0" * 64 + payload)


def test_corrupt_files_are_rejected(tmp_path):
    X, _ = _data(n=10)
    good = tmp_path / "good"
    Index(12).add(X).save(good)
    raw = good.read_bytes()
    bad = tmp_path / "bad"
    bad.write_bytes(raw[: len(raw) - 100])  # truncated
    with pytest.raises(ValueError, match="past the end"):
        Index.load(bad)
    bad.write_bytes(b"PK" + raw[2:])
    with pytest.raises(ValueError, match="not a mantissa-embed index"):
        Index.load(bad)
    h = json.loads(raw[16 : 16 + struct.unpack("<Q", raw[8:16])[0]])
    h["n"] = 10**11  # a header claiming 10^11 vectors: refused before any allocation
    h["arrays"]["codes"]["shape"] = [10**11, 12]
    h["arrays"]["ids"]["shape"] = [10**11]
    _write(bad, h)
    with pytest.raises(ValueError, match="past the end"):
        Index.load(bad, mmap=False)
    h2 = json.loads(raw[16 : 16 + struct.unpack("<Q", raw[8:16])[0]])
    h2["arrays"]["codes"]["dtype"] = "|O"
    _write(bad, h2, raw[64:])
    with pytest.raises(ValueError, match="codes"):
        Index.load(bad)
    bad.write_bytes(b"MEINDEX1" + struct.pack("<Q", 10**15))
    with pytest.raises(ValueError, match="header length"):
        Index.load(bad)
    with pytest.raises(FileNotFoundError):
        Index.load(tmp_path / "missing")
    with pytest.raises(OSError, match="missing_dir"):
        Index(12).add(X).save(tmp_path / "missing_dir" / "x")


def test_embedder_build_index_and_retrieve():
    emb, X, y = small_fitted_embedder(4, 30, 40)
    ix = emb.build_index(X, labels=y)
    i1, d1 = emb.retrieve(X[:10], ix, k=5)
    i2, d2 = emb.retrieve(X[:10], emb.embed(X), k=5)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_allclose(d1, d2, atol=1e-6)
    i, d = emb.retrieve(X[0], ix, k=3)
    assert i.shape == (3,) and i[0] == 0
    with pytest.raises(ValueError, match="16-D|8-D"):
        emb.retrieve(X[0], Index(16), k=1)


def test_concurrent_search_and_add():
    X, Q = _data(n=1500, d=16, q=30)
    ix = Index(16, dtype="int8").add(X[:1000])
    want = ix.search(Q, 7)
    wrong = []

    def searcher():
        got = ix.search(Q, 7)
        if not (np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])):
            wrong.append(1)

    errors = run_threads(searcher, n_threads=3, calls=5)
    assert not wrong and not errors


def test_an_index_crosses_processes(tmp_path):
    """Dask moves shards between worker processes by pickling: the lock is recreated and a
    memory-mapped index travels as its arrays."""
    import pickle

    X, Q = _data(n=100)
    ix = Index(12, dtype="int8").add(X)
    ix.save(tmp_path / "g")
    for src in (ix, Index.load(tmp_path / "g", mmap=True)):
        back = pickle.loads(pickle.dumps(src))
        for a, b in zip(src.search(Q, 4), back.search(Q, 4)):
            np.testing.assert_array_equal(a, b)
        back.add(X[:1])
        assert len(back) == 101 and len(src) == 100


def test_scores_that_would_overflow_float32_are_refused():
    X, Q = _data(n=50, d=8)
    ix = Index(8).add(X)
    ix.search(Q, 3)  # the guard now covers the first 50 rows
    ix.add(np.full((1, 8), 1e19, np.float32))  # |x|^2 = 8e38 > float32's range
    with pytest.raises(ValueError, match="overflow float32"):
        ix.search(Q, 3)
    ix.remove([50])
    ix.search(Q, 3)  # the guard starts over after a remove
    with pytest.raises(ValueError, match="overflow float32"):
        ix.search(np.full((1, 8), 1e19, np.float32), 3)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_a_large_cosine_query_is_not_refused(dtype):
    """A cosine query is normalized before the overflow guard: its scale does not matter."""
    ix = Index(4, "cosine", dtype).add(np.eye(4, dtype=np.float32))
    ids, dist = ix.search(np.array([[1e20, 0, 0, 0], [3e38, 3e38, 0, 0]], np.float32), 2)
    np.testing.assert_array_equal(ids, [[0, 1], [0, 1]])
    np.testing.assert_allclose(dist[0], [0.0, 1.0], atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_query_blocks_give_the_one_call_result(dtype, monkeypatch):
    X, Q = _data(n=500, d=16, q=50, seed=4)
    ix = Index(16, dtype=dtype).add(X)
    whole = ix.search(Q, 5)
    monkeypatch.setattr(index_mod, "_QUERY_BLOCK", 7)
    blocks = ix.search(Q, 5)
    np.testing.assert_array_equal(whole[0], blocks[0])
    np.testing.assert_array_equal(whole[1], blocks[1])
