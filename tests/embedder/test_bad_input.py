"""Embedder: bad input gives a clear TypeError / ValueError / RuntimeError naming the argument."""

import numpy as np
import pytest

from mantissa_embed import Embedder, layers, models


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 1, 8, 8), dtype=np.float32)
    y = np.arange(n, dtype=np.int64) % 3
    return X, y


@pytest.fixture(scope="module")
def fitted():
    X, y = _data()
    return Embedder(models.small_cnn_embedder(4)).fit(X, y, epochs=1, batch_size=12)


@pytest.fixture
def fresh():
    return Embedder(models.small_cnn_embedder(4))


# ---------------------------------------------------------------------------- fit
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_fit_rejects_non_finite(fresh, bad):
    X, y = _data()
    X[3, 0, 2, 2] = bad
    with pytest.raises(ValueError, match=r"X contains NaN or Inf"):
        fresh.fit(X, y)


@pytest.mark.parametrize("shape", [(60, 8, 8), (60, 64), (60,), (2, 30, 1, 8, 8)])
def test_fit_rejects_wrong_ndim(fresh, shape):
    X = np.zeros(shape, dtype=np.float32)
    with pytest.raises(ValueError, match=r"X must be 4-D"):
        fresh.fit(X, np.arange(60) % 3)


@pytest.mark.parametrize(
    "X",
    [
        np.full((4, 1, 2, 2), "a"),
        np.empty((4, 1, 2, 2), dtype=object),
        np.zeros((4, 1, 2, 2), dtype=bool),
        "images",
        None,
    ],
)
def test_fit_rejects_wrong_dtype(fresh, X):
    with pytest.raises(TypeError, match=r"^X must be"):
        fresh.fit(X, np.arange(4) % 2)


def test_fit_rejects_empty(fresh):
    with pytest.raises(ValueError, match=r"X must not be empty"):
        fresh.fit(np.zeros((0, 1, 8, 8), np.float32), np.zeros(0, np.int64))


def test_fit_labels_wrong_length(fresh):
    X, y = _data()
    with pytest.raises(ValueError, match=r"y must have length 60"):
        fresh.fit(X, y[:-1])


def test_fit_labels_float(fresh):
    X, y = _data()
    with pytest.raises(TypeError, match=r"y must have an integer dtype"):
        fresh.fit(X, y.astype(np.float64))


def test_fit_labels_2d(fresh):
    X, y = _data()
    with pytest.raises(ValueError, match=r"y must be 1-D"):
        fresh.fit(X, y[:, None])


def test_fit_single_class(fresh):
    X, _ = _data()
    with pytest.raises(ValueError, match=r"y must contain at least 2 classes"):
        fresh.fit(X, np.zeros(60, np.int64))


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(batch_size=1), ValueError, r"batch_size must be >= 2"),
        (dict(batch_size=0), ValueError, r"batch_size must be >= 2"),
        (dict(batch_size=8.0), TypeError, r"batch_size must be an int"),
        (dict(epochs=0), ValueError, r"epochs must be >= 1"),
        (dict(epochs=1.5), TypeError, r"epochs must be an int"),
        (dict(lr=0.0), ValueError, r"lr must be > 0"),
        (dict(lr=-1.0), ValueError, r"lr must be > 0"),
        (dict(lr=float("nan")), ValueError, r"lr must be finite"),
        (dict(lr="0.1"), TypeError, r"lr must be a number"),
        (dict(verbose="yes"), TypeError, r"verbose must be a bool"),
        (dict(callback=3), TypeError, r"callback must be callable"),
    ],
)
def test_fit_bad_arguments(fresh, kwargs, exc, match):
    X, y = _data()
    with pytest.raises(exc, match=match):
        fresh.fit(X, y, **kwargs)


def test_fit_other_image_shape_after_fit(fitted):
    X = np.zeros((10, 1, 9, 9), np.float32)
    with pytest.raises(ValueError, match=r"X must have shape \(N, 1, 8, 8\)"):
        fitted.fit(X, np.arange(10) % 2)


def test_fit_without_parameters():
    X, y = _data()
    with pytest.raises(ValueError, match=r"nothing to train"):  # was an IndexError
        Embedder([layers.Flatten()], loss="contrastive").fit(X, y, batch_size=12)


def test_fit_trunk_must_output_vectors():
    from mantissa_embed.layers import Conv2D

    emb = Embedder([Conv2D(2, 3)])
    X, y = _data()
    with pytest.raises(ValueError, match=r"trunk must output one vector per image"):
        emb.fit(X, y)


# ----------------------------------------------------------------------- constructor
@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (
            dict(loss="arcface"),
            ValueError,
            r"loss must be one of \('default', 'triplet', 'contrastive', 'proxy_anchor', 'multi_similarity'\) or a loss object",
        ),
        (dict(loss=3), TypeError, r"loss must be"),
        (dict(loss=None), TypeError, r"loss must be"),
        (dict(margin=-0.1), ValueError, r"margin must be >= 0"),
        (dict(margin="big"), TypeError, r"margin must be a number"),
        (dict(miner="hardest"), ValueError, r"miner must be one of"),
        (dict(miner=5), TypeError, r"miner must be"),
        (dict(optimizer="rmsprop"), ValueError, r"optimizer must be one of"),
        (dict(optimizer=1), TypeError, r"optimizer must be"),
        (dict(momentum=-1), ValueError, r"momentum must be >= 0"),
        (dict(weight_decay=-1), ValueError, r"weight_decay must be >= 0"),
        (dict(m_per_class=0), ValueError, r"m_per_class must be >= 1"),
        (dict(backend="torch"), ValueError, r"backend must be one of"),
        (dict(seed=-1), ValueError, r"seed must be >= 0"),
        (dict(seed=1.5), TypeError, r"seed must be an int"),
    ],
)
def test_constructor_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        Embedder(models.small_cnn_embedder(4), **kwargs)


