"""Input normalization is the model's: ``Sequential(input_mean=, input_std=)`` is saved in its
config, applied by ``Embedder`` in ``fit`` and ``embed`` (after augmentation), never by
``forward``; the ResNets carry ImageNet's."""

import numpy as np
import pytest

from mantissa_embed import Embedder, models
from mantissa_embed.layers import Dense, Flatten, Sequential

MEAN, STD = (0.2, 0.5), (0.25, 2.0)


def _net(**kw):
    return Sequential([Flatten(), Dense(6)], seed=1, **kw).build((2, 3, 3))


def _toy(n=48):
    rng = np.random.default_rng(0)
    return rng.random((n, 2, 3, 3), dtype=np.float32), np.arange(n) % 4


def test_forward_does_not_normalize_and_normalize_input_does():
    X, _ = _toy()
    a, b = _net(input_mean=MEAN, input_std=STD), _net()
    np.testing.assert_array_equal(a.forward(X), b.forward(X))
    want = (X - np.array(MEAN, np.float32)[None, :, None, None]) / np.array(STD, np.float32)[
        None, :, None, None
    ]
    np.testing.assert_allclose(a.normalize_input(X), want, rtol=1e-6)
    assert b.normalize_input(X) is X


def test_embed_applies_it_and_save_load_keeps_it(tmp_path):
    X, y = _toy()
    emb = Embedder(_net(input_mean=MEAN, input_std=STD), loss="contrastive").fit(
        X, y, epochs=1, batch_size=16, augment=None
    )
    Z = emb.net.eval().forward(emb.net.normalize_input(X))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    np.testing.assert_allclose(emb.embed(X), Z, rtol=1e-6, atol=1e-7)
    emb.save(tmp_path / "m.npz")
    loaded = Embedder.load(tmp_path / "m.npz")
    assert loaded.net.input_mean == MEAN and loaded.net.input_std == STD
    np.testing.assert_array_equal(loaded.embed(X), emb.embed(X))


def test_fit_trains_on_normalized_batches():
    """The same fit on pre-normalized images with no normalization in the model gives the same
    weights, bitwise: fit normalizes each batch once, exactly as normalize_input does."""
    X, y = _toy()
    a = Embedder(_net(input_mean=MEAN, input_std=STD), loss="contrastive", seed=3)
    a.fit(X, y, epochs=2, batch_size=16, augment=None)
    b = Embedder(_net(), loss="contrastive", seed=3)
    b.fit(_net(input_mean=MEAN, input_std=STD).normalize_input(X), y, epochs=2, batch_size=16, augment=None)
    for p, q in zip(a.net.parameters(), b.net.parameters()):
        np.testing.assert_array_equal(p.data, q.data)


def test_resnets_carry_imagenet_statistics():
    net = models.resnet18(None)
    assert net.input_mean == (0.485, 0.456, 0.406) and net.input_std == (0.229, 0.224, 0.225)
    cfg = net.get_config()
    assert Sequential.from_config(cfg).input_std == net.input_std
    assert "input_mean" not in models.small_cnn_embedder().get_config()  # old configs stay as they were


@pytest.mark.parametrize(
    "kw, exc, word",
    [
        ({"input_mean": MEAN}, ValueError, "both"),
        ({"input_mean": (0.1,), "input_std": (1.0, 1.0)}, ValueError, "channels"),
        ({"input_mean": MEAN, "input_std": (1.0, 0.0)}, ValueError, "input_std"),
        ({"input_mean": (0.1, float("nan")), "input_std": STD}, ValueError, "input_mean"),
        ({"input_mean": "ab", "input_std": STD}, TypeError, "input_mean"),
        ({"input_mean": (True, 0.1), "input_std": STD}, TypeError, "input_mean"),
    ],
)
def test_bad_normalization_arguments(kw, exc, word):
    with pytest.raises(exc, match=word):
        Sequential([Dense(2)], **kw)


def test_channel_mismatch_is_named():
    emb = Embedder(_net(input_mean=(0.1, 0.2, 0.3), input_std=(1.0, 1.0, 1.0)), loss="contrastive")
    X, y = _toy()
    with pytest.raises(ValueError, match="input_mean"):
        emb.fit(X, y, epochs=1, batch_size=16, augment=None)
