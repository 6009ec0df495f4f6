"""Embedder.fit's training loop: losses with weights, batch layouts, validation, callbacks,
early stopping, checkpoint/resume and Ctrl-C."""

import os
import signal
import time

import numpy as np
import pytest

from mantissa_embed import Embedder, losses, models


def _toy(n=96, seed=0, classes=4, hw=8):
    rng = np.random.default_rng(seed)
    y = np.arange(n, dtype=np.int64) % classes
    X = rng.random((n, 1, hw, hw), dtype=np.float32) + y[:, None, None, None].astype(np.float32) * 0.2
    return X, y


def _emb(**kw):
    kw.setdefault("seed", 0)
    return Embedder(models.small_cnn_embedder(8, seed=1), **kw)


def _weights(emb):
    return {k: v.copy() for k, v in emb.net.state_arrays().items()}


# -------------------------------------------------------------- losses that own weights
WEIGHT_LOSSES = [
    lambda C, D: losses.ArcFaceLoss(C, D),
    lambda C, D: losses.CosFaceLoss(C, D),
    lambda C, D: losses.SphereFaceLoss(C, D),
    lambda C, D: losses.SubCenterArcFaceLoss(C, D),
    lambda C, D: losses.ProxyAnchorLoss(C, D),
    lambda C, D: losses.ProxyNCALoss(C, D),
    lambda C, D: losses.NormalizedSoftmaxLoss(C, D),
    lambda C, D: losses.SoftTripleLoss(C, D, centers_per_class=2),
    lambda C, D: losses.LargeMarginSoftmaxLoss(C, D),
    lambda C, D: losses.P2SGradLoss(C, D),
    lambda C, D: losses.MarginLoss(learn_beta=True, num_classes=C),
]


@pytest.mark.parametrize("make", WEIGHT_LOSSES)
def test_loss_weights_train_and_round_trip(make, tmp_path):
    X, y = _toy()
    loss = make(4, 8)
    before = [p.data.copy() for p in loss.parameters()]
    assert before, "the loss must own parameters"
    emb = _emb(loss=loss, miner=None).fit(X, y, epochs=1, batch_size=16, augment=None)
    moved = [not np.array_equal(b, p.data) for b, p in zip(before, loss.parameters())]
    assert any(moved), f"{type(loss).__name__}: the loss's own parameters never changed"
    path = emb.save(tmp_path / "m.npz")
    back = Embedder.load(path)
    np.testing.assert_array_equal(back.embed(X), emb.embed(X))
    assert type(back.loss_func) is type(loss)
    for a, b in zip(back.loss_func.parameters(), loss.parameters()):
        np.testing.assert_array_equal(a.data, b.data)


def test_manifold_loss_says_it_takes_no_labels():
    X, y = _toy()
    with pytest.raises(ValueError, match=r"labels and ref_labels are not supported by ManifoldLoss"):
        _emb(loss=losses.ManifoldLoss(8, K=4), miner=None).fit(X, y, epochs=1, batch_size=16)


def test_default_proxy_loss_round_trip(tmp_path):
    X, y = _toy()
    emb = _emb().fit(X, y, epochs=1, batch_size=16)
    assert isinstance(emb.loss_func, losses.ProxyAnchorLoss) and emb.loss_func.num_classes == 4
    back = Embedder.load(emb.save(tmp_path / "m.npz"))
    np.testing.assert_array_equal(back.embed(X), emb.embed(X))
    np.testing.assert_array_equal(back.loss_func.proxies.data, emb.loss_func.proxies.data)


def test_labels_need_not_be_contiguous():
    X, y = _toy()
    emb = _emb().fit(X, y * 7 + 5, epochs=1, batch_size=16)
    np.testing.assert_array_equal(emb.classes_, [5, 12, 19, 26])


# ---------------------------------------------------------------------- batch layouts
@pytest.mark.parametrize("batch_size", [7, 11, 13, 5])
def test_prime_batch_size_is_a_clear_error(batch_size):
    X, y = _toy()
    with pytest.raises(ValueError, match=r"batch_size \(\d+\) cannot be split"):
        _emb().fit(X, y, batch_size=batch_size)