def test_layers_type_errors():
    from mantissa_embed.layers import Dense

    with pytest.raises(TypeError, match=r"layers must be a list"):
        Embedder(Dense(3))
    with pytest.raises(TypeError, match=r"layers must be a list"):
        Embedder("conv")
    with pytest.raises(TypeError, match=r"layers\[0\] must be a Layer"):
        Embedder([3])


def test_margin_with_loss_object():
    from mantissa_embed.losses import TripletMarginLoss

    with pytest.raises(ValueError, match=r"margin must be None when loss is an object"):
        Embedder(models.small_cnn_embedder(4), loss=TripletMarginLoss(), margin=0.2)


# ---------------------------------------------------------------------- before fit
def test_methods_before_fit(fresh):
    X, _ = _data(4)
    for call in (
        lambda: fresh.embed(X),
        lambda: fresh.retrieve(X[0], X, k=1),
        lambda: fresh.verify(X[0], X[1]),
        lambda: fresh.save("/tmp/never.npz"),
    ):
        with pytest.raises(RuntimeError, match=r"not fitted yet"):
            call()


# ------------------------------------------------------------------ embed / retrieve
def test_embed_bad_input(fitted):
    X, _ = _data(5)
    with pytest.raises(ValueError, match=r"X must have shape \(n, 1, 8, 8\)"):
        fitted.embed(X[0])
    with pytest.raises(ValueError, match=r"X must have shape \(n, 1, 8, 8\)"):
        fitted.embed(np.zeros((5, 1, 7, 7), np.float32))
    with pytest.raises(TypeError, match=r"X must be a numeric array"):
        fitted.embed(np.full((5, 1, 8, 8), "x"))
    bad = X.copy()
    bad[4, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match=r"X contains NaN or Inf"):
        fitted.embed(bad, batch_size=2)
    with pytest.raises(ValueError, match=r"batch_size must be >= 1"):
        fitted.embed(X, batch_size=0)
    with pytest.raises(TypeError, match=r"normalize must be a bool"):
        fitted.embed(X, normalize="no")


def test_retrieve_k_larger_than_gallery(fitted):
    X, _ = _data(5)
    with pytest.raises(ValueError, match=r"k must be <= the number of gallery items \(5\), got k=6"):
        fitted.retrieve(X[0], X, k=6)
    Z = fitted.embed(X)
    with pytest.raises(ValueError, match=r"k must be <= the number of gallery items \(5\)"):
        fitted.retrieve(Z[:2], Z, k=10)


@pytest.mark.parametrize("k, exc", [(0, ValueError), (-1, ValueError), (1.0, TypeError), ("3", TypeError)])
def test_retrieve_bad_k(fitted, k, exc):
    X, _ = _data(5)
    with pytest.raises(exc, match=r"^k must"):
        fitted.retrieve(X[0], X, k=k)


def test_retrieve_bad_shapes(fitted):
    X, _ = _data(5)
    Z = fitted.embed(X)
    with pytest.raises(ValueError, match=r"query embeddings must have 4 columns"):
        fitted.retrieve(np.zeros(5, np.float32), Z, k=1)
    with pytest.raises(ValueError, match=r"gallery must be images \(n, 1, 8, 8\), embeddings \(n, 4\)"):
        fitted.retrieve(Z[0], Z[0], k=1)
    with pytest.raises(ValueError, match=r"query must be one image"):
        fitted.retrieve(np.zeros((1, 1, 1, 1, 1), np.float32), Z, k=1)
    with pytest.raises(ValueError, match=r"query must be one image \(1, 8, 8\).*got shape \(1, 7, 7\)"):
        fitted.retrieve(np.zeros((1, 7, 7), np.float32), Z, k=1)
    with pytest.raises(ValueError, match=r"gallery must be images \(n, 1, 8, 8\).*got shape \(3, 1, 7, 7\)"):
        fitted.retrieve(Z[0], np.zeros((3, 1, 7, 7), np.float32), k=1)
    q = Z[:1].copy()
    q[0, 0] = np.inf
    with pytest.raises(ValueError, match=r"query contains NaN or Inf"):
        fitted.retrieve(q, Z, k=1)
    with pytest.raises(TypeError, match=r"gallery must be"):
        fitted.retrieve(Z[0], "gallery", k=1)


def test_verify_bad_input(fitted):
    X, _ = _data(5)
    Z = fitted.embed(X)
    with pytest.raises(ValueError, match=r"a and b must have the same number of items, got 3 and 2"):
        fitted.verify(Z[:3], Z[:2])
    with pytest.raises(ValueError, match=r"threshold must be >= 0"):
        fitted.verify(Z[0], Z[1], threshold=-0.5)
    with pytest.raises(TypeError, match=r"threshold must be a number"):
        fitted.verify(Z[0], Z[1], threshold="0.5")
    with pytest.raises(ValueError, match=r"b contains NaN or Inf"):
        fitted.verify(Z[0], np.full(4, np.nan, np.float32))
    with pytest.raises(TypeError, match=r"a must be a numeric array"):
        fitted.verify(np.array([object()]), Z[0])


def test_fit_divergence_is_a_floating_point_error(fresh):
    # weights overflowing to NaN/Inf must not surface as the miner's "ValueError: embeddings
    # contains NaN or Inf", which names no argument of fit
    X, y = _data()
    with pytest.raises(FloatingPointError, match=r"lower lr"):
        fresh.fit(X, y, epochs=3, batch_size=12, lr=1e30)
