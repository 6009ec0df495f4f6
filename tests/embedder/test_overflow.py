"""A finite image the network overflows on (3e38) is a ValueError naming that image in embed,
retrieve and verify, on both backends, with no numpy RuntimeWarning."""

import numpy as np
import pytest

from mantissa_embed import Embedder, models

pytestmark = pytest.mark.filterwarnings("error")  # a RuntimeWarning escaping fails the test

_MSG = r"the embedding of {} is not finite: the network overflowed float32 on a finite input; rescale"


@pytest.fixture(scope="module", params=["mantissa", "numpy"])
def case(request):
    rng = np.random.default_rng(0)
    X = rng.random((24, 1, 8, 8), dtype=np.float32)
    emb = Embedder(models.mlp_embedder(4), backend=request.param).fit(X, np.arange(24) % 3, batch_size=12)
    B = X.copy()
    B[3] = 3e38  # finite, but Dense(64) of it overflows float32
    assert np.isfinite(B).all()
    return emb, X, B


@pytest.mark.parametrize("normalize", [True, False])
def test_embed(case, normalize):
    emb, _, B = case
    with pytest.raises(ValueError, match=_MSG.format(r"X\[3\]")):
        emb.embed(B, normalize=normalize)
    with pytest.raises(ValueError, match=_MSG.format(r"X\[3\]")):
        emb.embed(B, batch_size=2)  # found in the second chunk, numbered in the whole array


def test_retrieve(case):
    emb, X, B = case
    with pytest.raises(ValueError, match=_MSG.format("query")):
        emb.retrieve(B[3], X, k=2)
    with pytest.raises(ValueError, match=_MSG.format(r"query\[3\]")):
        emb.retrieve(B, X, k=2)
    with pytest.raises(ValueError, match=_MSG.format(r"gallery\[3\]")):
        emb.retrieve(X[:2], B, k=2)


def test_verify(case):
    emb, X, B = case
    with pytest.raises(ValueError, match=_MSG.format("a")):
        emb.verify(B[3], X[0])
    with pytest.raises(ValueError, match=_MSG.format(r"b\[3\]")):
        emb.verify(X, B, threshold=None)


def test_finite_images_still_embed(case):
    emb, X, _ = case
    Z = emb.embed(X)
    assert Z.shape == (24, 4) and np.isfinite(Z).all()