def test_m_per_class_equal_to_batch_size_is_a_clear_error():
    X, y = _toy()
    with pytest.raises(ValueError, match=r"m_per_class \(16\) must be at most batch_size / 2"):
        _emb(m_per_class=16).fit(X, y, batch_size=16)


def test_m_per_class_not_dividing_is_a_clear_error():
    X, y = _toy()
    with pytest.raises(ValueError, match=r"m_per_class \(5\) must divide batch_size \(16\)"):
        _emb(m_per_class=5).fit(X, y, batch_size=16)


@pytest.mark.parametrize("batch_size", [10**12, 10**6])
def test_huge_batch_size_fails_at_once(batch_size):
    X, y = _toy()
    t = time.perf_counter()
    with pytest.raises(ValueError, match=r"batch_size must be <= 65536"):
        _emb().fit(X, y, batch_size=batch_size)
    assert time.perf_counter() - t < 5.0


def test_every_batch_has_two_classes_of_two():
    X, y = _toy(n=60, classes=3)
    seen = []

    def miner(E, labels):
        seen.append(np.unique(labels, return_counts=True)[1])
        return None

    _emb(loss="triplet", miner=miner).fit(X, y, epochs=1, batch_size=6, augment=None)
    assert seen and all(len(c) >= 2 and (c >= 2).all() for c in seen)


# ------------------------------------------------------------------------- validation
def test_validation_fraction_of_classes_fills_history():
    X, y = _toy(n=120, classes=6)
    emb = _emb().fit(X, y, epochs=3, batch_size=16, validation=0.34)
    h = emb.history_
    assert len(h["loss"]) == 3
    for name in ("val_precision_at_1", "val_mean_average_precision_at_r"):
        assert len(h[name]) == 3 and all(0.0 <= v <= 1.0 for v in h[name])
    assert emb.classes_.shape == (4,)  # two of the six classes held out
    assert len(emb.train_state_["val_classes"]) == 2


def test_validation_pair_and_metrics():
    X, y = _toy()
    Xv, yv = _toy(40, seed=3)
    emb = _emb().fit(X, y, epochs=2, batch_size=16, validation=(Xv, yv), metrics=("r_precision",))
    assert len(emb.history_["val_r_precision"]) == 2 and "val_precision_at_1" not in emb.history_


@pytest.mark.parametrize(
    "kw, exc, msg",
    [
        (dict(validation=1.5), ValueError, r"validation must be in \(0, 1\)"),
        (dict(validation="x"), TypeError, r"validation must be None"),
        (
            dict(validation=(np.zeros((4, 1, 9, 9), np.float32), np.arange(4))),
            ValueError,
            r"validation\[0\] must have shape",
        ),
        (
            dict(validation=(np.zeros((4, 1, 8, 8), np.float32), np.arange(3))),
            ValueError,
            r"validation\[1\] must have length 4",
        ),
        (dict(validation=0.5, metrics=("nmi",)), ValueError, r"metrics must be among"),
        (dict(early_stopping=2), ValueError, r"need validation data"),
        (dict(validation=0.5, early_stopping=0), ValueError, r"early_stopping must be >= 1"),
        (dict(callbacks=[3]), TypeError, r"callbacks\[0\] must have on_epoch_end"),
        (dict(augment="rotate"), ValueError, r"augment must be one of"),
        (dict(augment=3), TypeError, r"augment must be"),
        (dict(schedule=3), TypeError, r"schedule must be"),
        (dict(schedule="warmup"), ValueError, r"schedule must be one of"),
        (dict(resume=True), ValueError, r"resume=True needs a checkpoint"),
        (dict(resume=1), TypeError, r"resume must be a bool"),
    ],
)
def test_fit_bad_arguments(kw, exc, msg):
    X, y = _toy(n=120, classes=6)
    with pytest.raises(exc, match=msg):
        _emb().fit(X, y, epochs=1, batch_size=16, **kw)


