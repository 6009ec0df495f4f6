"""Adversarial inputs for CrossBatchMemory: bad arguments raise a ValueError/TypeError
naming the argument before the queue changes; the ring buffer stays exact after wrapping many
times, after reset_queue and with enqueue masks; the loss equals an independent float64
computation of ContrastiveLoss over (query, memory) pairs without self-comparisons."""

import numpy as np
import pytest

from mantissa_embed import losses as L
from mantissa_embed.losses import CrossBatchMemory

D = 3


def _xbm(memory_size=8):
    return CrossBatchMemory(L.ContrastiveLoss(), D, memory_size=memory_size)


def _batch(n=6, seed=0, classes=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, D)).astype(np.float32), rng.integers(0, classes, n)


def _state(x):
    return x.queue_idx, x.has_been_filled, x.embedding_memory.copy(), x.label_memory.copy()


def _same_state(a, b):
    return a[0] == b[0] and a[1] == b[1] and np.array_equal(a[2], b[2]) and np.array_equal(a[3], b[3])


E, Y = _batch()
BAD_CALLS = {
    "memory smaller than batch": (lambda: (E, Y), {}, 4, ValueError, "memory_size"),
    "mask int dtype": (lambda: (E, Y), {"enqueue_mask": np.ones(6, int)}, 8, TypeError, "enqueue_mask"),
    "mask object dtype": (
        lambda: (E, Y),
        {"enqueue_mask": np.array([True] * 6, object)},
        8,
        TypeError,
        "enqueue_mask",
    ),
    "mask wrong length": (lambda: (E, Y), {"enqueue_mask": np.ones(5, bool)}, 8, ValueError, "enqueue_mask"),
    "mask 2-D": (lambda: (E, Y), {"enqueue_mask": np.ones((6, 1), bool)}, 8, ValueError, "enqueue_mask"),
    "mask scalar": (lambda: (E, Y), {"enqueue_mask": True}, 8, ValueError, "enqueue_mask"),
    "mask selects too many": (
        lambda: (E, Y),
        {"enqueue_mask": np.ones(6, bool)},
        4,
        ValueError,
        "memory_size",
    ),
    "mask and indices": (
        lambda: (E, Y),
        {"enqueue_mask": np.ones(6, bool), "indices_tuple": (np.array([0]), np.array([1]), np.array([2]))},
        8,
        ValueError,
        "indices_tuple",
    ),
    "indices out of range": (
        lambda: (E, Y),
        {"indices_tuple": (np.array([0]), np.array([20]), np.array([1]))},
        8,
        ValueError,
        "indices_tuple",
    ),
    "float indices": (
        lambda: (E, Y),
        {"indices_tuple": (np.array([0.0]), np.array([1.0]), np.array([2.0]))},
        8,
        TypeError,
        "indices_tuple",
    ),
    "embedding_size mismatch": (
        lambda: (np.zeros((6, D + 1), np.float32), Y),
        {},
        8,
        ValueError,
        "embedding_size",
    ),
    "1-D embeddings": (lambda: (E[0], Y[:1]), {}, 8, ValueError, "embeddings"),
    "3-D embeddings": (lambda: (E[None], Y), {}, 8, ValueError, "embeddings"),
    "object embeddings": (lambda: (E.astype(object), Y), {}, 8, TypeError, "embeddings"),
    "NaN embeddings": (lambda: (np.full((6, D), np.nan), Y), {}, 8, ValueError, "embeddings"),
    "Inf embeddings": (lambda: (np.full((6, D), np.inf), Y), {}, 8, ValueError, "embeddings"),
    "float labels": (lambda: (E, Y.astype(float)), {}, 8, TypeError, "labels"),
    "bool labels": (lambda: (E, Y.astype(bool)), {}, 8, TypeError, "labels"),
    "labels None": (lambda: (E, None), {}, 8, TypeError, "labels"),
    "labels length": (lambda: (E, Y[:5]), {}, 8, ValueError, "labels"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_call_raises_and_leaves_queue_unchanged(case):
    args, kwargs, ms, exc, word = BAD_CALLS[case]
    xbm = _xbm(ms)
    xbm(*_batch(2, seed=9))  # some content first
    before = _state(xbm)
    with pytest.raises(exc, match=word):
        xbm(*args(), **kwargs)
    assert _same_state(before, _state(xbm))


@pytest.mark.parametrize(
    "kwargs,exc,word",
    [
        ({"memory_size": 0}, ValueError, "memory_size"),
        ({"memory_size": 8.0}, TypeError, "memory_size"),
        ({"memory_size": True}, TypeError, "memory_size"),
        ({"embedding_size": 0}, ValueError, "embedding_size"),
        ({"miner": 3}, TypeError, "miner"),
    ],
)
def test_bad_constructor_arguments(kwargs, exc, word):
    args = {"loss": L.ContrastiveLoss(), "embedding_size": D, **kwargs}
    with pytest.raises(exc, match=word):
        CrossBatchMemory(**args)


@pytest.mark.parametrize(
    "loss", [None, L.ContrastiveLoss, L.NormalizedSoftmaxLoss(3, D), L.ArcFaceLoss(3, D), L.P2SGradLoss(3, D)]
)
def test_unsupported_losses_rejected(loss):
    with pytest.raises(TypeError, match="loss|support"):
        CrossBatchMemory(loss, D)


def _contrastive_xbm64(q, ql, mem, ml, own):
    """Independent float64 ContrastiveLoss (pos_margin 0, neg_margin 1, L2-normalized Euclidean,
    AvgNonZeroReducer per sub-loss) over query x memory pairs; own[i] = memory slot of query i
    (or -1). Includes PML's rule that at most one positive and one negative pair give 0."""

    def unit(a):
        return a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)

    d = np.linalg.norm(unit(q)[:, None, :] - unit(mem)[None, :, :], axis=2)
    same = ql[:, None] == ml[None, :]
    self_ = own[:, None] == np.arange(len(mem))[None, :]
    pos = np.maximum(d[same & ~self_], 0.0)
    neg = np.maximum(1.0 - d[~same], 0.0)
    if len(pos) <= 1 and len(neg) <= 1:
        return 0.0  # PML's GenericPairLoss: a tuple with at most one pair of each kind gives 0

    def avg_nonzero(v):
        nz = v > 0
        return v[nz].mean() if nz.any() else 0.0

    return avg_nonzero(pos) + avg_nonzero(neg)


@pytest.mark.parametrize("memory_size", [1, 3, 5, 7])
def test_ring_buffer_wraps_many_times_exactly(memory_size):
    rng = np.random.default_rng(memory_size)
    xbm = _xbm(memory_size)
    ref_e = np.zeros((memory_size, D))
    ref_l = np.zeros(memory_size, np.int64)
    cursor, total, filled = 0, 0, False
    for step in range(60):
        b = int(rng.integers(0, memory_size + 1))
        e = rng.standard_normal((b, D)).astype(np.float32)
        lab = rng.integers(0, 3, b)
        if step == 30:
            xbm.reset_queue()
            ref_e[:], ref_l[:], cursor, total, filled = 0, 0, 0, 0, False
            assert xbm.num_stored == 0 and xbm.get_memory()[0].shape == (0, D)
        slots = (cursor + np.arange(b)) % memory_size
        ref_e[slots], ref_l[slots] = e, lab
        cursor = (cursor + b) % memory_size
        total += b
        filled = filled or total >= memory_size
        out = xbm(e, lab)
        e[:] = 123.0  # the caller reuses its buffer: the memory holds copies
        assert xbm.queue_idx == cursor and xbm.has_been_filled == filled
        k = memory_size if filled else cursor
        np.testing.assert_array_equal(xbm.embedding_memory[:k], ref_e[:k].astype(np.float32))
        np.testing.assert_array_equal(xbm.label_memory[:k], ref_l[:k])
        assert np.isfinite(out.loss) and np.isfinite(out.grad).all() and out.grad.shape == (b, D)
        if b:
            own = slots
            want = _contrastive_xbm64(ref_e[slots], lab, ref_e[:k], ref_l[:k], own)
            assert out.loss == pytest.approx(want, rel=1e-5, abs=1e-6)


def test_masked_rows_are_queries_only_and_all_false_mask_keeps_queue_empty():
    xbm = _xbm(6)
    e, y = _batch(6, seed=4, classes=2)
    out = xbm(e, y, enqueue_mask=np.zeros(6, bool))
    assert out.loss == 0.0 and not out.grad.any() and xbm.queue_idx == 0 and not xbm.has_been_filled
    mask = np.array([True, True, True, False, False, False])
    out = xbm(e, y, enqueue_mask=mask)
    assert xbm.queue_idx == 3 and not out.grad[mask].any()
    mem, ml = xbm.get_memory()
    want = _contrastive_xbm64(
        e[~mask].astype(np.float64), y[~mask], mem.astype(np.float64), ml, np.full(3, -1)
    )
    assert out.loss == pytest.approx(want, rel=1e-5, abs=1e-6)
    out = xbm(e, y, enqueue_mask=[True] * 6)  # a list of bools is accepted; no queries -> 0
    assert out.loss == 0.0 and xbm.has_been_filled and xbm.queue_idx == 3


@pytest.mark.parametrize("kind", ["empty", "one", "identical", "zero", "float64", "int", "negative_labels"])
def test_valid_edge_batches_are_finite(kind):
    e, y = _batch(6)
    emb, lab = {
        "empty": (e[:0], y[:0]),
        "one": (e[:1], y[:1]),
        "identical": (np.ones_like(e), y),
        "zero": (np.zeros_like(e), y),
        "float64": (e.astype(np.float64), y),
        "int": ((3 * e).astype(np.int64), y),
        "negative_labels": (e, -y - 10),
    }[kind]
    xbm = _xbm(8)
    for _ in range(3):
        out = xbm(emb, lab)
        assert np.isfinite(out.loss) and np.isfinite(out.grad).all()
        assert out.grad.shape == (len(emb), D) and out.grad.dtype == np.float32
        assert out.ref_grad is None


@pytest.mark.parametrize(
    "miner,exc",
    [
        (lambda e, lab, r, rl: (np.array([0]), np.array([99]), np.array([1])), ValueError),
        (lambda e, lab, r, rl: (np.array([0.0]), np.array([1.0]), np.array([2.0])), TypeError),
        (lambda e, lab, r, rl: None, TypeError),
    ],
)
@pytest.mark.parametrize("masked", [False, True])
def test_failing_miner_leaves_queue_unchanged(miner, exc, masked):
    xbm = CrossBatchMemory(L.ContrastiveLoss(), D, memory_size=5)
    xbm.miner = None
    for seed in range(3):  # wrap once, so the rollback must restore overwritten rows
        xbm(*_batch(2, seed=seed))
    before = _state(xbm)
    own_before = xbm.curr_batch_idx.copy()
    xbm.miner = miner
    e, y = _batch(4, seed=7)
    kw = {"enqueue_mask": np.array([True, True, False, False])} if masked else {}
    with pytest.raises(exc, match="miner output"):
        xbm(e, y, **kw)
    assert _same_state(before, _state(xbm))
    np.testing.assert_array_equal(xbm.curr_batch_idx, own_before)
