"""Embedder calls from several Python threads: embed / retrieve / verify give the serial results,
a second concurrent fit gets a RuntimeError, and inference waits for a running fit."""

import threading

import numpy as np
import pytest

from _helpers import run_threads, small_fitted_embedder
from mantissa_embed import Embedder, models


@pytest.fixture(scope="module")
def fitted():
    emb, X, _ = small_fitted_embedder(6, 40, 48)
    return emb, X


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_concurrent_inference_equals_serial(fitted, backend, tmp_path):
    emb, X = fitted
    if backend == "numpy":
        emb.save(tmp_path / "emb.npz")
        emb = Embedder.load(tmp_path / "emb.npz", backend="numpy")
    E = emb.embed(X[:100], batch_size=16)
    G = emb.embed(X)
    R = emb.retrieve(X[:30], G, k=4)
    V = emb.verify(X[:50], X[50:100])
    wrong = []

    def call():
        if not np.array_equal(emb.embed(X[:100], batch_size=16), E):
            wrong.append("embed")
        i, d = emb.retrieve(X[:30], G, k=4)
        if not (np.array_equal(i, R[0]) and np.array_equal(d, R[1])):
            wrong.append("retrieve")
        if not np.array_equal(emb.verify(X[:50], X[50:100]), V):
            wrong.append("verify")

    assert run_threads(call) == []
    assert wrong == []


def test_a_second_concurrent_fit_is_refused():
    rng = np.random.default_rng(1)
    X = rng.random((96, 1, 12, 12), dtype=np.float32)
    y = np.repeat(np.arange(4), 24)
    emb = Embedder(models.small_cnn_embedder(8), loss="triplet", seed=0)
    started, release = threading.Event(), threading.Event()

    def slow_callback(epoch, loss):
        started.set()
        release.wait(30)

    t = threading.Thread(target=lambda: emb.fit(X, y, epochs=1, batch_size=32, callback=slow_callback))
    t.start()
    try:
        assert started.wait(60)
        with pytest.raises(RuntimeError, match="already running"):
            emb.fit(X, y, epochs=1, batch_size=32)
        # inference from another thread waits for the fit instead of reading half-updated weights
        got = []
        reader = threading.Thread(target=lambda: got.append(emb.embed(X[:8])))
        reader.start()
        reader.join(0.5)
        assert reader.is_alive() and not got
    finally:
        release.set()
        t.join()
    reader.join(30)
    assert len(got) == 1 and got[0].shape == (8, emb.embed_dim_)
    emb.fit(X, y, epochs=1, batch_size=32)  # free again


def test_fit_from_its_own_callback_is_refused():
    rng = np.random.default_rng(2)
    X = rng.random((64, 1, 12, 12), dtype=np.float32)
    y = np.repeat(np.arange(4), 16)
    emb = Embedder(models.small_cnn_embedder(8), loss="triplet", seed=0)
    with pytest.raises(RuntimeError, match="already running"):
        emb.fit(X, y, epochs=1, batch_size=32, callback=lambda e, lab: emb.fit(X, y, epochs=1))
