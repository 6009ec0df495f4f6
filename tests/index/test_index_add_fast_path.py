"""Index.add's path for C-contiguous float32 rows without ids or labels (a float32 euclidean index
without float32 copies): the same errors, stored bits, ids and thread safety as the general
path, over any sequence of adds and removes."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import run_threads
from mantissa_embed import index as index_mod
from mantissa_embed.index import Index

BAD = [np.nan, np.inf, -np.inf]
# values whose bits must survive: signed zero, subnormals, the largest finite float32
EDGE = np.array([-0.0, 1e-45, -1e-40, 3.4028235e38, -3.4028235e38, 1.0], np.float32)


def _spy(monkeypatch):
    """Counts of _append_plain's answers: [stored, declined (the general path's turn)]."""
    seen = [0, 0]
    orig = Index._append_plain

    def spy(self, x):
        ok = orig(self, x)
        seen[0 if ok else 1] += 1
        return ok

    monkeypatch.setattr(Index, "_append_plain", spy)
    return seen


def _stored(idx):
    return {k: None if getattr(idx, k) is None else np.array(getattr(idx, k)) for k in ("_codes", "_ids")}


def _inputs(x):
    """x (float32) as the fast path takes it and as the general path does (float64, strided,
    unaligned)."""
    wide = np.zeros((x.shape[0], 2 * x.shape[1]), np.float32)
    wide[:, ::2] = x
    odd = np.frombuffer(bytearray(4 * x.size + 1), np.float32, count=x.size, offset=1).reshape(x.shape)
    odd[...] = x  # unaligned: numpy copies it for the general path
    return {
        "fast": np.ascontiguousarray(x),
        "float64": x.astype(np.float64),
        "strided": wide[:, ::2],
        "unaligned": odd,
    }


@pytest.mark.parametrize("kind", ["fast", "float64", "strided", "unaligned", "list"])
@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("where", [(0, 0), (3, 5), (6, 7)])
def test_nan_and_inf_raise_the_same_error_and_store_nothing(monkeypatch, kind, bad, where):
    seen = _spy(monkeypatch)
    rng = np.random.default_rng(1)
    idx = Index(8)
    for _ in range(5):  # room in the buffers: the next add of 7 rows takes the fast path
        idx.add(rng.standard_normal((7, 8)).astype(np.float32))
    before, n_fast = _stored(idx), seen[0]
    x = rng.standard_normal((7, 8)).astype(np.float32)
    x[where] = bad
    arg = x.tolist() if kind == "list" else _inputs(x)[kind]
    with pytest.raises(ValueError, match="^embeddings contains NaN or Inf$"):
        idx.add(arg)
    after = _stored(idx)
    assert all(np.array_equal(after[k], before[k]) for k in before)
    assert seen[0] == n_fast
    idx.add(np.ones((2, 8), np.float32))
    assert np.array_equal(idx.ids[-2:], [35, 36])  # the failed add used no ids
    assert seen[0] == n_fast + 1


@pytest.mark.parametrize("kind", ["fast", "float64", "strided", "unaligned"])
def test_edge_values_are_stored_bit_for_bit(kind):
    x = np.tile(EDGE, (9, 2))[:, :8].copy()
    one = Index(8).add(x[:1])
    for s in range(1, 9, 2):
        one.add(_inputs(x[s : s + 2])[kind])
    want = x if kind != "float64" else x.astype(np.float64).astype(np.float32)
    assert np.array_equal(one._codes.view(np.uint32), want.view(np.uint32))


def test_bad_widths_and_the_labels_rule_are_the_general_paths(monkeypatch):
    idx = Index(8).add(np.zeros((40, 8), np.float32))
    idx.add(np.zeros((1, 8), np.float32))
    with pytest.raises(ValueError, match="embeddings must have 8 columns, got shape"):
        idx.add(np.zeros((3, 7), np.float32))
    bad = np.zeros((3, 7), np.float32)
    bad[1, 1] = np.nan
    with pytest.raises(ValueError, match="contains NaN or Inf"):  # the finiteness check comes first
        idx.add(bad)
    with pytest.raises(ValueError, match="must be 2-D"):
        idx.add(np.zeros(8, np.float32))
    labelled = Index(8).add(np.zeros((40, 8), np.float32), labels=np.zeros(40, np.int64))
    with pytest.raises(ValueError, match="labels missing"):
        labelled.add(np.zeros((1, 8), np.float32))
    seen = _spy(monkeypatch)
    for dtype, metric, keep in [
        ("float16", "euclidean", False),
        ("float32", "cosine", False),
        ("float32", "euclidean", True),
    ]:
        other = Index(8, metric, dtype, keep_float32=keep)
        for _ in range(30):
            other.add(np.ones((3, 8), np.float32))
    assert seen[0] == 0  # only a float32 euclidean index without float32 copies takes it


ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"),
            st.integers(0, 40),
            st.sampled_from(["fast", "float64", "strided", "unaligned", "ids"]),
        ),
        st.tuples(st.just("remove"), st.integers(0, 5), st.just("")),
    ),
    max_size=25,
)


@settings(max_examples=80, deadline=None)
@given(ops=ops, seed=st.integers(0, 2**31 - 1))
def test_any_sequence_of_adds_and_removes_stores_what_one_add_stores(ops, seed):
    rng = np.random.default_rng(seed)
    idx, rows, ids, next_id = Index(6), [], [], 0
    for op, n, kind in ops:
        if op == "add":
            x = rng.standard_normal((n, 6)).astype(np.float32)
            if kind == "ids":
                new = rng.choice(10**6, n, replace=False) + 10**7 + next_id
                idx.add(x, ids=new)
            else:
                new = np.arange(next_id, next_id + n)
                idx.add(_inputs(x)[kind])
            rows += list(x.astype(np.float64).astype(np.float32) if kind == "float64" else x)
            ids += list(new)
            next_id = max([next_id] + [int(i) + 1 for i in new])
        elif ids:
            gone = set(rng.choice(ids, min(n, len(ids)), replace=False).tolist())
            assert idx.remove(np.array(sorted(gone), np.int64)) == len(gone)
            rows = [r for r, i in zip(rows, ids) if int(i) not in gone]
            ids = [i for i in ids if int(i) not in gone]
    ref = Index(6).add(np.array(rows, np.float32).reshape(-1, 6), ids=np.array(ids, np.int64))
    assert np.array_equal(idx._codes.view(np.uint32), ref._codes.view(np.uint32))
    assert np.array_equal(idx.ids, ref.ids) and idx._next_id == next_id
    if len(ref):
        q = np.array(rows[:3], np.float32) + 0.01
        for a, b in zip(idx.search(q, min(4, len(ref))), ref.search(q, min(4, len(ref)))):
            assert np.array_equal(a, b)
    idx.add(np.ones((1, 6), np.float32))
    assert idx.ids[-1] == next_id


def test_threads_adding_at_once_store_every_row_once(monkeypatch):
    seen = _spy(monkeypatch)
    idx = Index(16)
    rng = np.random.default_rng(3)
    blocks = [rng.standard_normal((5, 16)).astype(np.float32) for _ in range(4 * 50)]
    for k, b in enumerate(blocks):
        b[0, 0] = k  # each block tagged by its number
    it = iter(blocks)
    assert run_threads(lambda: idx.add(next(it)), n_threads=4, calls=50) == []
    assert len(idx) == 1000 and np.array_equal(np.sort(idx.ids), np.arange(1000))
    adds = idx._codes[np.argsort(idx.ids)].reshape(200, 5, 16)  # each add: 5 consecutive ids
    assert sorted(adds[:, 0, 0].astype(int).tolist()) == list(range(200))
    for rows in adds:
        assert np.array_equal(rows, blocks[int(rows[0, 0])])
    assert seen[0] > 100  # most adds took the fast path


def test_the_fast_path_is_the_copy_into_the_spare_rows(monkeypatch):
    calls = []
    orig = index_mod.copy_rows_finite

    def spy(x, rows, start):
        calls.append((np.shares_memory(rows, idx._bufs["_codes"].flat), start))
        return orig(x, rows, start)

    idx = Index(4).add(np.zeros((20, 4), np.float32))
    idx.add(np.zeros((1, 4), np.float32))
    monkeypatch.setattr(index_mod, "copy_rows_finite", spy)
    monkeypatch.setattr(index_mod, "all_finite", None)  # the general path's check is not called
    idx.add(np.ones((3, 4), np.float32))
    assert calls == [(True, 21)] and np.array_equal(idx._codes[21:], np.ones((3, 4)))
