"""mantissa_embed.distributed on a real dask.distributed LocalCluster of two worker processes:
embed equals the single-process embed, knn and ShardedIndex.search equal the exact
single-process search, and the model reaches each worker once."""

import numpy as np
import pytest

pytest.importorskip("dask", reason="needs the dask extra: pip install '.[dask]'")
distributed = pytest.importorskip("distributed", reason="needs the dask extra: pip install '.[dask]'")
import dask.array as da  # noqa: E402

from _helpers import small_fitted_embedder  # noqa: E402
from mantissa_embed import distributed as med  # noqa: E402
from mantissa_embed.evaluation import knn  # noqa: E402
from mantissa_embed.index import Index  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        env={"MANTISSA_EMBED_NUM_THREADS": "1"},
    )
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def fitted():
    emb, X, _ = small_fitted_embedder(5, 40, 40)
    return emb, X


def test_embed_equals_the_single_process_embed(client, fitted):
    emb, X = fitted
    Z = med.embed(emb, da.from_array(X, chunks=(37, 1, 12, 12)), batch_size=16, client=client)
    assert Z.shape == (200, emb.embed_dim_) and Z.dtype == np.float32
    np.testing.assert_allclose(Z.compute(), emb.embed(X, batch_size=16), rtol=1e-5, atol=1e-6)


def test_model_is_loaded_once_per_worker(client, fitted):
    emb, X = fitted
    med.embed(emb, da.from_array(X, chunks=(10, 1, 12, 12)), client=client).compute()
    counts = client.run(lambda: len(med._MODELS))
    assert all(n >= 1 for n in counts.values()) and len(counts) == 2
    before = client.run(lambda: {k: id(v) for k, v in med._MODELS.items()})
    med.embed(emb, da.from_array(X, chunks=(10, 1, 12, 12)), client=client).compute()
    assert client.run(lambda: {k: id(v) for k, v in med._MODELS.items()}) == before  # reused, not reloaded


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("chunk", [64, 333, 5000])
def test_knn_equals_the_exact_single_process_result(client, metric, chunk):
    rng = np.random.default_rng(chunk)
    G = rng.standard_normal((3000, 16)).astype(np.float32)
    Q = rng.standard_normal((25, 16)).astype(np.float32)
    i, d = med.knn(Q, da.from_array(G, chunks=(chunk, 16)), 11, metric=metric, split_every=3, client=client)
    ri, rd = knn(Q, G, 11, metric=metric)
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_allclose(d, rd, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_sharded_index_equals_one_index(client, dtype):
    rng = np.random.default_rng(7)
    G = rng.standard_normal((2500, 12)).astype(np.float32)
    Q = rng.standard_normal((20, 12)).astype(np.float32)
    sharded = med.ShardedIndex(da.from_array(G, chunks=(400, 12)), dtype=dtype, client=client)
    assert len(sharded) == 2500
    i, d = sharded.search(Q, 8)
    ri, rd = Index(12, dtype=dtype).add(G).search(Q, 8)
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_allclose(d, rd, rtol=1e-6, atol=1e-6)


def test_bad_input(client, fitted):
    emb, X = fitted
    with pytest.raises(TypeError, match="dask array"):
        med.embed(emb, X, client=client)
    with pytest.raises(ValueError, match="shape"):
        med.embed(emb, da.zeros((4, 1, 10, 10), chunks=2), client=client)
    G = da.zeros((10, 4), chunks=5)
    with pytest.raises(ValueError, match="k must be"):
        med.knn(np.zeros((1, 4)), G, 11, client=client)
    with pytest.raises(ValueError, match="columns"):
        med.knn(np.zeros((1, 3)), G, 1, client=client)
    with pytest.raises(TypeError, match="dask array"):
        med.knn(np.zeros((1, 4)), np.zeros((10, 4)), 1, client=client)
