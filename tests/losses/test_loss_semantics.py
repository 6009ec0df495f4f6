"""Loss semantics: PML's zero-loss rules, reducers (fused and generic paths), backends,
ref_emb / self-pair rules, swap restrictions, random triplets, embedding regularizer."""

import numpy as np
import pytest

from mantissa_embed import utils
from mantissa_embed.distances import CosineSimilarity
from mantissa_embed.losses import ContrastiveLoss, LossOutput, TripletMarginLoss
from mantissa_embed.reducers import AvgNonZeroReducer, MeanReducer


def _data(n=12, d=5, k=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)).astype(np.float32), rng.integers(0, k, n)


def _dist64(x, r=None):
    def nrm(z):
        z = z.astype(np.float64)
        return z / np.linalg.norm(z, axis=1, keepdims=True)

    q = nrm(x)
    rr = q if r is None else nrm(r)
    return np.linalg.norm(q[:, None] - rr[None], axis=2)


class SubAvg(AvgNonZeroReducer):
    """Same reduction, but not the exact class: takes the generic (numpy) path."""


class SubMean(MeanReducer):
    pass


@pytest.mark.parametrize("fused,generic", [(AvgNonZeroReducer, SubAvg), (MeanReducer, SubMean)])
@pytest.mark.parametrize(
    "make",
    [
        lambda r: ContrastiveLoss(pos_margin=0.1, neg_margin=0.9, reducer=r),
        lambda r: ContrastiveLoss(distance=CosineSimilarity(), pos_margin=0.8, neg_margin=0.3, reducer=r),
        lambda r: TripletMarginLoss(margin=0.3, reducer=r),
        lambda r: TripletMarginLoss(margin=0.3, swap=True, smooth_loss=True, reducer=r),
        lambda r: TripletMarginLoss(margin=0.2, distance=CosineSimilarity(), reducer=r),
    ],
)
def test_generic_reducer_path_equals_fused(fused, generic, make):
    x, y = _data()
    for kw in ({}, {"indices_tuple": utils.get_all_triplets_indices(y)}):
        a, b = make(fused())(x, y, **kw), make(generic())(x, y, **kw)
        assert a.loss == pytest.approx(b.loss, rel=1e-5)
        np.testing.assert_allclose(a.grad, b.grad, rtol=1e-4, atol=1e-6)
        assert a.terms.keys() == b.terms.keys()


def test_reducer_semantics_against_enumeration():
    """AvgNonZero: mean over loss > 0; Mean: mean over all terms (independent enumeration)."""
    x, y = _data(10, 4, 2, seed=5)
    d = _dist64(x)
    a, p, n = utils.get_all_triplets_indices(y)
    t = np.maximum(d[a, p] - d[a, n] + 0.3, 0)
    assert TripletMarginLoss(margin=0.3)(x, y).loss == pytest.approx(t[t > 0].mean(), rel=1e-5)
    assert TripletMarginLoss(margin=0.3, reducer=MeanReducer())(x, y).loss == pytest.approx(
        t.mean(), rel=1e-5
    )
    a1, p1, a2, n2 = utils.get_all_pairs_indices(y)
    tp, tn = d[a1, p1], np.maximum(1 - d[a2, n2], 0)
    assert ContrastiveLoss()(x, y).loss == pytest.approx(tp[tp > 0].mean() + tn[tn > 0].mean(), rel=1e-5)
    out = ContrastiveLoss(reducer=MeanReducer())(x, y)
    assert out.loss == pytest.approx(tp.mean() + tn.mean(), rel=1e-5)
    assert out.terms["pos_loss"] == pytest.approx(tp.mean(), rel=1e-5)


@pytest.mark.parametrize(
    "make",
    [
        ContrastiveLoss,
        TripletMarginLoss,
        lambda **k: TripletMarginLoss(swap=True, smooth_loss=True, **k),
        lambda **k: ContrastiveLoss(distance=CosineSimilarity(), **k),
    ],
)
def test_backends_agree(make):
    x, y = _data(20, 6, 4)
    for kw in ({}, {"indices_tuple": utils.get_all_pairs_indices(y)}):
        a = make(backend="mantissa")(x, y, **kw)
        b = make(backend="numpy")(x, y, **kw)
        assert a.loss == pytest.approx(b.loss, rel=1e-5)
        np.testing.assert_allclose(a.grad, b.grad, rtol=1e-4, atol=1e-6)


