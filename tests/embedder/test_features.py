"""Embedder on feature vectors (N, F): a trunk that takes them (``models.mlp_embedder``,
or one starting with ``Dense``) trains, embeds, retrieves, calibrates, verifies, saves, loads and
resumes on 2-D arrays, and bad input names the argument.

The data: scikit-learn's digits as 64-D feature vectors, trained on digits 0-4, retrieval judged on
the unseen digits 5-9 against the untrained trunk (its forward + L2 normalization, computed here)."""

import numpy as np
import pytest

from mantissa_embed import Embedder, datasets, evaluation, layers, models
from mantissa_embed.index import Index

EPOCHS = 10


@pytest.fixture(scope="module")
def digits():
    X, y = datasets.load("digits")
    X = np.ascontiguousarray(X.reshape(len(X), -1), dtype=np.float32)  # (1797, 64)
    seen = y < 5
    return X[seen], y[seen], X[~seen], y[~seen]


@pytest.fixture(scope="module")
def fitted(digits):
    Xtr, ytr, _, _ = digits
    return Embedder(models.mlp_embedder(16)).fit(Xtr, ytr, epochs=EPOCHS)


def _map_at_r(Z, y):
    return evaluation.retrieval_metrics(Z, y, include=("mean_average_precision_at_r",))[
        "mean_average_precision_at_r"
    ]


# ------------------------------------------------------------------------- learning
def test_training_beats_the_untrained_trunk_on_unseen_digits(fitted, digits):
    _, _, Xte, yte = digits
    net = models.mlp_embedder(16)  # the same seed: the fitted trunk's initial weights
    Z0 = np.asarray(net.forward(Xte), dtype=np.float64)
    Z0 /= np.linalg.norm(Z0, axis=1, keepdims=True)
    untrained = _map_at_r(Z0.astype(np.float32), yte)
    trained = _map_at_r(fitted.embed(Xte), yte)
    assert fitted.input_shape_ == (64,) and fitted.embed_dim_ == 16
    assert trained > untrained + 0.02, (trained, untrained)


def test_embed_is_l2_normalized_rows(fitted, digits):
    _, _, Xte, _ = digits
    Z = fitted.embed(Xte, batch_size=100)
    assert Z.shape == (len(Xte), 16) and Z.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=1e-5)
    raw = fitted.embed(Xte[:5], normalize=False)
    np.testing.assert_allclose(raw / np.linalg.norm(raw, axis=1, keepdims=True), Z[:5], rtol=1e-5, atol=1e-6)


def test_retrieve_on_feature_vectors_equals_retrieve_on_their_embeddings(fitted, digits):
    _, _, Xte, _ = digits
    q, g = Xte[:20], Xte[20:]
    idx, dist = fitted.retrieve(q, g, k=5)
    idx_e, dist_e = fitted.retrieve(fitted.embed(q), fitted.embed(g), k=5)
    np.testing.assert_array_equal(idx, idx_e)
    np.testing.assert_allclose(dist, dist_e, rtol=1e-6, atol=1e-7)  # embeddings are normalized once more
    one_idx, one_dist = fitted.retrieve(q[3], g, k=5)  # one feature vector (F,)
    np.testing.assert_array_equal(one_idx, idx[3])
    np.testing.assert_array_equal(one_dist, dist[3])
    Zg = fitted.embed(g)
    ref = np.linalg.norm(fitted.embed(q)[:, None].astype(np.float64) - Zg[None].astype(np.float64), axis=2)
    np.testing.assert_allclose(dist, np.take_along_axis(ref, idx, axis=1), rtol=1e-5, atol=1e-6)
    ids, _ = fitted.retrieve(q, fitted.build_index(g), k=5)
    np.testing.assert_array_equal(ids, idx)


