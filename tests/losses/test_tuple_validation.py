"""Angular / Margin / TupletMargin / IntraPairVariance / VICReg / MultipleLosses: bad arguments and bad
inputs raise a clear error naming the argument; batches without a valid pair / triplet (and N=0)
give a loss of 0 with a zero gradient."""

import numpy as np
import pytest

from mantissa_embed import distances, losses, miners
from mantissa_embed.parameter import Parameter

LABELLED = [losses.AngularLoss, losses.MarginLoss, losses.TupletMarginLoss, losses.IntraPairVarianceLoss]
X = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
Y = np.array([0, 0, 1, 1, 2, 2])


@pytest.mark.parametrize("cls", LABELLED)
def test_bad_call_inputs(cls):
    f = cls()
    with pytest.raises(ValueError, match="labels"):
        f(X, Y[:4])
    with pytest.raises(TypeError, match="labels"):
        f(X, Y.astype(np.float32))
    with pytest.raises(ValueError, match="embeddings"):
        f(X[None], Y)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="embeddings"):
        f(bad, Y)
    with pytest.raises(ValueError, match="labels"):
        f(X)
    with pytest.raises(ValueError, match="ref_emb"):
        f(X, Y, ref_emb=X[:, :2], ref_labels=Y)
    with pytest.raises(ValueError, match="indices_tuple"):
        f(X, Y, (np.array([0]), np.array([7]), np.array([2])))


@pytest.mark.parametrize("cls", LABELLED)
@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_zero_loss_zero_grad(cls, backend):
    f = cls(backend=backend)
    cases = [(X[:1], Y[:1]), (X[:0], Y[:0])]  # N = 1, N = 0
    if cls is not losses.IntraPairVarianceLoss:  # (its pos / neg terms stand alone)
        cases += [
            (X, np.zeros(6, np.int64)),  # one class: no negative
            (X, np.arange(6)),
        ]  # all distinct: no positive
    for x, y in cases:
        out = f(x, y)
        assert out.loss == 0.0 and out.grad.shape == x.shape and not out.grad.any()
        assert all(v == 0.0 for v in out.terms.values())
    out = f(X, Y, (np.array([], np.int64),) * 3)
    assert out.loss == 0.0 and not out.grad.any()
    out = f(X[:0], Y[:0], ref_emb=X, ref_labels=Y)
    assert out.loss == 0.0 and out.ref_grad.shape == X.shape and not out.ref_grad.any()


def test_angular_errors():
    with pytest.raises(ValueError, match="alpha"):
        losses.AngularLoss(alpha=90)
    with pytest.raises(TypeError, match="alpha"):
        losses.AngularLoss(alpha="40")
    with pytest.raises(TypeError, match="LpDistance"):
        losses.AngularLoss(distance=distances.CosineSimilarity())
    with pytest.raises(ValueError, match="LpDistance"):
        losses.AngularLoss(distance=distances.LpDistance(power=2))
    with pytest.raises(ValueError, match="labels"):  # negatives come from the labels
        losses.AngularLoss()(X, None, (np.array([0]), np.array([1]), np.array([2])))


def test_margin_errors_and_parameters():
    with pytest.raises(TypeError, match="num_classes"):
        losses.MarginLoss(num_classes=2.5)
    with pytest.raises(ValueError, match="num_classes"):
        losses.MarginLoss(num_classes=0)
    with pytest.raises(TypeError, match="learn_beta"):
        losses.MarginLoss(learn_beta=1)
    with pytest.raises(TypeError, match="triplets_per_anchor"):
        losses.MarginLoss(triplets_per_anchor="some")
    with pytest.raises(ValueError, match="num_classes"):
        losses.MarginLoss(num_classes=2)(X, Y)  # label 2 has no beta
    with pytest.raises(ValueError, match="labels"):
        losses.MarginLoss(num_classes=3)(X, None, (np.array([0]), np.array([1]), np.array([2])))
    f = losses.MarginLoss(learn_beta=True, num_classes=3, beta=0.8)
    (p,) = f.parameters()
    assert isinstance(p, Parameter) and p.shape == (3,) and np.allclose(p.data, 0.8)
    f(X, Y)
    g1 = p.grad.copy()
    assert g1.any()
    f(X, Y)
    np.testing.assert_allclose(p.grad, 2 * g1, rtol=1e-6)  # accumulates
    assert losses.MarginLoss().parameters() == []
    # random triplets are reproducible under a seed
    a = losses.MarginLoss(triplets_per_anchor=2, seed=5)(X, Y)
    b = losses.MarginLoss(triplets_per_anchor=2, seed=5)(X, Y)
    assert a.loss == b.loss


