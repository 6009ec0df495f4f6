"""distributed.embed on a two-process LocalCluster: equal to the single-process embed, and the
model reaches each worker once."""

import numpy as np
import pytest

pytest.importorskip("dask", reason="needs the dask extra: pip install '.[dask]'")
pytest.importorskip("distributed", reason="needs the dask extra: pip install '.[dask]'")
import dask.array as da  # noqa: E402

from mantissa_embed import distributed as med  # noqa: E402
from mantissa_embed.distributed import _embed  # noqa: E402


def test_embed_equals_the_single_process_embed(client, fitted):
    emb, X, _ = fitted
    Z = med.embed(emb, da.from_array(X, chunks=(37, 1, 12, 12)), batch_size=16, client=client)
    assert Z.shape == (200, emb.embed_dim_) and Z.dtype == np.float32
    np.testing.assert_allclose(Z.compute(), emb.embed(X, batch_size=16), rtol=1e-5, atol=1e-6)


def test_model_is_loaded_once_per_worker(client, fitted):
    emb, X, _ = fitted
    med.embed(emb, da.from_array(X, chunks=(10, 1, 12, 12)), client=client).compute()
    counts = client.run(lambda: len(_embed._MODELS))
    assert all(n >= 1 for n in counts.values()) and len(counts) == 2
    before = client.run(lambda: {k: id(v) for k, v in _embed._MODELS.items()})
    med.embed(emb, da.from_array(X, chunks=(10, 1, 12, 12)), client=client).compute()
    assert client.run(lambda: {k: id(v) for k, v in _embed._MODELS.items()}) == before  # reused, not reloaded


def test_bad_input(client, fitted):
    emb, X, _ = fitted
    with pytest.raises(TypeError, match="images must be a dask array"):
        med.embed(emb, X, client=client)
    with pytest.raises(ValueError, match="images must have shape"):
        med.embed(emb, da.zeros((4, 1, 10, 10), chunks=2), client=client)
    with pytest.raises(ValueError, match="batch_size"):
        med.embed(emb, da.from_array(X, chunks=(50, 1, 12, 12)), batch_size=0, client=client)