# ---------------------------------------------------------- callbacks, early stopping
def test_callback_protocol_and_stop():
    X, y = _toy()
    calls = []

    class Stop:
        def on_epoch_end(self, embedder, epoch, history):
            calls.append((embedder, epoch, len(history["loss"])))
            return epoch == 1

    emb = _emb()
    emb.fit(X, y, epochs=5, batch_size=16, callbacks=[Stop()])
    assert [(c[1], c[2]) for c in calls] == [(0, 1), (1, 2)] and calls[0][0] is emb
    assert len(emb.history_["loss"]) == 2 and not emb.net.training


def test_early_stopping_and_restore_best(monkeypatch):
    X, y = _toy(n=120, classes=6)
    scores = iter([0.5, 0.9, 0.4, 0.3, 0.2, 0.1])
    snapshots = []

    class Spy:  # records the weights after every epoch
        def on_epoch_end(self, embedder, epoch, history):
            snapshots.append(_weights(embedder))

    import mantissa_embed.embedder._fitting as fitting

    # validation scores scripted per epoch: best at epoch 1, then two epochs without a gain
    monkeypatch.setattr(
        fitting,
        "_validate",
        lambda e, Xv, yv, metrics: {m: (next(scores) if k == 0 else 0.0) for k, m in enumerate(metrics)},
    )
    emb = _emb()
    emb.fit(
        X, y, epochs=6, batch_size=16, validation=0.34, early_stopping=2, restore_best=True, callbacks=[Spy()]
    )
    assert len(emb.history_["loss"]) == 4  # epochs 3 and 4 did not improve on epoch 2
    for k, v in _weights(emb).items():
        np.testing.assert_array_equal(v, snapshots[1][k])


# ----------------------------------------------------------------- checkpoint / resume
def test_resume_equals_uninterrupted_run(tmp_path):
    X, y = _toy()
    full = _emb().fit(X, y, epochs=4, batch_size=16)
    ckpt = tmp_path / "ckpt.npz"

    class SaveAndStop:
        def on_epoch_end(self, embedder, epoch, history):
            embedder.save(ckpt)
            return epoch == 1

    _emb().fit(X, y, epochs=4, batch_size=16, callbacks=[SaveAndStop()])
    resumed = Embedder.load(ckpt).fit(X, y, epochs=4, batch_size=16, resume=True)
    assert resumed.history_["loss"] == pytest.approx(full.history_["loss"], rel=0, abs=0)
    for k, v in _weights(full).items():
        np.testing.assert_array_equal(_weights(resumed)[k], v)
    np.testing.assert_array_equal(resumed.loss_func.proxies.data, full.loss_func.proxies.data)


def test_resume_needs_matching_plan(tmp_path):
    X, y = _toy()
    emb = _emb().fit(X, y, epochs=2, batch_size=16, callbacks=[lambda e, ep, h: True])
    with pytest.raises(ValueError, match=r"epochs must be the epochs of the checkpointed fit \(2\)"):
        emb.fit(X, y, epochs=3, batch_size=16, resume=True)
    with pytest.raises(ValueError, match=r"same X and batch_size"):
        emb.fit(X, y, epochs=2, batch_size=32, resume=True)


# ------------------------------------------------------------------------------ Ctrl-C
def test_ctrl_c_stops_after_the_current_step():
    X, y = _toy()
    batches = []

    def miner(E, labels):
        batches.append(1)
        if len(batches) == 3:
            os.kill(os.getpid(), signal.SIGINT)
        return None

    emb = _emb(loss="triplet", miner=miner, optimizer="adam")
    with pytest.raises(KeyboardInterrupt):
        emb.fit(X, y, epochs=2, batch_size=16)
    assert len(batches) == 3 and emb.fitted_ and not emb.net.training
    assert emb.optimizer_.state[0]["step"] == 3  # the third step completed, no fourth began
    assert np.isfinite(emb.embed(X)).all()