def test_tuplet_errors():
    with pytest.raises(TypeError, match="CosineSimilarity"):
        losses.TupletMarginLoss(distance=distances.LpDistance())
    with pytest.raises(TypeError, match="scale"):
        losses.TupletMarginLoss(scale=None)
    f = losses.TupletMarginLoss()
    assert f.margin == pytest.approx(np.radians(5.73))
    # identical directions: arccos is clipped, no NaN
    x = np.repeat(X[:1], 4, axis=0) * np.array([[1.0], [2.0], [3.0], [1.0]], np.float32)
    out = f(np.vstack([x, X[2:4]]), np.array([0, 0, 0, 0, 1, 1]))
    assert np.isfinite(out.loss) and np.isfinite(out.grad).all()


def test_ipv_errors():
    with pytest.raises(TypeError, match="pos_eps"):
        losses.IntraPairVarianceLoss(pos_eps="a")
    with pytest.raises(ValueError, match="neg_eps"):
        losses.IntraPairVarianceLoss(neg_eps=float("nan"))


def test_vicreg_errors_and_edge_cases():
    with pytest.raises(ValueError, match="distance"):
        losses.VICRegLoss(distance=distances.LpDistance())
    with pytest.raises(ValueError, match="regularizer"):
        losses.VICRegLoss(embedding_regularizer=lambda e: None)
    with pytest.raises(ValueError, match="eps"):
        losses.VICRegLoss(eps=0)
    f = losses.VICRegLoss()
    with pytest.raises(ValueError, match="labels"):
        f(X, Y)
    with pytest.raises(ValueError, match="indices_tuple"):
        f(X, indices_tuple=(np.array([0]), np.array([1]), np.array([2])))
    with pytest.raises(ValueError, match="ref_emb"):
        f(X, ref_emb=X[:4])
    with pytest.raises(ValueError, match="embeddings"):
        f(X[0])
    out = f(X[:0])
    assert out.loss == 0.0 and out.grad.shape == (0, 3)
    out = f(X[:1], ref_emb=X[1:2])  # N = 1: only the invariance term
    assert out.terms["variance_loss1"] == 0.0 and out.terms["covariance_loss"] == 0.0
    assert out.loss == pytest.approx(25 * np.mean((X[0] - X[1]) ** 2.0), rel=1e-5)
    assert np.isfinite(out.grad).all() and np.isfinite(out.ref_grad).all()


def test_multiple_losses_errors_and_api():
    t, c = losses.TripletMarginLoss(), losses.ContrastiveLoss()
    with pytest.raises(TypeError, match="losses"):
        losses.MultipleLosses(t)
    with pytest.raises(ValueError, match="empty"):
        losses.MultipleLosses([])
    with pytest.raises(ValueError, match="weights"):
        losses.MultipleLosses([t, c], weights=[1.0])
    with pytest.raises(ValueError, match="weights"):
        losses.MultipleLosses({"t": t, "c": c}, weights={"t": 1.0})
    with pytest.raises(TypeError, match="weights"):
        losses.MultipleLosses([t, c], weights=[1.0, "x"])
    with pytest.raises(ValueError, match="miners"):
        losses.MultipleLosses({"t": t}, miners={"z": miners.BatchHardMiner()})
    with pytest.raises(TypeError, match="miners"):
        losses.MultipleLosses([t, c], miners={"t": None})
    f = losses.MultipleLosses([t, c], miners=[miners.BatchHardMiner(), None])
    with pytest.raises(ValueError, match="indices_tuple"):
        f(X, Y, (np.array([0]), np.array([1]), np.array([2])))
    out = losses.MultipleLosses({"t": t, "c": c}, weights={"t": 2.0, "c": 0.5})(X, Y)
    ot, oc = t(X, Y), c(X, Y)
    assert out.loss == pytest.approx(2 * ot.loss + 0.5 * oc.loss)
    np.testing.assert_allclose(out.grad, 2 * ot.grad + 0.5 * oc.grad, rtol=1e-6, atol=1e-7)
    assert out.terms == pytest.approx(
        {
            "t/loss": 2 * ot.loss,
            "c/pos_loss": 0.5 * oc.terms["pos_loss"],
            "c/neg_loss": 0.5 * oc.terms["neg_loss"],
        }
    )
    out = losses.MultipleLosses([t, c])(X, Y, ref_emb=X[:4], ref_labels=Y[:4])
    assert out.ref_grad.shape == (4, 3)
    np.testing.assert_allclose(
        out.ref_grad,
        t(X, Y, ref_emb=X[:4], ref_labels=Y[:4]).ref_grad + c(X, Y, ref_emb=X[:4], ref_labels=Y[:4]).ref_grad,
        rtol=1e-6,
        atol=1e-7,
    )
    # a learnable beta gets w times its gradient
    m1, m2 = losses.MarginLoss(learn_beta=True), losses.MarginLoss(learn_beta=True)
    losses.MultipleLosses([m1], weights=[3.0])(X, Y)
    m2(X, Y)
    np.testing.assert_allclose(m1.beta.grad, 3 * m2.beta.grad, rtol=1e-6)
    assert losses.MultipleLosses([m1, t]).parameters() == [m1.beta]