def test_contrastive_zero_when_at_most_one_pair_each():
    """PML: all(len(x) <= 1 for x in the pair tuple) -> loss 0, even with a violating pair."""
    x = np.array([[1, 0], [0, 1], [1, 0.01]], np.float32)
    out = ContrastiveLoss()(x, None, indices_tuple=([0], [1], [0], [2]))
    assert out.loss == 0.0 and not out.grad.any()
    out = ContrastiveLoss()(x, None, indices_tuple=([0, 0], [1, 1], [0], [2]))
    assert out.loss > 0
    # all pairs of [0, 1]: one negative pair each way -> 2 negatives, still computed
    out = ContrastiveLoss()(x[:2], np.array([0, 1]))
    assert out.loss == pytest.approx(0.0)  # distance sqrt(2) > neg_margin 1
    out = ContrastiveLoss()(x[:2], np.array([0, 0]))  # two positive pairs (0,1), (1,0)
    assert out.loss == pytest.approx(np.sqrt(2), rel=1e-6)


def test_ref_emb_self_pairs_rule():
    """Self pairs are excluded iff ref_labels is labels (PML's identity rule)."""
    x, y = _data(8, 3, 2)
    base = ContrastiveLoss()(x, y)
    same = ContrastiveLoss()(x, y, ref_emb=x, ref_labels=y)
    other = ContrastiveLoss()(x, y, ref_emb=x, ref_labels=y.copy())
    assert same.loss == pytest.approx(base.loss, rel=1e-6)
    np.testing.assert_allclose(same.grad + same.ref_grad, base.grad, rtol=1e-5, atol=1e-7)
    # with copies, (i, i) pairs are positives at distance 0: inactive for pos_margin=0
    assert other.loss == pytest.approx(base.loss, rel=1e-6)
    t_same, t_other = TripletMarginLoss(margin=0.3), TripletMarginLoss(margin=0.3)
    t_same(x, y, ref_emb=x, ref_labels=y)
    t_other(x, y, ref_emb=x, ref_labels=y.copy())
    n_self = sum(int(np.sum(y != c)) for c in y)  # the (a, a, n) triplets count only in the latter
    assert t_other.stats["num_triplets"] == t_same.stats["num_triplets"] + n_self


def test_swap_requires_batch_reference():
    x, y = _data()
    with pytest.raises(ValueError, match="swap"):
        TripletMarginLoss(swap=True)(x, y, ref_emb=x[:5], ref_labels=y[:5])


def test_random_triplets_per_anchor():
    x, y = _data(16, 4, 3)
    a = TripletMarginLoss(triplets_per_anchor=5, seed=1)(x, y)
    b = TripletMarginLoss(triplets_per_anchor=5, seed=1)(x, y)
    c = TripletMarginLoss(triplets_per_anchor=5, seed=2)(x, y)
    assert a.loss == b.loss and a.loss != c.loss
    np.testing.assert_array_equal(a.grad, b.grad)


def test_embedding_regularizer_and_terms():
    x, y = _data()

    def l2reg(e):
        n = len(e)
        return LossOutput(
            loss=float(np.mean(np.sum(e.astype(np.float64) ** 2, axis=1))),
            grad=(2 * e / n).astype(np.float32),
        )

    plain = TripletMarginLoss(margin=0.3)(x, y)
    reg = TripletMarginLoss(margin=0.3, embedding_regularizer=l2reg, embedding_reg_weight=0.5)(x, y)
    r = l2reg(x)
    assert reg.terms["embedding_reg_loss"] == pytest.approx(0.5 * r.loss)
    assert reg.loss == pytest.approx(plain.loss + 0.5 * r.loss)
    np.testing.assert_allclose(reg.grad, plain.grad + 0.5 * r.grad, rtol=1e-6, atol=1e-7)
    assert set(ContrastiveLoss(embedding_regularizer=l2reg).sub_loss_names()) == {
        "pos_loss",
        "neg_loss",
        "embedding_reg_loss",
    }
    with pytest.raises(TypeError, match="embedding_regularizer"):
        TripletMarginLoss(embedding_regularizer=3)


def test_stats_and_parameters():
    x, y = _data()
    loss = TripletMarginLoss(margin=0.3)
    out = loss(x, y)
    assert loss.stats["num_triplets"] == len(utils.get_all_triplets_indices(y)[0])
    assert 0 < loss.stats["num_nonzero"] <= loss.stats["num_triplets"]
    assert loss.parameters() == []
    assert float(out) == out.loss
