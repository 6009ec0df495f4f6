"""End to end on the real MNIST test set (``<repo>/../shared/data/mnist``).

Skipped when that folder is absent (e.g. on a user's machine); the digits end-to-end test in
``test_embedder.py`` always runs.

What is asserted, and why: trained on digits 0-4, the loss (all triplets, measured by an
independent numpy computation on held-out images) falls, and retrieval among *held-out*
images of the trained classes beats raw pixels by a wide margin on R-precision and MAP@R.
On the *unseen* classes 5-9, 1-NN on raw MNIST pixels is a very strong baseline (precision@1
0.970, MAP@R 0.358 on the 4,861 test images of 5-9), above what this 16-D trunk reaches after
8 epochs on 0-4 (the project's PyTorch reference: 0.781 / 0.306), so "beats raw pixels on
unseen classes" would be false; the unseen-class check here is "far above chance" instead.
"""

from pathlib import Path

import numpy as np
import pytest

from mantissa_embed import Embedder, datasets, models
from mantissa_embed.evaluation import retrieval_metrics

MNIST_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "mnist"

pytestmark = pytest.mark.skipif(
    not MNIST_DIR.is_dir(),
    reason=f"MNIST test set not found: checked {MNIST_DIR}; the data is expected at "
    "<repo>/../shared/data/mnist (the repository cloned next to shared/); "
    "the digits end-to-end test covers this path",
)


def _numpy_batch_hard_loss(Z, y, margin):
    """The default objective, computed independently in numpy: for every anchor, its farthest
    positive and nearest negative (batch hard), [d_ap - d_an + margin]+, averaged over the
    non-zero terms (PML's AvgNonZeroReducer); d Euclidean on L2-normalized rows."""
    Z = Z.astype(np.float64)
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    D = np.linalg.norm(Z[:, None] - Z[None], axis=2)
    same = y[:, None] == y[None]
    pos = same & ~np.eye(len(y), dtype=bool)
    hardest_pos = np.where(pos, D, -np.inf).max(axis=1)
    hardest_neg = np.where(~same, D, np.inf).min(axis=1)
    terms = np.maximum(hardest_pos - hardest_neg + margin, 0.0)[pos.any(axis=1) & (~same).any(axis=1)]
    return float(terms[terms > 0].mean()) if (terms > 0).any() else 0.0


@pytest.fixture(scope="module")
def mnist():
    X, y = datasets.load("mnist", split="test", data_dir=MNIST_DIR)
    assert X.shape == (10000, 1, 28, 28) and np.bincount(y).tolist()[:2] == [980, 1135]
    return X, y


def test_mnist_end_to_end(mnist):
    X, y = mnist
    Xs, ys, Xu, yu = datasets.split_by_class(X, y, [0, 1, 2, 3, 4])
    perm = np.random.default_rng(0).permutation(len(ys))
    tr, ho = perm[:2000], perm[2000:3000]
    uidx = np.random.default_rng(1).permutation(len(yu))[:1000]

    emb = Embedder(
        models.small_cnn_embedder(embed_dim=16), loss="triplet", miner="batch_hard", optimizer="sgd"
    )
    emb.net.build((1, 28, 28))
    probe = ho[:150]
    before = _numpy_batch_hard_loss(emb.net.forward(Xs[probe]), ys[probe], emb.margin)
    emb.fit(Xs[tr], ys[tr], epochs=3, batch_size=64, lr=0.05, augment=None, schedule=None)
    after = _numpy_batch_hard_loss(emb.embed(Xs[probe]), ys[probe], emb.margin)
    assert after < 0.75 * before, (before, after)

    seen = retrieval_metrics(emb.embed(Xs[ho]), ys[ho])
    raw = retrieval_metrics(Xs[ho].reshape(len(ho), -1), ys[ho])
    assert seen["r_precision"] > raw["r_precision"] + 0.1, (seen, raw)
    assert seen["mean_average_precision_at_r"] > raw["mean_average_precision_at_r"] + 0.1, (seen, raw)

    unseen = retrieval_metrics(emb.embed(Xu[uidx]), yu[uidx])
    # chance: precision@1 ~ 0.2, MAP@R ~ 0.2 for five balanced classes
    assert unseen["precision_at_1"] > 0.5, unseen
    assert unseen["r_precision"] > 0.3, unseen


def test_mnist_reference_protocol(mnist):
    """The batch-hard triplet recipe (BatchHardMiner, SGD, constant lr, no augmentation),
    trained on all MNIST test images of 0-4 for 8 epochs (batch 64, lr 0.05, seed 0), evaluated
    on all test images of 5-9 (self excluded): precision@1 >= 0.78 and MAP@R >= 0.30.

    Measured: 0.830 / 0.344 (R-precision 0.493); over seeds 0-9 of initialization and batches
    the recipe gives precision@1 0.794-0.866 and MAP@R 0.319-0.361 (10 of 10 seeds meet both;
    ``benchmarks/recipe_sweep.py``; the spread moves with the kernels' summation order, by up
    to 0.05 at the ends). If this test fails after a numerics change, re-measure the seed spread
    before changing the recipe.

    Training must also help on the unseen classes: the same network before training scores
    0.781 / 0.240 there, and the trained one must beat it on both metrics."""
    X, y = mnist
    Xs, ys, Xu, yu = datasets.split_by_class(X, y, [0, 1, 2, 3, 4])
    emb = Embedder(
        models.small_cnn_embedder(embed_dim=16), loss="triplet", miner="batch_hard", optimizer="sgd"
    )
    Z0 = emb.net.forward(Xu)  # the untrained trunk (same seed), before fit
    Z0 /= np.maximum(np.linalg.norm(Z0, axis=1, keepdims=True), 1e-12)
    untrained = retrieval_metrics(Z0, yu)
    emb.fit(Xs, ys, epochs=8, batch_size=64, lr=0.05, augment=None, schedule=None)
    m = retrieval_metrics(emb.embed(Xu), yu)
    assert m["precision_at_1"] >= 0.78 and m["mean_average_precision_at_r"] >= 0.30, m
    assert m["precision_at_1"] > untrained["precision_at_1"], (m, untrained)
    assert m["mean_average_precision_at_r"] > untrained["mean_average_precision_at_r"] + 0.05, (m, untrained)
