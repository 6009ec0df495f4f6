"""viz.plot_roc: a log-FAR ROC PNG written atomically; bad input raises naming the argument."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from mantissa_embed.evaluation.verification import verification_metrics  # noqa: E402
from mantissa_embed.viz import plot_roc  # noqa: E402


def _roc(seed, shift):
    rng = np.random.default_rng(seed)
    same = rng.random(500) < 0.2
    d = rng.normal(size=500) + shift * ~same
    m = verification_metrics(d, same)
    return m["fpr"], m["tpr"]


def test_writes_png(tmp_path):
    fpr, tpr = _roc(0, 2.0)
    out = plot_roc(fpr, tpr, tmp_path / "roc.png", title="ROC")
    assert out == tmp_path / "roc.png"
    from matplotlib.image import imread

    img = imread(out)
    assert img.shape[:2] == (480, 560)
    assert img.std() > 0.01  # something was drawn
    assert [p.name for p in tmp_path.iterdir()] == ["roc.png"]  # no temporary file left


def test_several_curves_and_no_marks(tmp_path):
    f1, t1 = _roc(0, 2.0)
    f2, t2 = _roc(1, 0.5)
    plot_roc([f1, f2], [t1, t2], tmp_path / "two.png", label=["trained", "raw"], mark_far=())
    assert (tmp_path / "two.png").stat().st_size > 1000


@pytest.mark.parametrize(
    "kwargs, exc, word",
    [
        (dict(fpr=[0.0, 1.5], tpr=[0.0, 1.0]), ValueError, "fpr"),
        (dict(fpr=[0.0, 1.0], tpr=[0.0, np.nan]), ValueError, "tpr"),
        (dict(fpr=[0.0, 0.5, 1.0], tpr=[0.0, 1.0]), ValueError, "same length"),
        (dict(fpr=np.array([[0.0, 1.0]]), tpr=np.array([[0.0, 1.0]])), ValueError, "fpr"),
        (dict(fpr=[0.0, 1.0], tpr=[0.0, 1.0], mark_far=(0.0,)), ValueError, "mark_far"),
        (dict(fpr=[0.0, 1.0], tpr=[0.0, 1.0], title=3), TypeError, "title"),
        (dict(fpr=[0.0, 1.0], tpr=[0.0, 1.0], label=["a", "b"]), ValueError, "label"),
        (dict(fpr=[0.0, 1.0], tpr=[0.0, 1.0], label=[3]), TypeError, "label"),
    ],
)
def test_bad_input(tmp_path, kwargs, exc, word):
    with pytest.raises(exc, match=word):
        plot_roc(path=tmp_path / "x.png", **kwargs)
    assert not (tmp_path / "x.png").exists()


def test_bad_path(tmp_path):
    with pytest.raises(ValueError, match="png"):
        plot_roc([0.0, 1.0], [0.0, 1.0], tmp_path / "x.jpg")
    with pytest.raises(FileNotFoundError):
        plot_roc([0.0, 1.0], [0.0, 1.0], tmp_path / "nope" / "x.png")
