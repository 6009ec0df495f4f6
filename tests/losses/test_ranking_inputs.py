"""Ranking losses: bad constructor arguments and bad call inputs raise ValueError / TypeError
naming the argument."""

import numpy as np
import pytest

from mantissa_embed import distances, losses

X = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
Y = np.array([0, 0, 1, 1, 2, 2])

ALL = {
    "FastAPLoss": lambda: losses.FastAPLoss(),
    "HistogramLoss": lambda: losses.HistogramLoss(),
    "RankedListLoss": lambda: losses.RankedListLoss(margin=0.4, Tn=1.0),
    "PNPLoss": lambda: losses.PNPLoss(),
    "ThresholdConsistentMarginLoss": lambda: losses.ThresholdConsistentMarginLoss(),
    "DynamicSoftMarginLoss": lambda: losses.DynamicSoftMarginLoss(),
}


@pytest.mark.parametrize("name", sorted(ALL))
def test_bad_call_inputs(name):
    loss = ALL[name]()
    with pytest.raises(ValueError, match="labels"):
        loss(X, Y[:5])
    with pytest.raises(TypeError, match="labels"):
        loss(X, Y.astype(np.float32))
    with pytest.raises(ValueError, match="embeddings"):
        loss(X[None], Y)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="embeddings"):
        loss(bad, Y)


@pytest.mark.parametrize("name", ["FastAPLoss", "HistogramLoss", "RankedListLoss", "PNPLoss"])
def test_ref_emb_not_supported(name):
    with pytest.raises(ValueError, match="ref_emb"):
        ALL[name]()(X, Y, ref_emb=X[:3], ref_labels=Y[:3])


@pytest.mark.parametrize("name", ["FastAPLoss", "RankedListLoss", "PNPLoss"])
def test_labels_required(name):
    with pytest.raises(ValueError, match="labels"):
        ALL[name]()(X, None)
    if name != "PNPLoss":  # PNP rejects the indices_tuple first, as PML
        with pytest.raises(ValueError, match="labels"):
            ALL[name]()(X, None, indices_tuple=(np.array([0]), np.array([1]), np.array([2])))


@pytest.mark.parametrize("name", ["RankedListLoss", "PNPLoss"])
def test_indices_tuple_not_supported(name):
    with pytest.raises(ValueError, match="indices_tuple"):
        ALL[name]()(X, Y, indices_tuple=(np.array([0]), np.array([1]), np.array([2])))


def test_constructor_arguments():
    with pytest.raises(TypeError, match="distance"):
        losses.FastAPLoss(distance=distances.CosineSimilarity())
    with pytest.raises(ValueError, match="distance"):
        losses.FastAPLoss(distance=distances.LpDistance(normalize_embeddings=False))
    with pytest.raises(ValueError, match="num_bins"):
        losses.FastAPLoss(num_bins=0)
    with pytest.raises(TypeError, match="num_bins"):
        losses.FastAPLoss(num_bins="10")
    with pytest.raises(ValueError, match="delta"):
        losses.HistogramLoss(n_bins=10, delta=0.5)
    with pytest.raises(ValueError, match="n_bins"):
        losses.HistogramLoss(n_bins=0)
    with pytest.raises(ValueError, match="imbalance"):
        losses.RankedListLoss(margin=0.4, Tn=1.0, imbalance=1.5)
    with pytest.raises(TypeError, match="margin"):
        losses.RankedListLoss(margin="a", Tn=1.0)
    with pytest.warns(UserWarning):
        losses.RankedListLoss(margin=0.4, Tn=6.0)
    with pytest.raises(ValueError, match="variant"):
        losses.PNPLoss(variant="X")
    with pytest.raises(TypeError, match="distance"):
        losses.PNPLoss(distance=distances.LpDistance())
    with pytest.raises(ValueError, match="anneal"):
        losses.PNPLoss(anneal=0)
    with pytest.raises(TypeError, match="distance"):
        losses.ThresholdConsistentMarginLoss(distance=distances.LpDistance())
    with pytest.raises(ValueError, match="margin_plus"):
        losses.ThresholdConsistentMarginLoss(margin_plus=float("nan"))
    with pytest.raises(ValueError, match="min_val"):
        losses.DynamicSoftMarginLoss(min_val=0)
    with pytest.raises(TypeError, match="distance"):
        losses.DynamicSoftMarginLoss(distance=distances.CosineSimilarity())
    with pytest.raises(ValueError, match="lambdaC"):
        losses.ManifoldLoss(3, lambdaC=-1)
    with pytest.raises(ValueError, match="K"):
        losses.ManifoldLoss(3, K=0)
    with pytest.raises(ValueError, match="alpha"):
        losses.ManifoldLoss(3, alpha=1.5)


def test_manifold_call_inputs():
    loss = losses.ManifoldLoss(3, K=2, seed=0)
    with pytest.raises(ValueError, match="labels"):
        loss(X, Y)
    with pytest.raises(ValueError, match="ref_emb"):
        loss(X, ref_emb=X)
    with pytest.raises(ValueError, match="l=3"):
        loss(np.zeros((6, 4), np.float32))
    with pytest.raises(ValueError, match="indices_tuple"):
        loss(X, indices_tuple=np.array([0, 1]))
    with pytest.raises(ValueError, match="indices_tuple"):
        loss(X, indices_tuple=np.array([0, 1, 2, 0, 1, 0]))
    with pytest.raises(TypeError, match="indices_tuple"):
        loss(X, indices_tuple=np.zeros(6))
    with pytest.raises(ValueError, match="K=5"):
        losses.ManifoldLoss(3, K=5, seed=0)(X[:4])
    assert not loss.proxies.grad.any()  # nothing accumulated by failed calls
