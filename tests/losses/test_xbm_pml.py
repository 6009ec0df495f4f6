"""Oracle: CrossBatchMemory equals pytorch-metric-learning's over sequences of calls: loss value,
gradient wrt the batch (torch autograd), cursor, fill state and memory contents, with and
without miners, enqueue masks and caller index tuples (rtol 1e-4)."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

torch = pytest.importorskip("torch")
pml_losses = pytest.importorskip("pytorch_metric_learning.losses")
pml_miners = pytest.importorskip("pytorch_metric_learning.miners")

from mantissa_embed import losses, miners  # noqa: E402

KINK = 1e-5

CONFIGS = {
    # name: (ours, theirs, margins whose kinks must be avoided on the distances)
    "contrastive": (
        lambda: (losses.ContrastiveLoss(), None),
        lambda: (pml_losses.ContrastiveLoss(), None),
        (0.0, 1.0),
    ),
    "contrastive_pm": (
        lambda: (losses.ContrastiveLoss(pos_margin=0.2, neg_margin=0.9), miners.PairMarginMiner()),
        lambda: (pml_losses.ContrastiveLoss(pos_margin=0.2, neg_margin=0.9), pml_miners.PairMarginMiner()),
        (0.2, 0.8, 0.9),
    ),
    "triplet": (
        lambda: (losses.TripletMarginLoss(margin=0.2), None),
        lambda: (pml_losses.TripletMarginLoss(margin=0.2), None),
        (),
    ),
    "triplet_tm": (
        lambda: (losses.TripletMarginLoss(margin=0.1), miners.TripletMarginMiner(margin=0.2)),
        lambda: (pml_losses.TripletMarginLoss(margin=0.1), pml_miners.TripletMarginMiner(margin=0.2)),
        (),
    ),
}


def _dist64(q, mem):
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    mn = mem / np.linalg.norm(mem, axis=1, keepdims=True)
    return np.linalg.norm(qn[:, None] - mn[None], axis=2)


def _triplet_kink(d, ql, ml, margin):
    """min |d_ap - d_an + margin| over the triplets of queries x memory (None if no triplet)."""
    best = np.inf
    for i in range(len(ql)):
        pos, neg = d[i, ml == ql[i]], d[i, ml != ql[i]]
        if len(pos) and len(neg):
            best = min(best, np.abs(pos[:, None] - neg[None] + margin).min())
    return best


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    cfg=st.sampled_from(sorted(CONFIGS)),
    mem=st.integers(3, 24),
    d=st.integers(2, 6),
    k=st.integers(2, 4),
    steps=st.integers(1, 6),
    mode=st.sampled_from(["plain", "mask", "tuple"]),
)
def test_sequence_matches_pml(seed, cfg, mem, d, k, steps, mode):
    rng = np.random.default_rng(seed)
    mk_ours, mk_theirs, margins = CONFIGS[cfg]
    loss, miner = mk_ours()
    tloss, tminer = mk_theirs()
    ours = losses.CrossBatchMemory(loss, d, memory_size=mem, miner=miner)
    theirs = pml_losses.CrossBatchMemory(tloss, d, memory_size=mem, miner=tminer)
    for _ in range(steps):
        n = int(rng.integers(2, min(mem, 10) + 1))
        x = rng.standard_normal((n, d)).astype(np.float32)
        y = rng.integers(0, k, n)
        mask = None
        it = None
        if mode == "mask":
            mask = rng.random(n) < 0.5
            mask[rng.integers(n)] = True  # PML marks the queue filled when nothing is enqueued
        # predict the memory after enqueueing, to skip float32 ties at hinge kinks
        enq = x if mask is None else x[mask]
        enq_y = y if mask is None else y[mask]
        pos = (ours.queue_idx + np.arange(len(enq))) % mem
        E = ours.embedding_memory.astype(np.float64).copy()
        L = ours.label_memory.copy()
        E[pos], L[pos] = enq, enq_y
        filled = ours.has_been_filled or ours.queue_idx + len(enq) >= mem
        m_used = mem if filled else ours.queue_idx + len(enq)
        q = x if mask is None else x[~mask]
        ql = y if mask is None else y[~mask]
        if len(q):
            dd = _dist64(q.astype(np.float64), E[:m_used])
            for mg in margins:
                assume(np.abs(dd - mg).min() > KINK)
            if cfg.startswith("triplet"):
                for mg in (0.2,) if cfg == "triplet" else (0.1, 0.2):
                    assume(_triplet_kink(dd, ql, L[:m_used], mg) > KINK)
        if mode == "tuple" and m_used > 0:
            t = int(rng.integers(0, 4))
            a, pp, nn = rng.integers(0, n, t), rng.integers(0, m_used, t), rng.integers(0, m_used, t)
            keep = (pp != pos[a]) & (nn != pos[a])  # a row against its own copy: distance 0, a kink
            it = (a[keep], pp[keep], nn[keep])
            if cfg.startswith("triplet") and keep.any():
                for mg in (0.2,) if cfg == "triplet" else (0.1, 0.2):
                    assume(np.abs(dd[it[0], it[1]] - dd[it[0], it[2]] + mg).min() > KINK)

        out = ours(x, y, indices_tuple=it, enqueue_mask=mask)
        xt = torch.tensor(x.astype(np.float64), requires_grad=True)
        tout = theirs(
            xt,
            torch.tensor(y),
            indices_tuple=None if it is None else tuple(torch.tensor(a) for a in it),
            enqueue_mask=None if mask is None else torch.tensor(mask),
        )
        if tout.requires_grad:
            tout.backward()
        g = np.zeros(x.shape) if xt.grad is None else xt.grad.numpy()

        assert out.loss == pytest.approx(tout.item(), rel=1e-4, abs=1e-6)
        np.testing.assert_allclose(out.grad, g, rtol=1e-4, atol=1e-4 * max(np.abs(g).max(initial=0), 1e-3))
        assert out.ref_grad is None
        assert ours.queue_idx == theirs.queue_idx
        assert ours.has_been_filled == theirs.has_been_filled
        np.testing.assert_array_equal(ours.label_memory, theirs.label_memory.numpy())
        np.testing.assert_array_equal(
            ours.embedding_memory, theirs.embedding_memory.numpy().astype(np.float32)
        )


SUPPORTED = [
    "AngularLoss",
    "CircleLoss",
    "ContrastiveLoss",
    "GeneralizedLiftedStructureLoss",
    "IntraPairVarianceLoss",
    "LiftedStructureLoss",
    "MarginLoss",
    "MultiSimilarityLoss",
    "NCALoss",
    "NTXentLoss",
    "SignalToNoiseRatioContrastiveLoss",
    "SupConLoss",
    "TripletMarginLoss",
    "TupletMarginLoss",
]


def _run_pair(ours, theirs, seed, d=5, steps=4, extra=None):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        x = rng.standard_normal((8, d)).astype(np.float32)
        y = rng.integers(0, 3, 8)
        out = ours(x, y)
        xt = torch.tensor(x.astype(np.float64), requires_grad=True)
        t = theirs(xt, torch.tensor(y))
        if t.requires_grad:
            t.backward()
        g = np.zeros(x.shape) if xt.grad is None else xt.grad.numpy()
        assert out.loss == pytest.approx(t.item(), rel=1e-4, abs=1e-6)
        np.testing.assert_allclose(out.grad, g, rtol=1e-4, atol=1e-4 * max(np.abs(g).max(initial=0), 1e-3))
        if extra is not None:
            extra()


@pytest.mark.parametrize("name", SUPPORTED)
def test_every_supported_loss_matches_pml(name):
    if not hasattr(losses, name):
        pytest.skip(f"{name} not available")
    assert name in losses.CrossBatchMemory.supported_losses()
    for seed in range(3):
        ours = losses.CrossBatchMemory(getattr(losses, name)(), 5, memory_size=20)
        theirs = pml_losses.CrossBatchMemory(getattr(pml_losses, name)(), 5, memory_size=20)
        _run_pair(ours, theirs, seed)


def test_margin_loss_with_learned_beta_is_supported_as_in_pml():
    if not hasattr(losses, "MarginLoss"):
        pytest.skip("MarginLoss not available")
    loss = losses.MarginLoss(learn_beta=True, num_classes=3)
    tloss = pml_losses.MarginLoss(learn_beta=True, num_classes=3)
    tloss.beta.data = tloss.beta.data.double()
    ours = losses.CrossBatchMemory(loss, 5, memory_size=20)
    theirs = pml_losses.CrossBatchMemory(tloss, 5, memory_size=20)

    def beta_grads_match():
        np.testing.assert_allclose(loss.beta.grad, tloss.beta.grad.numpy(), rtol=1e-4, atol=1e-6)

    _run_pair(ours, theirs, 7, extra=beta_grads_match)
