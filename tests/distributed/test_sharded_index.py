"""ShardedIndex and build_index on a two-process LocalCluster: a search equals one Index of the
whole gallery, and the workers keep the shards only, not the blocks they were built from."""

import numpy as np
import pytest

pytest.importorskip("dask", reason="needs the dask extra: pip install '.[dask]'")
pytest.importorskip("distributed", reason="needs the dask extra: pip install '.[dask]'")
import dask.array as da  # noqa: E402

from distributed import wait  # noqa: E402
from mantissa_embed import distributed as med  # noqa: E402
from mantissa_embed.index import Index  # noqa: E402


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_sharded_index_equals_one_index(client, dtype, metric):
    rng = np.random.default_rng(7)
    G = rng.standard_normal((2500, 12)).astype(np.float32)
    Q = rng.standard_normal((20, 12)).astype(np.float32)
    sharded = med.ShardedIndex(da.from_array(G, chunks=(400, 12)), metric=metric, dtype=dtype, client=client)
    assert len(sharded) == 2500 and len(sharded.shards) == 7
    i, d = sharded.search(Q, 8, split_every=2)
    ri, rd = Index(12, metric=metric, dtype=dtype).add(G).search(Q, 8)
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_allclose(d, rd, rtol=1e-6, atol=1e-6)


def test_the_workers_keep_the_shards_not_the_blocks(client):
    rng = np.random.default_rng(8)
    G = rng.standard_normal((1200, 4)).astype(np.float32)
    lazy = da.from_array(G, chunks=(300, 4)) * np.float32(2)  # computed block by block on the workers
    sharded = med.ShardedIndex(lazy, client=client)
    wait(sharded.shards)
    held = {k for keys in client.has_what().values() for k in keys}
    assert {f.key for f in sharded.shards} <= held
    assert not [k for k in held if lazy.name in str(k)], "a gallery block outlived its shard"
    np.testing.assert_array_equal(sharded.search(G[:3] * 2, 1)[0][:, 0], [0, 1, 2])


def test_build_index_equals_an_index_of_the_workers_embeddings(client, fitted):
    emb, X, _ = fitted
    images = da.from_array(X, chunks=(64, 1, 12, 12))
    sharded = med.build_index(emb, images, metric="cosine", dtype="float16", client=client, batch_size=32)
    assert len(sharded) == len(X) and sharded.dim == emb.embed_dim_ and len(sharded.shards) == 4
    Z = med.embed(emb, images, batch_size=32, client=client).compute()  # what the workers embed
    np.testing.assert_allclose(Z, emb.embed(X), rtol=1e-5, atol=1e-6)
    i, d = sharded.search(Z[:15], 5)
    ri, rd = Index(Z.shape[1], metric="cosine", dtype="float16").add(Z).search(Z[:15], 5)
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_allclose(d, rd, rtol=1e-6, atol=1e-6)


def test_bad_input(client, fitted):
    emb, X, _ = fitted
    G = da.zeros((10, 4), chunks=5)
    with pytest.raises(TypeError, match="gallery must be a dask array"):
        med.ShardedIndex(np.zeros((10, 4)), client=client)
    with pytest.raises(ValueError, match="metric"):
        med.ShardedIndex(G, metric="sqeuclidean", client=client)
    with pytest.raises(ValueError, match="dtype"):
        med.ShardedIndex(G, dtype="float64", client=client)
    sharded = med.ShardedIndex(G, client=client)
    with pytest.raises(ValueError, match="k must be"):
        sharded.search(np.zeros((1, 4)), 11)
    with pytest.raises(ValueError, match="queries must have 4 columns"):
        sharded.search(np.zeros((1, 3)), 1)
    with pytest.raises(TypeError, match="images must be a dask array"):
        med.build_index(emb, X, client=client)
    with pytest.raises(ValueError, match="dtype"):
        med.build_index(emb, da.from_array(X, chunks=(50, 1, 12, 12)), dtype="int4", client=client)
