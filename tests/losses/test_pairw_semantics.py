"""Pair-weighting losses: zero loss and zero gradient when there is no valid pair, bad input errors,
constructor checks, both backends agreeing, and the O(N M) path of LiftedStructureLoss."""

import numpy as np
import pytest

from mantissa_embed import distances, losses, reducers

NAMES = [
    "MultiSimilarityLoss",
    "CircleLoss",
    "LiftedStructureLoss",
    "GeneralizedLiftedStructureLoss",
    "SignalToNoiseRatioContrastiveLoss",
]


def _x(n=6, d=4, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def _zero(out, shape):
    assert out.loss == 0.0 and out.grad.shape == shape and not out.grad.any()
    assert all(v == 0.0 for v in out.terms.values())


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("name", NAMES)
def test_no_valid_pair_gives_zero(name, backend):
    loss = getattr(losses, name)(backend=backend)
    x = _x()
    _zero(loss(x[:1], np.array([0])), (1, 4))
    _zero(loss(x[:0], np.zeros(0, np.int64)), (0, 4))
    # a single pair in the tuple (PML's shortcut)
    _zero(loss(x, None, (np.array([0]), np.array([1]), np.array([0]), np.array([2]))), x.shape)
    # empty index tuple
    e = np.zeros(0, np.int64)
    _zero(loss(x, None, (e, e, e, e)), x.shape)
    _zero(loss(x, None, (e, e, e)), x.shape)
    # reference labels that match nothing and no negatives: impossible; a ref set with no pair at all
    out = loss(x, np.zeros(6, np.int64), ref_emb=x[:0], ref_labels=np.zeros(0, np.int64))
    _zero(out, x.shape)
    assert out.ref_grad.shape == (0, 4)


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_one_sided_batches(backend):
    """Losses that need both kinds of pairs are 0 with only one kind (PML's semantics)."""
    x = _x()
    one, distinct = np.zeros(6, np.int64), np.arange(6)
    for y in (one, distinct):
        _zero(losses.CircleLoss(backend=backend)(x, y), x.shape)
        _zero(losses.LiftedStructureLoss(backend=backend)(x, y), x.shape)
    # MultiSimilarity and the generalized lifted loss charge each kind on its own
    for name in ("MultiSimilarityLoss", "GeneralizedLiftedStructureLoss"):
        out = getattr(losses, name)(backend=backend)(x, one)
        assert out.loss > 0 and np.abs(out.grad).max() > 0


@pytest.mark.parametrize("name", NAMES)
def test_backends_agree(name):
    rng = np.random.default_rng(3)
    x, r = _x(20, 8, 1), _x(9, 8, 2)
    y, ry = rng.integers(0, 4, 20), rng.integers(0, 4, 9)
    a = getattr(losses, name)()(x, y, ref_emb=r, ref_labels=ry)
    b = getattr(losses, name)(backend="numpy")(x, y, ref_emb=r, ref_labels=ry)
    assert a.loss == pytest.approx(b.loss, rel=1e-5)
    np.testing.assert_allclose(a.grad, b.grad, rtol=1e-4, atol=1e-6 * max(1, np.abs(b.grad).max()))
    np.testing.assert_allclose(
        a.ref_grad, b.ref_grad, rtol=1e-4, atol=1e-6 * max(1, np.abs(b.ref_grad).max())
    )


@pytest.mark.parametrize("name", NAMES)
def test_bad_call_input(name):
    loss = getattr(losses, name)()
    x, y = _x(), np.array([0, 0, 1, 1, 2, 2])
    with pytest.raises(ValueError, match="labels"):
        loss(x, y[:5])
    with pytest.raises(TypeError, match="labels"):
        loss(x, y.astype(np.float32))
    with pytest.raises(ValueError, match="embeddings"):
        loss(x[None], y)
    bad = x.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="embeddings"):
        loss(bad, y)
    with pytest.raises(ValueError, match="indices_tuple"):
        loss(x, None)
    with pytest.raises(ValueError, match="indices_tuple"):
        loss(x, None, (np.array([0]), np.array([9]), np.array([0]), np.array([1])))
    with pytest.raises(ValueError, match="ref_emb"):
        loss(x, y, ref_emb=x[:, :2], ref_labels=y)
    with pytest.raises(ValueError, match="ref_labels"):
        loss(x, y, ref_emb=x)


@pytest.mark.parametrize("name", ["MultiSimilarityLoss", "CircleLoss", "GeneralizedLiftedStructureLoss"])
def test_pair_both_positive_and_negative(name):
    x = _x()
    it = (np.array([0, 1]), np.array([2, 3]), np.array([0, 4]), np.array([2, 5]))
    with pytest.raises(ValueError, match="both positive and negative"):
        getattr(losses, name)()(x, None, it)


def test_constructor_checks():
    with pytest.raises(ValueError, match="alpha"):
        losses.MultiSimilarityLoss(alpha=0)
    with pytest.raises(ValueError, match="beta"):
        losses.MultiSimilarityLoss(beta=-1)
    with pytest.raises(TypeError, match="base"):
        losses.MultiSimilarityLoss(base="x")
    with pytest.raises(ValueError, match="gamma"):
        losses.CircleLoss(gamma=float("nan"))
    with pytest.raises(TypeError, match="CosineSimilarity"):
        losses.CircleLoss(distance=distances.LpDistance())
    with pytest.raises(TypeError, match="SNRDistance"):
        losses.SignalToNoiseRatioContrastiveLoss(distance=distances.LpDistance())
    with pytest.raises(TypeError, match="neg_margin"):
        losses.LiftedStructureLoss(neg_margin=None)
    with pytest.raises(ValueError, match="pos_margin"):
        losses.GeneralizedLiftedStructureLoss(pos_margin=float("inf"))
    with pytest.raises(TypeError, match="reducer"):
        losses.MultiSimilarityLoss(reducer="mean")
    assert losses.CircleLoss().op == pytest.approx(1.4) and losses.CircleLoss().delta_n == pytest.approx(0.4)
    for name in NAMES:
        assert repr(getattr(losses, name)()).startswith(name + "(")
        assert getattr(losses, name)().sub_loss_names()


def test_snr_zero_variance_row():
    x = _x()
    x[2] = 1.0  # constant row: zero variance
    with pytest.raises(ValueError, match="variance"):
        losses.SignalToNoiseRatioContrastiveLoss()(x, np.arange(6) % 2)


def test_generic_reducers_and_regularizer():
    """Any reducer goes through the element / pos_pair reduction; regularizer term is reported."""
    x, y = _x(12, 5), np.arange(12) % 3
    for name in NAMES:
        for red in (reducers.SumReducer(), reducers.ThresholdReducer(low=0.01), reducers.MeanReducer()):
            out = getattr(losses, name)(reducer=red)(x, y)
            assert np.isfinite(out.loss) and np.all(np.isfinite(out.grad))
    from mantissa_embed.regularizers import LpRegularizer

    out = losses.MultiSimilarityLoss(embedding_regularizer=LpRegularizer(), embedding_reg_weight=0.5)(x, y)
    assert set(out.terms) == {"loss", "embedding_reg_loss"}
    assert out.loss == pytest.approx(sum(out.terms.values()))


def test_lifted_large_batch_stays_small():
    """All pairs at N=512: no (positive pairs x negative pairs) matrix (PML's float32 matrices would be ~16 GB each)."""
    import tracemalloc

    x, y = _x(512, 16, 5), np.arange(512) % 16
    loss = losses.LiftedStructureLoss()
    tracemalloc.start()
    out = loss(x, y)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert np.isfinite(out.loss) and peak < 100 * 2**20
