"""Softmax-over-pairs losses: bad input raises a clear error naming the argument; batches with
no valid pair (and empty batches) give loss 0 with a zero gradient, never NaN."""

import numpy as np
import pytest

from mantissa_embed import distances, reducers
from mantissa_embed.losses import (
    ContrastiveLoss,
    InstanceLoss,
    NCALoss,
    NPairsLoss,
    NTXentLoss,
    SelfSupervisedLoss,
    SupConLoss,
)

ALL = [NTXentLoss, SupConLoss, NCALoss, NPairsLoss, InstanceLoss]
rng = np.random.default_rng(0)
X = rng.standard_normal((6, 4)).astype(np.float32)
Y = np.array([0, 0, 1, 1, 2, 2])


@pytest.mark.parametrize("cls", ALL)
def test_bad_inputs_name_the_argument(cls):
    loss = cls()
    with pytest.raises(ValueError, match="labels"):
        loss(X, Y[:5])
    with pytest.raises(TypeError, match="labels"):
        loss(X, Y.astype(np.float32))
    with pytest.raises(ValueError, match="embeddings"):
        loss(X[None], Y)
    bad = X.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="embeddings"):
        loss(bad, Y)
    with pytest.raises(TypeError, match="embeddings"):
        loss(X.astype(str), Y)


@pytest.mark.parametrize("cls", [NTXentLoss, SupConLoss, NCALoss])
def test_bad_ref_inputs(cls):
    loss = cls()
    with pytest.raises(ValueError, match="ref_emb"):
        loss(X, Y, ref_emb=X[:, :3], ref_labels=Y)
    with pytest.raises(ValueError, match="ref_labels"):
        loss(X, Y, ref_emb=X[:4], ref_labels=Y)
    bad = X.copy()
    bad[0, 0] = np.inf
    with pytest.raises(ValueError, match="ref_emb"):
        loss(X, Y, ref_emb=bad, ref_labels=Y)


@pytest.mark.parametrize("cls", [NTXentLoss, SupConLoss])
@pytest.mark.parametrize("t", [0, -1.0, float("nan")])
def test_bad_temperature(cls, t):
    with pytest.raises(ValueError, match="temperature"):
        cls(temperature=t)
    with pytest.raises(TypeError, match="temperature"):
        cls(temperature="0.1")


def test_unsupported_arguments():
    with pytest.raises(ValueError, match="ref_emb"):
        NPairsLoss()(X, Y, ref_emb=X.copy(), ref_labels=Y)
    with pytest.raises(ValueError, match="ref_emb"):
        InstanceLoss()(X, Y, ref_emb=X.copy(), ref_labels=Y)
    with pytest.raises(ValueError, match="indices_tuple"):
        InstanceLoss()(X, Y, indices_tuple=(np.array([0]), np.array([1]), np.array([2])))
    with pytest.raises(ValueError, match="labels"):
        InstanceLoss()(X, None)
    with pytest.raises(ValueError, match="labels"):
        NCALoss()(X, None, indices_tuple=(np.array([0]), np.array([1]), np.array([2])))
    with pytest.raises(ValueError, match="labels"):
        NPairsLoss()(X, None, indices_tuple=(np.array([0]), np.array([1]), np.array([2])))
    with pytest.raises(TypeError, match="CosineSimilarity"):
        InstanceLoss(distance=distances.LpDistance())
    with pytest.raises(ValueError, match="positive or negative"):
        SupConLoss()(
            X, Y, indices_tuple=(np.array([0, 1]), np.array([1, 2]), np.array([0, 3]), np.array([1, 4]))
        )
    # the reference set may be the batch itself (same objects), as PML allows
    out = NPairsLoss()(X, Y, ref_emb=X, ref_labels=Y)
    assert out.loss == pytest.approx(NPairsLoss()(X, Y).loss)


def test_self_supervised_rules():
    with pytest.raises(TypeError, match="not supported for NPairsLoss"):
        SelfSupervisedLoss(NPairsLoss())
    with pytest.raises(TypeError, match="not supported for InstanceLoss"):
        SelfSupervisedLoss(InstanceLoss())
    with pytest.raises(TypeError, match="symmetric"):
        SelfSupervisedLoss(NTXentLoss(), symmetric=1)
    w = SelfSupervisedLoss(NTXentLoss())
    with pytest.raises(ValueError, match="ref_emb"):
        w(X, X[:5])
    with pytest.raises(ValueError, match="embeddings"):
        w(X[None], X[None])
    out = SelfSupervisedLoss(ContrastiveLoss())(X, X + 0.1)
    assert out.grad.shape == X.shape and out.ref_grad.shape == X.shape


def _assert_zero(out, n, d, m=None):
    assert out.loss == 0.0
    assert out.grad.shape == (n, d) and not out.grad.any()
    if m is not None:
        assert out.ref_grad.shape == (m, d) and not out.ref_grad.any()
    assert all(v == 0.0 for v in out.terms.values())


@pytest.mark.parametrize("cls", ALL)
def test_empty_batch(cls):
    _assert_zero(cls()(np.zeros((0, 4), np.float32), np.zeros(0, np.int64)), 0, 4)


@pytest.mark.parametrize("cls", ALL)
def test_single_embedding(cls):
    out = cls()(X[:1], Y[:1])
    assert out.loss == 0.0 and not out.grad.any()


@pytest.mark.parametrize("red", [None, reducers.SumReducer(), reducers.MeanReducer()])
@pytest.mark.parametrize("cls", [NTXentLoss, SupConLoss])
@pytest.mark.parametrize("labels", [np.zeros(6, np.int64), np.arange(6)])
def test_no_valid_pairs(cls, labels, red):
    """One class (no negative) or all classes distinct (no positive): loss 0, zero gradient."""
    kw = {} if red is None else {"reducer": red}
    _assert_zero(cls(**kw)(X, labels), 6, 4)
    rl = labels[:3] if labels[0] == labels[1] else labels[:3] + 100
    _assert_zero(cls(**kw)(X, labels, ref_emb=X[:3] + 1, ref_labels=rl), 6, 4, 3)


def test_nca_without_same_label_reference():
    _assert_zero(NCALoss()(X, np.arange(6)), 6, 4)
    _assert_zero(NCALoss()(X, Y, ref_emb=X[:2], ref_labels=np.array([7, 8])), 6, 4, 2)


def test_npairs_without_positive():
    _assert_zero(NPairsLoss()(X, np.arange(6)), 6, 4)


@pytest.mark.parametrize("cls", [NTXentLoss, SupConLoss])
def test_tiny_tuples_give_zero(cls):
    """PML's rule: every array of the pair tuple has at most one element -> loss 0."""
    it = (np.array([0]), np.array([1]), np.array([0]), np.array([2]))
    _assert_zero(cls()(X, Y, indices_tuple=it), 6, 4)
    empty = (np.zeros(0, np.int64),) * 4
    _assert_zero(cls()(X, Y, indices_tuple=empty), 6, 4)
