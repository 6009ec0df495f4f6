"""Embedder.fit(..., profile=True): the structure of ``profile_`` and ``profile_summary()``, and that
profiling changes no number. Timings themselves are never asserted."""

import math

import numpy as np
import pytest

from mantissa_embed import Embedder, models


def _data(n=96, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    X = (rng.random((n, 1, 8, 8)) + y[:, None, None, None] * 0.3).astype(np.float32)
    return X, y.astype(np.int64)


def _fit(profile, epochs=2, batch_size=32, **kw):
    X, y = _data()
    emb = Embedder(models.small_cnn_embedder(embed_dim=4, seed=0), loss="triplet", seed=0, **kw)
    return emb.fit(X, y, epochs=epochs, batch_size=batch_size, lr=0.05, profile=profile), X


def test_profile_structure():
    emb, X = _fit(True, epochs=2, batch_size=32)
    p = emb.profile_
    assert set(p) == {
        "epochs",
        "batches",
        "total_s",
        "layers",
        "miner_s",
        "loss_s",
        "optimizer_s",
        "data_s",
        "other_s",
    }
    assert p["epochs"] == 2
    assert p["batches"] == 2 * math.ceil(len(X) / 32)
    assert len(p["layers"]) == len(emb.net.layers)
    for i, (d, layer) in enumerate(zip(p["layers"], emb.net.layers)):
        assert set(d) == {"index", "layer", "forward_s", "backward_s"}
        assert d["index"] == i
        assert d["layer"] == layer._describe()
        for k in ("forward_s", "backward_s"):
            assert isinstance(d[k], float) and d[k] >= 0.0
    for k in ("total_s", "miner_s", "loss_s", "optimizer_s", "data_s", "other_s"):
        assert isinstance(p[k], float) and p[k] >= 0.0
    # the profiling hook is removed from the trunk after fit
    assert emb.net._profile is None


def test_profile_summary_lists_every_layer_and_phase():
    emb, _ = _fit(True, epochs=1)
    text = emb.profile_summary()
    assert isinstance(text, str)
    for layer in emb.net.layers:
        assert f"{layer._describe()} forward" in text
        assert f"{layer._describe()} backward" in text
    for word in ("miner", "loss", "optimizer", "total"):
        assert word in text


def test_no_profile_by_default():
    emb, _ = _fit(False, epochs=1)
    assert emb.profile_ is None
    with pytest.raises(RuntimeError, match="profile=True"):
        emb.profile_summary()


def test_profiling_changes_no_number():
    a, _ = _fit(False, epochs=2)
    b, _ = _fit(True, epochs=2)
    for (na, pa), (nb, pb) in zip(a.net.named_parameters(), b.net.named_parameters()):
        assert na == nb
        np.testing.assert_array_equal(pa.data, pb.data)
    assert a.history_ == b.history_


def test_profile_without_miner_and_with_contrastive():
    emb, _ = _fit(True, epochs=1, miner=None)
    assert emb.profile_["miner_s"] >= 0.0
    X, y = _data()
    emb = Embedder(models.mlp_embedder(embed_dim=4, hidden=(8,)), loss="contrastive", seed=0)
    emb.fit(X, y, epochs=1, batch_size=32, profile=True)
    assert len(emb.profile_["layers"]) == len(emb.net.layers)


def test_profile_hook_removed_after_an_error():
    X, y = _data()
    emb = Embedder(models.small_cnn_embedder(embed_dim=4, seed=0), seed=0)

    def boom(epoch, loss):
        raise KeyError("stop")

    with pytest.raises(KeyError):
        emb.fit(X, y, epochs=1, batch_size=32, profile=True, callback=boom)
    assert emb.net._profile is None
    emb.net.forward(X[:4])  # still usable without profiling


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_profile_must_be_bool(bad):
    X, y = _data()
    emb = Embedder(models.small_cnn_embedder(embed_dim=4, seed=0), seed=0)
    with pytest.raises(TypeError, match="profile"):
        emb.fit(X, y, epochs=1, profile=bad)
