"""Embedder.retrieve ranks its final k by exactly computed distances: on near-duplicate gallery
rows with large norms it equals a float64 brute force, on both backends."""

import numpy as np
import pytest

from mantissa_embed import Embedder, distances, losses, models


@pytest.fixture(scope="module", params=["mantissa", "numpy"])
def raw_embedder(request):
    """A fitted Embedder measuring raw (not normalized) embeddings of size 16."""
    rng = np.random.default_rng(0)
    X = rng.random((24, 1, 4, 4), dtype=np.float32)
    loss = losses.ContrastiveLoss(distance=distances.LpDistance(normalize_embeddings=False))
    return Embedder(models.mlp_embedder(16), loss=loss, miner=None, backend=request.param).fit(
        X, np.arange(24) % 3, batch_size=12
    )


def test_retrieve_equals_float64_brute_force(raw_embedder):
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((4, 16)) * 1000
    gallery = np.concatenate(
        [c + rng.standard_normal((50, 16)) * rng.uniform(1e-4, 1e-2, (50, 1)) for c in centres]
        + [rng.standard_normal((200, 16)) * 1000]
    ).astype(np.float32)
    query = (centres + rng.standard_normal(centres.shape) * 1e-3).astype(np.float32)
    d2 = ((gallery[None].astype(np.float64) - query[:, None].astype(np.float64)) ** 2).sum(-1)
    want = np.argsort(d2, axis=1, kind="stable")[:, :10]
    idx, dist = raw_embedder.retrieve(query, gallery, k=10)
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(dist, np.sqrt(np.take_along_axis(d2, want, axis=1)).astype(np.float32))
    i1, d1 = raw_embedder.retrieve(query[2], gallery, k=10)  # a single query: the same row
    np.testing.assert_array_equal(i1, want[2])
    np.testing.assert_array_equal(d1, dist[2])
