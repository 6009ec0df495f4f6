"""evaluation.faiss_knn.FaissKNN: the knn signature over faiss indexes, PML's semantics."""

import numpy as np
import pytest

faiss = pytest.importorskip("faiss")

from mantissa_embed.evaluation.faiss_knn import FaissKNN  # noqa: E402
from mantissa_embed.evaluation.knn import knn  # noqa: E402


def _data(seed=0, n=60, M=400, D=12):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, D)).astype(np.float32), rng.standard_normal((M, D)).astype(np.float32)


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "inner_product", "cosine"])
@pytest.mark.parametrize("exclude_self", [False, True])
def test_matches_exact_knn(metric, exclude_self):
    q, r = _data()
    if exclude_self:
        q = r[:60]
    idx, dist = FaissKNN()(q, r, 7, exclude_self=exclude_self, metric=metric)
    ei, ed = knn(q, r, 7, exclude_self=exclude_self, metric=metric, backend="numpy")
    assert idx.dtype == np.int64 and dist.dtype == np.float32 and idx.shape == (60, 7)
    assert np.mean(idx == ei) > 0.98  # float32 rounding may swap near-equal neighbours
    np.testing.assert_allclose(dist, ed, atol=2e-5 * (1 if metric != "sqeuclidean" else 50))
    if exclude_self:
        assert not (idx == np.arange(60)[:, None]).any()


def test_exclude_self_follows_pml_return_results():
    """k + 1 are searched; the query itself is removed, or the last one when it is absent."""
    r = np.zeros((5, 2), np.float32)  # all duplicates: self may be out of the first k + 1
    idx, dist = FaissKNN()(r, r, 2, exclude_self=True)
    ids = faiss.IndexFlatL2(2)
    ids.add(r)
    _, raw = ids.search(r, 3)
    for i in range(5):
        row = raw[i].tolist()
        want = [j for j in row if j != i] if i in row else row[:-1]
        assert idx[i].tolist() == want
    np.testing.assert_array_equal(dist, 0)


def test_reset_flags_and_prebuilt_index(tmp_path):
    q, r = _data(1)
    f = FaissKNN(reset_before=False, reset_after=False)
    with pytest.raises(ValueError, match="index"):
        f(q, None, 3)
    f.train(r)
    idx, dist = f(q, None, 3)
    ei, _ = knn(q, r, 3, backend="numpy")
    assert np.mean(idx == ei) > 0.98 and f.index is not None
    f.save(tmp_path / "ix.faiss")
    g = FaissKNN(reset_before=False, reset_after=True)
    g.load(tmp_path / "ix.faiss")
    np.testing.assert_array_equal(g(q, None, 3)[0], idx)
    assert g.index is None  # reset after the call
    h = FaissKNN()  # default: built per call, dropped after
    h(q, r, 3)
    assert h.index is None


def test_custom_index_init_fn_approximate():
    q, r = _data(2, M=2000, D=16)

    def ivf(d):
        quant = faiss.IndexFlatL2(d)
        index = faiss.IndexIVFFlat(quant, d, 8)
        index.nprobe = 8  # all lists: exact
        ivf.quant = quant  # keep the quantizer alive
        return index

    f = FaissKNN(index_init_fn=ivf)
    idx, _ = f(q, r, 5)
    ei, _ = knn(q, r, 5, backend="numpy")
    assert np.mean(idx == ei) > 0.98
    with pytest.raises(ValueError, match="does not serve"):
        FaissKNN(index_init_fn=faiss.IndexFlatIP)(q, r, 5, metric="euclidean")


def test_bad_input():
    q, r = _data(3)
    f = FaissKNN()
    with pytest.raises(ValueError, match="k must be <= 400"):
        f(q, r, 401)
    with pytest.raises(ValueError, match="k must be <= 399"):
        f(r[:5], r, 400, exclude_self=True)
    with pytest.raises(ValueError, match="same number of columns"):
        f(q[:, :5], r, 2)
    with pytest.raises(ValueError, match="query contains NaN"):
        f(np.full_like(q, np.nan), r, 2)
    with pytest.raises(ValueError, match="metric"):
        f(q, r, 2, metric="manhattan")
    with pytest.raises(TypeError, match="k must be an int"):
        f(q, r, 2.5)
    with pytest.raises(ValueError, match="reference is required"):
        f(q, None, 2)
    with pytest.raises(TypeError, match="index_init_fn"):
        FaissKNN(index_init_fn=3)
    with pytest.raises(TypeError, match="reset_before"):
        FaissKNN(reset_before="no")


def test_plugs_into_accuracy_calculator():
    from mantissa_embed.evaluation import AccuracyCalculator

    rng = np.random.default_rng(4)
    labels = np.repeat(np.arange(8), 25)
    emb = (rng.standard_normal((8, 16))[labels] + 0.8 * rng.standard_normal((200, 16))).astype(np.float32)
    include = ("precision_at_1", "r_precision", "mean_average_precision_at_r")
    exact = AccuracyCalculator(include=include).get_accuracy(
        emb, labels, emb, labels, ref_includes_query=True
    )
    via_faiss = AccuracyCalculator(include=include, knn_func=FaissKNN()).get_accuracy(
        emb, labels, emb, labels, ref_includes_query=True
    )
    assert exact.keys() == via_faiss.keys()
    for key in exact:
        assert via_faiss[key] == pytest.approx(exact[key], abs=1e-6)
