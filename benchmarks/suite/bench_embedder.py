"""The Embedder end to end: one fit epoch on 6,000 MNIST-sized images, embed, retrieve.

Data: ``common.synthetic_mnist`` (seeded synthetic 1x28x28 images, 10 classes; real MNIST
gives the same timings: the work does not depend on pixel values). Trunk:
``models.small_cnn_embedder(embed_dim=16)``; loss ``"triplet"`` with the Embedder's default
miner; batch 64, lr 0.05.
"""

from __future__ import annotations

import numpy as np

from .common import synthetic_mnist

N_FIT = 6000
GALLERY = 100_000
QUERIES = 1000


def _embedder(seed=0):
    from mantissa_embed import Embedder, models

    return Embedder(models.small_cnn_embedder(embed_dim=16, seed=seed), loss="triplet", seed=seed)


class FitEpoch:
    """``Embedder(small_cnn_embedder(16), loss="triplet").fit(X, y, epochs=1, batch_size=64)``."""

    timeout = 600
    number = 1
    repeat = (1, 5, 60.0)

    def setup(self):
        self.X, self.y = synthetic_mnist(N_FIT)

    def time_fit_epoch(self):
        _embedder().fit(self.X, self.y, epochs=1, batch_size=64, lr=0.05)

    def peakmem_fit_epoch(self):
        _embedder().fit(self.X, self.y, epochs=1, batch_size=64, lr=0.05)


class Embed:
    """``embed`` of 6,000 images (batches of 256) by a fitted Embedder."""

    timeout = 300

    def setup(self):
        self.X, y = synthetic_mnist(N_FIT)
        self.emb = _embedder().fit(self.X[:640], y[:640], epochs=1)

    def time_embed(self):
        self.emb.embed(self.X)

    def peakmem_embed(self):
        self.emb.embed(self.X)


class Retrieve:
    """``retrieve`` of 1,000 query images (embedded on the fly) against a gallery of 100,000
    precomputed L2-normalized embeddings, k = 10 (exact tiled k-NN)."""

    timeout = 300

    def setup(self):
        X, y = synthetic_mnist(2000)
        self.emb = _embedder().fit(X[:640], y[:640], epochs=1)
        self.Q = X[:QUERIES]
        rng = np.random.default_rng(0)
        G = rng.standard_normal((GALLERY, self.emb.embed_dim_)).astype(np.float32)
        G /= np.linalg.norm(G, axis=1, keepdims=True)
        self.G = G

    def time_retrieve(self):
        self.emb.retrieve(self.Q, self.G, k=10)

    def peakmem_retrieve(self):
        self.emb.retrieve(self.Q, self.G, k=10)
