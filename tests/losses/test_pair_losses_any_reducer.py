"""The pair kernels' per-term protocol: a loss with a reducer that is not fused (a subclass of
MeanReducer, ThresholdReducer(low=0)) takes the per-term path (losses -> reducer -> weighted
backward) and must give the fused path's value and gradient; given tuples equal to all the pairs
or triplets must give the all-pairs result (the scatter-add backwards)."""

import numpy as np
import pytest

from mantissa_embed import utils
from mantissa_embed.distances import CosineSimilarity
from mantissa_embed.losses import ContrastiveLoss, LiftedStructureLoss, NTXentLoss, TripletMarginLoss
from mantissa_embed.reducers import AvgNonZeroReducer, MeanReducer, ThresholdReducer

BACKENDS = ["mantissa", "numpy"]


class PlainMean(MeanReducer):
    """Same reduction as MeanReducer, but a user subclass: never fused."""


def _batch(seed, n=14, d=6, k=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)).astype(np.float32), rng.integers(0, k, n)


def _same(a, b, rtol=1e-5, atol=1e-6):
    assert a.loss == pytest.approx(b.loss, rel=rtol, abs=atol)
    assert a.terms.keys() == b.terms.keys()
    for k in a.terms:
        assert a.terms[k] == pytest.approx(b.terms[k], rel=rtol, abs=atol)
    np.testing.assert_allclose(a.grad, b.grad, rtol=1e-4, atol=1e-6)
    if a.ref_grad is not None:
        np.testing.assert_allclose(a.ref_grad, b.ref_grad, rtol=1e-4, atol=1e-6)


CASES = [
    (ContrastiveLoss, dict(pos_margin=0.1, neg_margin=0.9)),
    (ContrastiveLoss, dict(pos_margin=0.6, neg_margin=0.2, distance=CosineSimilarity())),
    (TripletMarginLoss, dict(margin=0.3)),
    (TripletMarginLoss, dict(margin=0.3, swap=True)),
    (TripletMarginLoss, dict(margin=0.3, smooth_loss=True)),
    (TripletMarginLoss, dict(margin=0.2, swap=True, distance=CosineSimilarity())),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "cls,kw,tuples",
    [
        (c, k, t)
        for c, k in CASES
        for t in ("all", "pairs", "triplets", "ref")
        if not (t == "ref" and k.get("swap"))
    ],
)  # swap: no ref_emb
def test_unfused_reducer_equals_fused(backend, cls, kw, tuples):
    x, y = _batch(3)
    args = dict(embeddings=x, labels=y)
    if tuples == "pairs":
        a1, p, a2, n = utils.get_all_pairs_indices(y)
        args["indices_tuple"] = (a1[::2], p[::2], np.r_[a2, a2[:5]], np.r_[n, n[:5]])  # with repeats
    elif tuples == "triplets":
        a, p, n = utils.get_all_triplets_indices(y)
        args["indices_tuple"] = (np.r_[a[::3], a[:4]], np.r_[p[::3], p[:4]], np.r_[n[::3], n[:4]])
    elif tuples == "ref":
        r, ry = _batch(4, n=9)
        args.update(ref_emb=r, ref_labels=ry)
    for fused, plain in ((MeanReducer(), PlainMean()), (AvgNonZeroReducer(), ThresholdReducer(low=0))):
        a = cls(reducer=fused, backend=backend, **kw)(**args)
        b = cls(reducer=plain, backend=backend, **kw)(**args)
        _same(b, a)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cls", [NTXentLoss, LiftedStructureLoss])
def test_given_all_pairs_equal_the_all_pairs_path(backend, cls):
    x, y = _batch(5)
    loss = cls(backend=backend)
    _same(loss(x, y, indices_tuple=utils.get_all_pairs_indices(y)), loss(x, y))
