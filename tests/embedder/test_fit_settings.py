"""``FitSettings``, the options of one ``Embedder.fit`` call: frozen, with ``fit``'s defaults,
checked once at construction with the errors ``fit`` raises (naming the argument), and the one
object the rest of the fit reads."""

import dataclasses
import inspect
import re

import numpy as np
import pytest

from mantissa_embed import Embedder, models, optim
from mantissa_embed.embedder import _fit_settings, _fitting
from mantissa_embed.embedder._fit_settings import METRICS, FitSettings


def _toy(n=96, classes=4):
    rng = np.random.default_rng(0)
    y = np.arange(n, dtype=np.int64) % classes
    X = rng.random((n, 1, 8, 8), dtype=np.float32) + y[:, None, None, None].astype(np.float32) * 0.2
    return X, y


def _emb():
    return Embedder(models.small_cnn_embedder(8, seed=1), seed=0)


def test_frozen():
    s = FitSettings(epochs=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.epochs = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.lr = 0.1


def test_fields_are_fits_options_with_its_defaults():
    params = inspect.signature(Embedder.fit).parameters
    options = {n: p.default for n, p in params.items() if n not in ("self", "X", "y")}
    fields = {f.name: f.default for f in dataclasses.fields(FitSettings)}
    assert fields == options


def test_normalized_at_construction():
    cb = lambda emb, epoch, history: False  # noqa: E731
    s = FitSettings(
        epochs=np.int64(3),
        lr=np.float32(0.5),
        verbose=np.bool_(True),
        metrics="r_precision",
        callbacks=cb,
        validation=0.25,
        schedule="default",
    )
    assert s.epochs == 3 and type(s.epochs) is int
    assert type(s.lr) is float and type(s.verbose) is bool
    assert s.metrics == ("r_precision",) and s.callbacks == (cb,)
    assert s.schedule == optim.make_schedule("cosine")  # DEFAULTS["schedule"], built
    assert FitSettings(schedule=None).schedule is None
    assert s.validation == 0.25 and s.validation_kind == "fraction"
    assert FitSettings().validation_kind is None
    assert s.checkpointed() == {"epochs": 3, "batch_size": 64}
    assert FitSettings() == FitSettings(metrics=list(FitSettings().metrics))  # equal settings compare equal


def test_augment_is_read_for_the_input():
    X, _ = _toy()
    assert FitSettings(X=X).augment == "default"
    assert FitSettings(X=X[:, 0, 0, :]).augment is None  # feature vectors: "default" is no augmentation
    with pytest.raises(ValueError, match=r"^augment='hflip' transforms images; X holds feature vectors"):
        FitSettings(augment="hflip", X=X[:, 0, 0, :])


def test_a_validation_pair_is_checked_against_x_and_stored_converted():
    X, y = _toy()
    s = FitSettings(validation=(X[:8].astype(np.float64), list(y[:8])), X=X)
    Xv, yv = s.validation
    assert Xv.dtype == np.float32 and yv.dtype == np.int64 and s.validation_kind == "given"
    with pytest.raises(ValueError, match=r"^validation\[0\] must have shape \(n, 1, 8, 8\) like X"):
        FitSettings(validation=(X[:8, :, :4], y[:8]), X=X)


X_TOY, Y_TOY = _toy()
NEEDS_VALIDATION = "restore_best and early_stopping need validation data (validation=...)"
#: one bad value per option, with the exact error fit raises for it
BAD = [
    (dict(epochs=0), ValueError, "epochs must be >= 1, got 0"),
    (dict(epochs=1.5), TypeError, "epochs must be an int, got float"),
    (dict(batch_size=1), ValueError, "batch_size must be >= 2, got 1"),
    (dict(batch_size=10**6), ValueError, "batch_size must be <= 65536, got 1000000"),
    (dict(lr=0.0), ValueError, "lr must be > 0.0, got 0.0"),
    (dict(lr="big"), TypeError, "lr must be a number, got str"),
    (dict(verbose=1), TypeError, "verbose must be a bool, got int"),
    (dict(callback=3), TypeError, "callback must be callable(epoch, loss) or None, got int"),
    (dict(profile="yes"), TypeError, "profile must be a bool, got str"),
    (dict(metrics=()), ValueError, "metrics must name at least one metric"),
    (dict(metrics=3), TypeError, "metrics must be a sequence of metric names, got int"),
    (dict(metrics=("nmi",)), ValueError, f"metrics must be among {METRICS}, got 'nmi'"),
    (
        dict(callbacks=[3]),
        TypeError,
        "callbacks[0] must have on_epoch_end(embedder, epoch, history) or be callable with those arguments, "
        "got int",
    ),
    (dict(callbacks=3), TypeError, "callbacks must be a sequence of callbacks, got int"),
    (dict(validation=0.5, early_stopping=0), ValueError, "early_stopping must be >= 1, got 0"),
    (dict(restore_best=1), TypeError, "restore_best must be a bool, got int"),
    (dict(resume=1), TypeError, "resume must be a bool, got int"),
    (
        dict(augment="rotate"),
        ValueError,
        "augment must be one of ('default', 'affine', 'hflip', 'affine+hflip'), None or a callable(X, rng), "
        "got 'rotate'",
    ),
    (dict(augment=3), TypeError, "augment must be a string, None or a callable(X, rng), got int"),
    (
        dict(schedule=3),
        TypeError,
        "schedule must be a string, None or an object with factor(step, total_steps), got int",
    ),
    (dict(schedule="warmup"), ValueError, "schedule must be one of"),
    (dict(early_stopping=2), ValueError, NEEDS_VALIDATION),
    (dict(restore_best=True), ValueError, NEEDS_VALIDATION),
    (dict(validation=1.5), ValueError, "validation must be in (0, 1) as a fraction of the classes, got 1.5"),
    (
        dict(validation="x"),
        TypeError,
        "validation must be None, a fraction of the classes in (0, 1), a pair (X_val, y_val) or an "
        "ImageDataset, got str",
    ),
    (
        dict(validation=(np.zeros((4, 1, 8, 8), np.float32), np.arange(3))),
        ValueError,
        "validation[1] must have length 4 (one per embedding), got 3",
    ),
]


@pytest.mark.parametrize("kw, exc, msg", BAD, ids=[f"{list(kw)[-1]}-{i}" for i, (kw, _, _) in enumerate(BAD)])
def test_a_bad_value_raises_fits_error_naming_the_argument(kw, exc, msg):
    name = list(kw)[-1]
    with pytest.raises(exc) as direct:
        FitSettings(**kw, X=X_TOY)
    assert str(direct.value).startswith(msg)
    assert name in str(direct.value)
    with pytest.raises(exc) as via_fit:
        _emb().fit(X_TOY, Y_TOY, **kw)
    assert str(via_fit.value) == str(direct.value)


def test_checked_once_per_fit_and_passed_down_as_one_object(monkeypatch):
    X, y = _toy()
    checked = []
    check_int = _fit_settings.check_int
    monkeypatch.setattr(
        _fit_settings, "check_int", lambda v, name, **kw: checked.append(name) or check_int(v, name, **kw)
    )
    schedules = []
    make_schedule = _fit_settings.make_schedule
    monkeypatch.setattr(_fit_settings, "make_schedule", lambda s: schedules.append(s) or make_schedule(s))
    seen = []
    fit = _fitting.fit
    monkeypatch.setattr(
        _fitting, "fit", lambda emb, X, y, settings: seen.append(settings) or fit(emb, X, y, settings)
    )

    _emb().fit(X, y, epochs=2, batch_size=16, validation=0.5, early_stopping=3, schedule="step")
    assert sorted(checked) == ["batch_size", "early_stopping", "epochs"]
    assert schedules == ["step"]
    assert len(seen) == 1 and isinstance(seen[0], FitSettings)
    assert seen[0] == FitSettings(
        epochs=2, batch_size=16, validation=0.5, early_stopping=3, schedule="step", X=X
    )


def test_a_bad_option_fails_before_any_training():
    X, y = _toy()
    emb = _emb()
    calls = []
    emb.miner_func = lambda E, labels: calls.append(1)
    with pytest.raises(ValueError, match=re.escape("restore_best and early_stopping need validation data")):
        emb.fit(X, y, epochs=2, batch_size=16, restore_best=True)
    assert calls == [] and not emb.fitted_ and emb.optimizer_ is None
