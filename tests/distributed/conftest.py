"""One dask.distributed LocalCluster of two worker processes (one thread each) for every test
of this folder, and a small fitted Embedder."""

import pytest


@pytest.fixture(scope="session")
def client():
    distributed = pytest.importorskip("distributed", reason="needs the dask extra: pip install '.[dask]'")
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


@pytest.fixture(scope="session")
def fitted():
    from _helpers import small_fitted_embedder

    emb, X, y = small_fitted_embedder(5, 40, 40)
    return emb, X, y