def test_calibrate_verify_save_load(fitted, digits, tmp_path):
    _, _, Xte, yte = digits
    emb = Embedder.load(fitted.save(tmp_path / "features.npz"))  # a copy: the fixture stays uncalibrated
    cal = emb.calibrate(Xte, yte, max_accuracy=True)
    assert cal["balanced_accuracy"] > 0.5
    assert emb.calibrate(emb.embed(Xte), yte, max_accuracy=True) == cal  # embeddings: the same pairs
    a, b = Xte[:50], Xte[50:100]
    d = emb.verify(a, b, threshold=None)
    Za, Zb = emb.embed(a).astype(np.float64), emb.embed(b).astype(np.float64)
    np.testing.assert_allclose(d, np.linalg.norm(Za - Zb, axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(emb.verify(a, b), d <= cal["threshold"])
    assert emb.verify(a[0], b[0], threshold=None) == pytest.approx(float(d[0]), rel=1e-6)
    np.testing.assert_array_equal(
        emb.verify(a[0], b, threshold=None), emb.verify(np.repeat(a[:1], 50, 0), b, None)
    )

    loaded = Embedder.load(emb.save(tmp_path / "calibrated.npz"))
    assert loaded.input_shape_ == (64,) and loaded.embed_dim_ == 16
    np.testing.assert_array_equal(loaded.embed(Xte), fitted.embed(Xte))  # bitwise
    assert loaded.threshold_ == cal["threshold"]
    np.testing.assert_array_equal(loaded.verify(a, b), emb.verify(a, b))


def test_validation_with_feature_vectors(digits):
    Xtr, ytr, Xte, yte = digits
    emb = Embedder(models.mlp_embedder(16)).fit(Xtr, ytr, epochs=2, validation=(Xte, yte))
    assert len(emb.history_["val_mean_average_precision_at_r"]) == 2
    held = Embedder(models.mlp_embedder(16)).fit(Xtr, ytr, epochs=2, validation=0.4, restore_best=True)
    assert len(held.history_["val_precision_at_1"]) == 2


# --------------------------------------------------------------------------- resume
def test_resume_equals_uninterrupted_run(digits, tmp_path):
    Xtr, ytr, _, _ = digits
    full = Embedder(models.mlp_embedder(16)).fit(Xtr, ytr, epochs=3)
    ckpt = tmp_path / "ckpt.npz"

    def save_and_stop(embedder, epoch, history):
        embedder.save(ckpt)
        return epoch == 0

    Embedder(models.mlp_embedder(16)).fit(Xtr, ytr, epochs=3, callbacks=[save_and_stop])
    resumed = Embedder.load(ckpt)
    assert resumed.input_shape_ == (64,)
    resumed.fit(Xtr, ytr, epochs=3, resume=True)
    assert resumed.history_["loss"] == full.history_["loss"]
    for k, v in full.net.state_arrays().items():
        np.testing.assert_array_equal(resumed.net.state_arrays()[k], v)
    np.testing.assert_array_equal(resumed.embed(Xtr), full.embed(Xtr))


# ----------------------------------------------------------------------- augmentation
def test_default_augment_is_off_for_feature_vectors(digits):
    Xtr, ytr, Xte, _ = digits
    default = Embedder(models.mlp_embedder(8)).fit(Xtr, ytr, epochs=1)
    off = Embedder(models.mlp_embedder(8)).fit(Xtr, ytr, epochs=1, augment=None)
    np.testing.assert_array_equal(default.embed(Xte), off.embed(Xte))


@pytest.mark.parametrize("augment", ["affine", "hflip", "affine+hflip"])
def test_image_augment_with_feature_vectors_is_an_error(digits, augment):
    Xtr, ytr, _, _ = digits
    with pytest.raises(
        ValueError, match=r"^augment='" + augment.replace("+", r"\+") + r"' transforms images"
    ):
        Embedder(models.mlp_embedder(8)).fit(Xtr, ytr, augment=augment)


def test_callable_augment_is_applied_to_feature_vectors(digits):
    Xtr, ytr, Xte, _ = digits
    shapes = []

    def noise(X, rng):
        shapes.append(X.shape)
        return X + np.float32(0.1) * rng.standard_normal(X.shape).astype(np.float32)

    aug = Embedder(models.mlp_embedder(8)).fit(Xtr, ytr, epochs=1, augment=noise)
    off = Embedder(models.mlp_embedder(8)).fit(Xtr, ytr, epochs=1, augment=None)
    assert shapes and all(len(s) == 2 and s[1] == 64 for s in shapes)
    assert not np.array_equal(aug.embed(Xte), off.embed(Xte))


# --------------------------------------------------------------- other feature trunks
def test_a_trunk_starting_with_dense_trains_on_feature_vectors(digits):
    Xtr, ytr, Xte, _ = digits
    emb = Embedder([layers.Dense(32, act="relu"), layers.Dense(8)]).fit(Xtr, ytr, epochs=1)
    assert emb.input_shape_ == (64,) and emb.embed(Xte).shape == (len(Xte), 8)


def test_inputs_win_when_the_input_width_equals_the_embedding_size():
    rng = np.random.default_rng(0)
    X = rng.random((60, 8), dtype=np.float32)
    y = np.arange(60) % 3
    emb = Embedder(models.mlp_embedder(8)).fit(X, y, epochs=1, batch_size=12)
    assert emb.input_shape_ == (8,) and emb.embed_dim_ == 8
    Z = emb.embed(X)
    d = emb.verify(X[:30], X[30:], threshold=None)  # (n, 8): feature vectors, embedded
    np.testing.assert_allclose(
        d, np.linalg.norm(Z[:30].astype(np.float64) - Z[30:], axis=1), rtol=1e-5, atol=1e-6
    )
    idx, _ = emb.retrieve(X[:5], X, k=1)
    np.testing.assert_array_equal(idx[:, 0], np.arange(5))  # each input finds itself
    idx3, _ = emb.retrieve(X[:5], X, k=3)
    np.testing.assert_array_equal(emb.retrieve(X[:5], emb.build_index(X), k=3)[0], idx3)
    # the documented path for precomputed embeddings of that width: an Index searched directly
    np.testing.assert_array_equal(Index(8).add(Z).search(Z[:5], 3)[0], idx3)


def test_an_image_fit_then_feature_vectors_keeps_the_image_rank():
    rng = np.random.default_rng(0)
    emb = Embedder(models.mlp_embedder(4)).fit(
        rng.random((24, 1, 4, 4), dtype=np.float32), np.arange(24) % 3, epochs=1, batch_size=12, augment=None
    )
    assert emb.input_shape_ == (1, 4, 4)
    Z = emb.embed(rng.random((3, 1, 4, 4), dtype=np.float32))
    assert emb.verify(Z, Z, threshold=None).shape == (3,)  # (n, D) still embeddings for an image trunk
    with pytest.raises(ValueError, match=r"X must have shape \(N, 1, 4, 4\) \(images"):
        emb.fit(rng.random((24, 16), dtype=np.float32), np.arange(24) % 3, epochs=1, batch_size=12)


# -------------------------------------------------------------------------- bad input
def _xy(shape, n_classes=3):
    return np.zeros(shape, np.float32) + np.arange(shape[0], dtype=np.float32).reshape(
        -1, *[1] * (len(shape) - 1)
    ), np.arange(shape[0]) % n_classes


@pytest.mark.parametrize("shape", [(30, 8, 8), (30,), (2, 15, 1, 8, 8)])
def test_fit_rejects_other_ranks(shape):
    X = np.zeros(shape, np.float32)
    with pytest.raises(
        ValueError, match=r"^X must be 4-D images \(N, C, H, W\) or 2-D feature vectors \(N, F\)"
    ):
        Embedder(models.mlp_embedder(4)).fit(X, np.arange(shape[0]) % 3)


def test_fit_rejects_feature_vectors_for_an_image_trunk():
    X, y = _xy((30, 64))
    with pytest.raises(
        ValueError, match=r"^X must be 4-D images \(N, C, H, W\) for this trunk, got feature vectors"
    ):
        Embedder(models.small_cnn_embedder(4)).fit(X, y, batch_size=12)


def test_fit_rejects_images_for_a_dense_trunk():
    X, y = _xy((30, 1, 8, 8))
    with pytest.raises(
        ValueError, match=r"^X of shape \(30, 1, 8, 8\) does not fit the trunk \(Dense expects"
    ):
        Embedder([layers.Dense(8)]).fit(X, y, batch_size=12)


@pytest.mark.parametrize("shape", [(30, 63), (30, 1, 8, 8)])
def test_fit_after_fit_rejects_another_shape(fitted, shape):
    X, y = _xy(shape)
    with pytest.raises(
        ValueError, match=r"^X must have shape \(N, 64\) \(feature vectors: the trunk was built"
    ):
        fitted.fit(X, y, batch_size=12)


def test_validation_must_match_the_feature_width(digits):
    Xtr, ytr, Xte, yte = digits
    with pytest.raises(ValueError, match=r"^validation\[0\] must have shape \(n, 64\) like X"):
        Embedder(models.mlp_embedder(4)).fit(Xtr, ytr, validation=(Xte[:, :60], yte))
    with pytest.raises(ValueError, match=r"^validation\[0\] must be 2-D"):
        Embedder(models.mlp_embedder(4)).fit(Xtr, ytr, validation=(Xte.reshape(-1, 1, 8, 8), yte))


@pytest.mark.parametrize("shape", [(5, 63), (5, 1, 8, 8), (64,)])
def test_embed_rejects_another_shape(fitted, shape):
    with pytest.raises(ValueError, match=r"^X must have shape \(n, 64\)"):
        fitted.embed(np.zeros(shape, np.float32))


@pytest.mark.parametrize("shape", [(5, 63), (5, 1, 8, 8), (63,)])
def test_retrieve_verify_calibrate_reject_another_width(fitted, digits, shape):
    _, _, Xte, yte = digits
    bad = np.zeros(shape, np.float32)
    with pytest.raises(
        ValueError,
        match=r"^query must be one feature vector \(64\), feature vectors \(n, 64\), "
        r"embeddings \(n, 16\)",
    ):
        fitted.retrieve(bad, Xte, k=1)
    with pytest.raises(ValueError, match=r"^gallery must be feature vectors \(n, 64\), embeddings \(n, 16\)"):
        fitted.retrieve(Xte[:2], bad if bad.ndim > 1 else bad[None], k=1)
    with pytest.raises(ValueError, match=r"^b must be one feature vector \(64\)"):
        fitted.verify(Xte[:5], bad, threshold=None)
    with pytest.raises(ValueError, match=r"^X must be feature vectors \(n, 64\)"):
        fitted.calibrate(bad if bad.ndim > 1 else bad[None], np.arange(len(bad) if bad.ndim > 1 else 1) % 2)


def test_non_numeric_feature_vectors_are_a_type_error(fitted):
    with pytest.raises(TypeError, match=r"^X must be a numeric array"):
        fitted.fit(np.full((6, 64), "a"), np.arange(6) % 2)
    with pytest.raises(TypeError, match=r"^query must be a numeric array"):
        fitted.retrieve(np.full((2, 64), "a"), np.zeros((4, 64), np.float32), k=1)
