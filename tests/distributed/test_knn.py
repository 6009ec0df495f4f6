"""distributed.knn on a two-process LocalCluster equals evaluation.knn on the whole gallery,
lazy or persisted, whatever the chunking; the block fold equals the single-process search
slice by slice (its own rows left out when the queries are gallery rows)."""

import numpy as np
import pytest

pytest.importorskip("dask", reason="needs the dask extra: pip install '.[dask]'")
pytest.importorskip("distributed", reason="needs the dask extra: pip install '.[dask]'")
import dask.array as da  # noqa: E402

from distributed import wait  # noqa: E402
from mantissa_embed import distributed as med  # noqa: E402
from mantissa_embed.distributed import _knn  # noqa: E402
from mantissa_embed.evaluation import knn  # noqa: E402


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "cosine"])
@pytest.mark.parametrize("chunk", [64, 333, 5000])
def test_knn_equals_the_exact_single_process_result(client, metric, chunk):
    rng = np.random.default_rng(chunk)
    G = rng.standard_normal((3000, 16)).astype(np.float32)
    Q = rng.standard_normal((25, 16)).astype(np.float32)
    i, d = med.knn(Q, da.from_array(G, chunks=(chunk, 16)), 11, metric=metric, split_every=3, client=client)
    ri, rd = knn(Q, G, 11, metric=metric)
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_allclose(d, rd, rtol=1e-6, atol=1e-6)


def test_knn_on_a_persisted_gallery_with_ties(client):
    # every row twice: equal distances must come out lower row first, as one process orders them
    rng = np.random.default_rng(3)
    half = rng.standard_normal((700, 8)).astype(np.float32)
    G = np.concatenate([half, half])
    Q = half[:30] + np.float32(0.01)
    Gd = client.persist(da.from_array(G, chunks=(100, 8)))
    wait(Gd)
    assert med._common.array_holders(client, Gd) is not None  # the lanes follow the workers
    i, d = med.knn(Q, Gd, 6, client=client)
    ri, rd = knn(Q, G, 6)
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_array_equal(d, rd)
    assert (i[:, 1] == i[:, 0] + 700).all()  # the duplicate right after its first copy


def test_knn_of_a_float64_and_an_int_gallery(client):
    rng = np.random.default_rng(4)
    G = rng.integers(-50, 50, (500, 6))
    Q = rng.standard_normal((7, 6)).astype(np.float32)
    for g in (G, G.astype(np.float64)):
        i, _ = med.knn(Q, da.from_array(g, chunks=(90, 6)), 5, client=client)
        np.testing.assert_array_equal(i, knn(Q, G.astype(np.float32), 5)[0])


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_fold_block_leaves_out_own_rows_only(monkeypatch, metric):
    # slices of 7 rows; the queries are gallery rows 40..69, some of them duplicated at 50..59
    monkeypatch.setattr(_knn, "_SLICE", 7)
    rng = np.random.default_rng(5)
    G = rng.standard_normal((100, 5)).astype(np.float32)
    G[50:60] = G[40:50]
    Q = G[40:70]
    acc = None
    for off, end in ((66, 99), (0, 33), (99, 100), (33, 66)):  # blocks in any order
        acc = _knn.fold_block(acc, G[off:end], Q, 9, off, metric, q0=40)
    full_i, full_d = knn(Q, G, 10, metric=metric)  # query i is row 40 + i: drop it by hand
    own = full_i == np.arange(40, 70)[:, None]
    np.testing.assert_array_equal(acc[0], np.array([r[~m][:9] for r, m in zip(full_i, own)]))
    np.testing.assert_allclose(acc[1], np.array([r[~m][:9] for r, m in zip(full_d, own)]), atol=1e-6)
    assert (acc[0][:10, 0] == np.arange(50, 60)).all()  # a duplicate is still a neighbour, first
    assert (acc[0][10:20, 0] == np.arange(40, 50)).all()


def test_bad_input(client):
    G = da.zeros((10, 4), chunks=5)
    with pytest.raises(ValueError, match="k must be"):
        med.knn(np.zeros((1, 4)), G, 11, client=client)
    with pytest.raises(ValueError, match="queries must have 4 columns"):
        med.knn(np.zeros((1, 3)), G, 1, client=client)
    with pytest.raises(TypeError, match="gallery must be a dask array"):
        med.knn(np.zeros((1, 4)), np.zeros((10, 4)), 1, client=client)
    with pytest.raises(ValueError, match="gallery must be 2-D"):
        med.knn(np.zeros((1, 4)), da.zeros(10, chunks=5), 1, client=client)
    with pytest.raises(ValueError, match="metric"):
        med.knn(np.zeros((1, 4)), G, 1, metric="inner_product", client=client)
    with pytest.raises(ValueError, match="split_every"):
        med.knn(np.zeros((1, 4)), G, 1, split_every=1, client=client)
    bad = np.zeros((10, 4), np.float32)
    bad[7, 2] = np.nan
    with pytest.raises(ValueError, match="gallery contains NaN or Inf"):
        med.knn(np.zeros((1, 4)), da.from_array(bad, chunks=5), 1, client=client)