def test_resume_with_dropout_equals_uninterrupted_run(tmp_path):
    from mantissa_embed.layers import Dense, Dropout, Flatten

    X, y = _toy()

    def make():
        return Embedder([Flatten(), Dense(16, act="relu"), Dropout(0.3), Dense(4)], seed=2)

    full = make().fit(X, y, epochs=3, batch_size=16, augment=None)
    ckpt = tmp_path / "ckpt.npz"

    def save_and_stop(embedder, epoch, history):
        embedder.save(ckpt)
        return epoch == 0

    make().fit(X, y, epochs=3, batch_size=16, augment=None, callbacks=[save_and_stop])
    resumed = Embedder.load(ckpt).fit(X, y, epochs=3, batch_size=16, augment=None, resume=True)
    for k, v in _weights(full).items():
        np.testing.assert_array_equal(_weights(resumed)[k], v)


def test_progress_bar_shows_the_last_validation_metric(capsys):
    pytest.importorskip("tqdm")
    X, y = _toy(n=120, classes=6)
    _emb().fit(X, y, epochs=2, batch_size=16, validation=0.34, verbose=True)
    err = capsys.readouterr().err
    assert "epoch 2/2" in err and "val=precision_at_1=" in err


def test_resume_with_a_validation_fraction(tmp_path):
    X, y = _toy(n=120, classes=6)
    kw = dict(epochs=3, batch_size=16, validation=0.34)
    full = _emb().fit(X, y, **kw)
    ckpt = tmp_path / "ckpt.npz"

    def save_and_stop(embedder, epoch, history):
        embedder.save(ckpt)
        return epoch == 0

    _emb().fit(X, y, callbacks=[save_and_stop], **kw)
    resumed = Embedder.load(ckpt).fit(X, y, resume=True, **kw)
    assert resumed.history_ == full.history_
    for k, v in _weights(full).items():
        np.testing.assert_array_equal(_weights(resumed)[k], v)


def test_resume_after_a_fit_stopped_inside_an_epoch_is_refused(tmp_path):
    """A fit stopped between two checkpoints (an error in a batch, Ctrl-C, a raising callback)
    leaves weights past its last checkpoint: resume=True would silently differ from an
    uninterrupted run, so it is a ValueError, also after save/load; a new fit starts clean."""
    X, y = _toy()
    calls = []

    def miner(E, labels):
        calls.append(1)
        if len(calls) == 8:  # the second batch of the second epoch (6 batches per epoch)
            raise RuntimeError("boom")
        return None

    emb = _emb(loss="triplet", miner=miner)
    with pytest.raises(RuntimeError, match="boom"):
        emb.fit(X, y, epochs=3, batch_size=16)
    assert emb.train_state_["epoch"] == 1 and "RuntimeError: boom" in emb.train_state_["stale"]
    with pytest.raises(ValueError, match=r"stopped inside epoch 2 \(RuntimeError: boom\)"):
        emb.fit(X, y, epochs=3, batch_size=16, resume=True)
    path = emb.save(tmp_path / "stale.npz")
    with pytest.raises(ValueError, match="stopped inside epoch 2"):
        Embedder.load(path).fit(X, y, epochs=3, batch_size=16, resume=True)

    def cb(epoch, loss):  # fit's callback= runs before the epoch's checkpoint
        if epoch == 1:
            raise KeyError("cb")

    emb = _emb()
    with pytest.raises(KeyError):
        emb.fit(X, y, epochs=3, batch_size=16, callback=cb)
    with pytest.raises(ValueError, match="stopped inside epoch 2"):
        emb.fit(X, y, epochs=3, batch_size=16, resume=True)
    # a finished fit, then a new one failing in its first epoch: no checkpoint left to resume
    emb = _emb(loss="triplet", miner=miner)
    calls.clear()
    emb.fit(X, y, epochs=1, batch_size=16)
    calls[:] = [1] * 6  # the new fit's second batch raises
    with pytest.raises(RuntimeError):
        emb.fit(X, y, epochs=1, batch_size=16)
    with pytest.raises(ValueError, match="needs a checkpoint"):
        emb.fit(X, y, epochs=1, batch_size=16, resume=True)
