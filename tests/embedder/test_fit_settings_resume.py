"""``FitSettings`` through a checkpoint: the options ``resume=True`` must be given again
(``checkpointed()``) are what ``save`` writes and ``load`` reads back, and resuming with the same
settings continues the run bitwise, and other epochs or batch sizes are refused."""

import numpy as np
import pytest

from mantissa_embed import Embedder, models
from mantissa_embed.embedder._fit_settings import FitSettings


def _toy(n=96, classes=4):
    rng = np.random.default_rng(0)
    y = np.arange(n, dtype=np.int64) % classes
    X = rng.random((n, 1, 8, 8), dtype=np.float32) + y[:, None, None, None].astype(np.float32) * 0.2
    return X, y


def _emb():
    return Embedder(models.small_cnn_embedder(8, seed=1), seed=0)


OPTIONS = dict(
    epochs=3, batch_size=16, validation=0.5, metrics=("r_precision",), schedule="step", augment="hflip"
)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A fit stopped by its callback after epoch 1 and saved there: (path, the settings, X, y)."""
    X, y = _toy()
    path = tmp_path_factory.mktemp("ckpt") / "ckpt.npz"

    def save_and_stop(emb, epoch, history):
        emb.save(path)
        return epoch == 0

    _emb().fit(X, y, callbacks=[save_and_stop], **OPTIONS)
    return path, FitSettings(**OPTIONS, X=X), X, y


def test_the_saved_checkpoint_holds_the_settings(checkpoint):
    path, settings, _, _ = checkpoint
    state = Embedder.load(path).train_state_
    assert {k: state[k] for k in settings.checkpointed()} == settings.checkpointed()
    assert state["validation"] == settings.validation_kind == "fraction"
    assert state["epoch"] == 1 and not state.get("finished")


def test_resume_with_the_same_settings_equals_the_uninterrupted_run(checkpoint):
    path, _, X, y = checkpoint
    full = _emb().fit(X, y, **OPTIONS)
    resumed = Embedder.load(path).fit(X, y, resume=True, **OPTIONS)
    assert resumed.history_ == full.history_
    for k, v in full.net.state_arrays().items():
        np.testing.assert_array_equal(resumed.net.state_arrays()[k], v)
    assert resumed.train_state_ == {**full.train_state_}


@pytest.mark.parametrize(
    "change, msg",
    [
        (dict(epochs=4), r"^epochs must be the epochs of the checkpointed fit \(3\) to resume it, got 4$"),
        (
            dict(batch_size=32),
            r"^resume=True needs the same X and batch_size as the checkpointed fit "
            r"\(48 training images, batch_size 16\)$",
        ),
    ],
)
def test_resume_with_other_settings_is_refused(checkpoint, change, msg):
    path, _, X, y = checkpoint
    with pytest.raises(ValueError, match=msg):
        Embedder.load(path).fit(X, y, resume=True, **{**OPTIONS, **change})
