"""CrossBatchMemory: ring buffer, copies, self-comparison removal, gradient ownership, errors.

Expected values come from a float64 numpy contrastive loss written here and from finite
differences, never from the wrapped loss itself."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import losses, miners
from mantissa_embed.losses import ContrastiveLoss, CrossBatchMemory, TripletMarginLoss
from mantissa_embed.losses.base_metric_loss_function import BaseMetricLossFunction
from mantissa_embed.parameter import Parameter


def _contrastive64(x, y, mem, mem_y, own=None, pm=0.0, nm=1.0):
    """PML's ContrastiveLoss (AvgNonZero) over queries x memory in float64; ``own[i]``: the
    memory slot holding row i (excluded as a positive)."""
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    mn = mem / np.linalg.norm(mem, axis=1, keepdims=True)
    d = np.linalg.norm(xn[:, None] - mn[None], axis=2)
    same = y[:, None] == mem_y[None]
    pos = same.copy()
    if own is not None:
        pos[np.arange(len(x)), own] = False
    pl = np.maximum(d[pos] - pm, 0)
    nl = np.maximum(nm - d[~same], 0)
    pos_loss = pl[pl > 0].mean() if (pl > 0).any() else 0.0
    neg_loss = nl[nl > 0].mean() if (nl > 0).any() else 0.0
    if pos.sum() <= 1 and (~same).sum() <= 1:  # PML: tiny tuples give 0
        return 0.0
    return pos_loss + neg_loss


def _fd_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        g[idx] = (f(xp) - f(xm)) / (2 * eps)
    return g


def test_cursor_and_fill_state_follow_the_ring_buffer():
    rng = np.random.default_rng(0)
    xbm = CrossBatchMemory(ContrastiveLoss(), 4, memory_size=10)
    assert (xbm.queue_idx, xbm.has_been_filled, xbm.num_stored) == (0, False, 0)
    seen = []
    for n, want_idx, want_filled in ((4, 4, False), (4, 8, False), (4, 2, True), (3, 5, True)):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        y = rng.integers(0, 3, n)
        xbm(x, y)
        seen.append((x, y))
        assert xbm.queue_idx == want_idx and xbm.has_been_filled == want_filled
    # slot contents: a ring of the last 10 rows written
    allx = np.concatenate([s[0] for s in seen])
    ally = np.concatenate([s[1] for s in seen])
    slots = np.arange(len(allx)) % 10
    want = np.zeros((10, 4), np.float32)
    wanty = np.zeros(10, np.int64)
    for r, s in enumerate(slots):
        want[s], wanty[s] = allx[r], ally[r]
    np.testing.assert_array_equal(xbm.embedding_memory, want)
    np.testing.assert_array_equal(xbm.label_memory, wanty)
    assert xbm.num_stored == 10


def test_exactly_memory_size_fills_and_wraps_cursor_to_zero():
    xbm = CrossBatchMemory(ContrastiveLoss(), 2, memory_size=6)
    xbm(np.eye(6, 2, dtype=np.float32) + 0.1, np.arange(6) % 2)
    assert xbm.queue_idx == 0 and xbm.has_been_filled


def test_memory_holds_copies_not_views():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    xbm = CrossBatchMemory(ContrastiveLoss(), 3, memory_size=8)
    xbm(x, np.array([0, 0, 1, 1, 2]))
    before = xbm.embedding_memory.copy()
    x += 100.0
    np.testing.assert_array_equal(xbm.embedding_memory, before)
    assert not np.shares_memory(xbm.embedding_memory, x)
    e, lab = xbm.get_memory()
    e[:] = 0
    np.testing.assert_array_equal(xbm.embedding_memory, before)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(2, 8), pre=st.integers(0, 12), d=st.integers(2, 5))
def test_value_and_gradient_against_float64_reference(seed, n, pre, d):
    rng = np.random.default_rng(seed)
    xbm = CrossBatchMemory(ContrastiveLoss(), d, memory_size=12)
    if pre:
        xbm(rng.standard_normal((min(pre, 12), d)).astype(np.float32), rng.integers(0, 3, min(pre, 12)))
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = rng.integers(0, 3, n)
    start = xbm.queue_idx
    out = xbm(x, y)
    own = (start + np.arange(n)) % 12
    mem, mem_y = xbm.get_memory()
    mem = mem.astype(np.float64)
    x64 = x.astype(np.float64)
    want = _contrastive64(x64, y, mem, mem_y, own)
    assert out.loss == pytest.approx(want, rel=1e-4, abs=1e-6)
    # gradient: the memory is a constant (the copies receive nothing)
    g = _fd_grad(lambda z: _contrastive64(z, y, mem, mem_y, own), x64)
    np.testing.assert_allclose(out.grad, g, rtol=2e-3, atol=2e-3 * max(np.abs(g).max(), 1e-2))
    assert out.ref_grad is None and out.grad.shape == (n, d) and out.grad.dtype == np.float32


def test_no_item_is_compared_with_itself():
    # every label distinct: the only same-label memory entry of a row is its own copy
    x = np.array([[1, 0], [0, 1], [-1, 0.5]], np.float32)
    xbm = CrossBatchMemory(ContrastiveLoss(pos_margin=0.0, neg_margin=10.0), 2, memory_size=8)
    out = xbm(x, np.array([0, 1, 2]))
    assert out.terms["pos_loss"] == 0.0
    # two identical rows with the same label are still a positive pair of each other (d = 0)
    x2 = np.array([[1, 0], [1, 0]], np.float32)
    xbm2 = CrossBatchMemory(ContrastiveLoss(pos_margin=-1.0), 2, memory_size=8)
    out2 = xbm2(x2, np.array([0, 0]))
    assert out2.terms["pos_loss"] == pytest.approx(1.0)  # [0 - (-1)]+ on the two cross pairs


def test_enqueue_mask_rows_enter_queue_and_are_not_queries():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 3)).astype(np.float32)
    y = np.array([0, 1, 0, 1, 2, 2])
    mask = np.array([True, True, True, False, False, False])
    xbm = CrossBatchMemory(ContrastiveLoss(), 3, memory_size=8)
    out = xbm(x, y, enqueue_mask=mask)
    assert xbm.queue_idx == 3
    np.testing.assert_array_equal(xbm.embedding_memory[:3], x[:3])
    assert np.all(out.grad[mask] == 0)
    q = x[~mask].astype(np.float64)
    want = _contrastive64(q, y[~mask], x[mask].astype(np.float64), y[mask])  # no self removal
    assert out.loss == pytest.approx(want, rel=1e-5)
    g = _fd_grad(lambda z: _contrastive64(z, y[~mask], x[mask].astype(np.float64), y[mask]), q)
    np.testing.assert_allclose(out.grad[~mask], g, rtol=2e-3, atol=1e-4)


def test_all_rows_enqueued_gives_zero_loss_and_nothing_enqueued_changes_nothing():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 2)).astype(np.float32)
    xbm = CrossBatchMemory(ContrastiveLoss(), 2, memory_size=5)
    out = xbm(x, np.array([0, 0, 1, 1]), enqueue_mask=np.ones(4, bool))
    assert out.loss == 0.0 and np.all(out.grad == 0) and xbm.queue_idx == 4
    out = xbm(x, np.array([0, 0, 1, 1]), enqueue_mask=np.zeros(4, bool))
    assert xbm.queue_idx == 4 and not xbm.has_been_filled
    assert np.isfinite(out.loss) and out.loss > 0


def test_empty_batch_and_empty_memory():
    xbm = CrossBatchMemory(ContrastiveLoss(), 3, memory_size=4)
    out = xbm(np.zeros((0, 3), np.float32), np.zeros(0, np.int64))
    assert out.loss == 0.0 and out.grad.shape == (0, 3)
    assert xbm.queue_idx == 0 and not xbm.has_been_filled


def test_reset_queue_empties_everything():
    rng = np.random.default_rng(4)
    xbm = CrossBatchMemory(TripletMarginLoss(), 3, memory_size=4)
    for _ in range(3):
        xbm(rng.standard_normal((3, 3)).astype(np.float32), np.array([0, 0, 1]))
    assert xbm.has_been_filled
    xbm.reset_queue()
    assert (xbm.queue_idx, xbm.has_been_filled, xbm.num_stored) == (0, False, 0)
    assert not xbm.embedding_memory.any() and not xbm.label_memory.any()


def test_miner_sees_queries_against_memory():
    calls = []

    class Spy(miners.PairMarginMiner):
        def mine(self, e, lab, r, rl):
            calls.append((e.shape, None if r is None else r.shape))
            return super().mine(e, lab, r, rl)

    rng = np.random.default_rng(5)
    xbm = CrossBatchMemory(ContrastiveLoss(), 3, memory_size=10, miner=Spy())
    xbm(rng.standard_normal((4, 3)).astype(np.float32), np.array([0, 0, 1, 1]))
    xbm(rng.standard_normal((4, 3)).astype(np.float32), np.array([0, 0, 1, 1]))
    assert calls == [((4, 3), (4, 3)), ((4, 3), (8, 3))]


class _OwnsWeights(BaseMetricLossFunction):
    def __init__(self):
        super().__init__()
        self.W = Parameter(np.ones((3, 2)))

    def parameters(self):
        return [self.W]


class _Unsupported(BaseMetricLossFunction):
    pass


def test_losses_owning_weights_are_rejected():
    with pytest.raises(TypeError, match="owns learnable weights"):
        CrossBatchMemory(_OwnsWeights(), 2)
    with pytest.raises(TypeError, match="does not support _Unsupported"):
        CrossBatchMemory(_Unsupported(), 2)
    with pytest.raises(TypeError, match="metric loss"):
        CrossBatchMemory(lambda e, lab: 0.0, 2)


@pytest.mark.parametrize(
    "name",
    ["NormalizedSoftmaxLoss", "ProxyAnchorLoss", "ProxyNCALoss", "ArcFaceLoss", "CosFaceLoss", "P2SGradLoss"],
)
def test_proxy_losses_are_rejected(name):
    cls = getattr(losses, name, None)
    if cls is None:
        pytest.skip(f"{name} not available yet")
    with pytest.raises(TypeError, match="CrossBatchMemory does not support"):
        CrossBatchMemory(cls(num_classes=3, embedding_size=4), 4)


def test_subclass_of_supported_loss_is_accepted():
    class MyContrastive(ContrastiveLoss):
        pass

    CrossBatchMemory(MyContrastive(), 2)
    assert "TripletMarginLoss" in CrossBatchMemory.supported_losses()


def test_bad_inputs():
    xbm = CrossBatchMemory(ContrastiveLoss(), 3, memory_size=4)
    x = np.zeros((5, 3), np.float32) + 1
    with pytest.raises(ValueError, match="memory_size"):
        xbm(x, np.zeros(5, np.int64))
    with pytest.raises(ValueError, match="embedding_size"):
        xbm(np.ones((2, 2), np.float32), np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="mutually exclusive"):
        xbm(
            x[:2], np.zeros(2, np.int64), indices_tuple=(np.zeros(0, int),) * 3, enqueue_mask=np.ones(2, bool)
        )
    with pytest.raises(TypeError, match="enqueue_mask"):
        xbm(x[:2], np.zeros(2, np.int64), enqueue_mask=np.ones(2, np.int64))
    with pytest.raises(ValueError, match="enqueue_mask"):
        xbm(x[:2], np.zeros(2, np.int64), enqueue_mask=np.ones(3, bool))
    with pytest.raises(ValueError, match="memory_size"):
        xbm(x, np.zeros(5, np.int64), enqueue_mask=np.ones(5, bool))
    with pytest.raises(ValueError, match="labels"):
        xbm(x[:2], np.zeros(3, np.int64))
    with pytest.raises(TypeError, match="labels"):
        xbm(x[:2], np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="NaN"):
        xbm(np.full((2, 3), np.nan, np.float32), np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="memory_size"):
        CrossBatchMemory(ContrastiveLoss(), 3, memory_size=0)
    with pytest.raises(TypeError, match="embedding_size"):
        CrossBatchMemory(ContrastiveLoss(), 3.0)
    assert xbm.queue_idx == 0  # failed calls enqueue nothing
