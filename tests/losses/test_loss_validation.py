"""Bad inputs to the losses raise ValueError / TypeError naming the problem."""

import numpy as np
import pytest

from mantissa_embed.losses import ContrastiveLoss, TripletMarginLoss

LOSSES = [ContrastiveLoss, TripletMarginLoss]


def _data(n=6, d=3):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, d)).astype(np.float32), rng.integers(0, 2, n)


@pytest.mark.parametrize("cls", LOSSES)
@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_call_errors(cls, backend):
    loss = cls(backend=backend)
    x, y = _data()
    bad = x.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="embeddings contains NaN"):
        loss(bad, y)
    bad[1, 2] = np.inf
    with pytest.raises(ValueError, match="embeddings"):
        loss(bad, y)
    with pytest.raises(ValueError, match="embeddings must be 2-D"):
        loss(x[0], y)
    with pytest.raises(TypeError, match="embeddings"):
        loss(x > 0, y)
    with pytest.raises(TypeError, match="labels"):
        loss(x, y.astype(np.float32))
    with pytest.raises(ValueError, match="labels must have length 6"):
        loss(x, y[:4])
    with pytest.raises(ValueError, match="labels and indices_tuple cannot both be None"):
        loss(x)
    with pytest.raises(ValueError, match="ref_labels is required"):
        loss(x, y, ref_emb=x)
    with pytest.raises(ValueError, match="ref_labels was given without ref_emb"):
        loss(x, y, ref_labels=y.copy())
    with pytest.raises(ValueError, match="ref_emb must have 3 columns"):
        loss(x, y, ref_emb=x[:, :2], ref_labels=y)
    with pytest.raises(ValueError, match="ref_labels must have length 2"):
        loss(x, y, ref_emb=x[:2], ref_labels=y.copy())
    with pytest.raises(ValueError, match=r"indices_tuple\[1\] \(p\) must hold indices in \[0, 6\)"):
        loss(x, y, indices_tuple=([0], [6], [1]))
    with pytest.raises(ValueError, match="indices_tuple"):
        loss(x, y, indices_tuple=([0], [-1], [1]))
    with pytest.raises(TypeError, match="integer dtype"):
        loss(x, y, indices_tuple=([0.0], [1.0], [2.0]))
    with pytest.raises(ValueError, match="3 .* or 4"):
        loss(x, y, indices_tuple=([0], [1]))
    with pytest.raises(ValueError, match="same length"):
        loss(x, y, indices_tuple=([0, 1], [1], [2]))
    with pytest.raises(TypeError, match="indices_tuple must be a tuple"):
        loss(x, y, indices_tuple=np.zeros((3, 2), int))
    with pytest.raises(ValueError, match="at least one column"):
        loss(np.zeros((3, 0), np.float32), y[:3])
    # the index arrays may index ref_emb (M rows) rather than the batch
    out = loss(x, None, indices_tuple=([0], [7], [8]), ref_emb=np.ones((9, 3), np.float32))
    assert out.ref_grad.shape == (9, 3)


@pytest.mark.parametrize("cls", LOSSES)
def test_constructor_errors(cls):
    with pytest.raises(ValueError, match="backend"):
        cls(backend="torch")
    with pytest.raises(TypeError, match="distance"):
        cls(distance="euclidean")
    with pytest.raises(TypeError, match="reducer"):
        cls(reducer="mean")
    with pytest.raises(TypeError):
        cls(unknown=1)
    with pytest.raises(ValueError, match="embedding_reg_weight"):
        cls(embedding_reg_weight=float("nan"))


def test_margin_and_option_errors():
    with pytest.raises(ValueError, match="pos_margin"):
        ContrastiveLoss(pos_margin=float("inf"))
    with pytest.raises(TypeError, match="neg_margin"):
        ContrastiveLoss(neg_margin="1")
    with pytest.raises(ValueError, match="margin"):
        TripletMarginLoss(margin=float("nan"))
    with pytest.raises(TypeError, match="swap"):
        TripletMarginLoss(swap=1)
    with pytest.raises(TypeError, match="triplets_per_anchor"):
        TripletMarginLoss(triplets_per_anchor="some")
    with pytest.raises(ValueError, match="triplets_per_anchor"):
        TripletMarginLoss(triplets_per_anchor=0)
