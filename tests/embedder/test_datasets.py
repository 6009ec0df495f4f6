"""``Embedder`` on image-file datasets (``ImageFolder`` / ``ImageCSV``): ``embed`` equals, bitwise,
``embed`` of the same images decoded by hand; ``fit`` gives the same weights for any number of
decode threads; ``build_index`` / ``calibrate`` / ``evaluate`` / ``fit(validation=...)`` take
datasets; misuse is a clear error; an interrupted stream leaves no thread behind.

The ORL tests skip when ``<repo>/../shared/data/orl_faces`` is absent; the synthetic ones
cover the same paths on images written into ``tmp_path``."""

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mantissa_embed import Embedder, models
from mantissa_embed.datasets import ImageCSV, ImageFileError, ImageFolder

REPO = Path(__file__).resolve().parents[2]
ORL_DIR = REPO.parent / "shared" / "data" / "orl_faces"
needs_orl = pytest.mark.skipif(
    not (ORL_DIR / "s1").is_dir(),
    reason=f"ORL faces not found: checked {ORL_DIR} (expected s1/ ... s40/ there, i.e. the repository cloned "
    "next to shared/); the synthetic-image tests below cover the same code",
)


def _write(path, size, seed):
    path.parent.mkdir(parents=True, exist_ok=True)
    a = np.random.default_rng(seed).integers(0, 256, (size[1], size[0]), dtype=np.uint8)
    Image.fromarray(a, "L").save(path)


@pytest.fixture
def tree(tmp_path):
    """4 classes x 6 grey 16x12 PNGs (plus a few of other sizes) in tmp_path/t."""
    root = tmp_path / "t"
    for c in range(4):
        for i in range(6):
            _write(root / f"k{c}" / f"{i}.png", (16, 12) if i < 4 else (20, 15), 100 * c + i)
    return root


def _by_hand(paths):
    return np.stack([np.asarray(Image.open(p), np.float32) / 255 for p in paths])[:, None]


def _threads_settle(baseline, timeout=5.0):
    end = time.monotonic() + timeout
    while threading.active_count() > baseline and time.monotonic() < end:
        time.sleep(0.01)
    return threading.active_count()


def _weights(emb):
    return [np.array(p.data, copy=True) for p in emb.parameters()]


@needs_orl
def test_orl_embed_equals_hand_decoded_folder_and_csv(tmp_path):
    ds = ImageFolder(ORL_DIR, size=(112, 92), channels=1, num_workers=2)
    assert len(ds) == 400 and ds.classes == sorted(f"s{k}" for k in range(1, 41))
    X = _by_hand(ds.paths)
    assert X.shape == (400, 1, 112, 92)
    train = np.isin(ds.labels, np.arange(8))
    emb = Embedder(models.small_cnn_embedder(8), seed=0).fit(
        X[train], ds.labels[train], epochs=1, batch_size=32
    )
    Z = emb.embed(X)
    np.testing.assert_array_equal(emb.embed(ds), Z)
    np.testing.assert_array_equal(emb.embed(ds, batch_size=64), emb.embed(X, batch_size=64))
    csv = tmp_path / "orl.csv"
    csv.write_text(
        "label,path\n"
        + "".join(f"{ds.classes[k]},{Path(p).relative_to(ORL_DIR)}\n" for p, k in zip(ds.paths, ds.labels))
    )
    dc = ImageCSV(csv, root=ORL_DIR, size=(112, 92), channels=1)
    assert dc.classes == sorted(ds.classes) and dc.paths == ds.paths
    np.testing.assert_array_equal(emb.embed(dc), Z)


@needs_orl
def test_orl_fit_same_weights_for_1_and_4_decode_threads():
    full = ImageFolder(ORL_DIR, size=(56, 46), channels=1)
    ds = full.subset(np.isin(full.labels, np.arange(6)))
    runs = []
    for nw in (1, 4):
        ds.num_workers = nw
        emb = Embedder(models.small_cnn_embedder(8), seed=3).fit(ds, epochs=2, batch_size=16)
        runs.append((_weights(emb), emb.history_["loss"]))
    for a, b in zip(runs[0][0], runs[1][0]):
        np.testing.assert_array_equal(a, b)
    assert runs[0][1] == runs[1][1]


def test_embed_equals_hand_decoded(tree):
    ds = ImageFolder(tree, size=(12, 16), channels=1, num_workers=3)
    X = np.stack(
        [
            np.asarray(
                Image.open(p).resize((16, 12), Image.BILINEAR)
                if Image.open(p).size != (16, 12)
                else Image.open(p),
                np.float32,
            )
            / 255
            for p in ds.paths
        ]
    )[:, None]
    emb = Embedder(models.small_cnn_embedder(4), seed=0).fit(X, ds.labels, epochs=1, batch_size=12)
    np.testing.assert_array_equal(emb.embed(ds, batch_size=5), emb.embed(X, batch_size=5))
    np.testing.assert_array_equal(emb.embed(ds.subset([3, 1])), emb.embed(X[[3, 1]]))
    assert emb.embed(ds.subset([])).shape == (0, 4)


def test_fit_same_weights_for_any_thread_count_and_prefetch(tree):
    runs = []
    for nw, prefetch in ((1, 1), (4, 2), (6, 3)):
        ds = ImageFolder(tree, size=(12, 16), channels=1, num_workers=nw, prefetch=prefetch)
        emb = Embedder(models.small_cnn_embedder(4), seed=5).fit(ds, epochs=2, batch_size=8)
        runs.append(_weights(emb))
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(a, b)


def test_fit_validation_fraction_and_dataset(tree):
    ds = ImageFolder(tree, size=(12, 16), channels=1, num_workers=2)
    emb = Embedder(models.small_cnn_embedder(4), seed=0).fit(ds, epochs=1, batch_size=8, validation=0.5)
    assert len(emb.history_["loss"]) == 1 and any(k.startswith("val") for k in emb.history_)
    val = ds.subset(ds.labels >= 2)
    emb = Embedder(models.small_cnn_embedder(4), seed=0).fit(
        ds.subset(ds.labels < 2), epochs=1, batch_size=8, validation=val
    )
    assert any(k.startswith("val") for k in emb.history_)


def test_build_index_calibrate_evaluate_take_datasets(tree, tmp_path):
    ds = ImageFolder(tree, size=(12, 16), channels=1, num_workers=2)
    emb = Embedder(models.small_cnn_embedder(4), seed=0).fit(ds, epochs=1, batch_size=8)
    index = emb.build_index(ds)
    assert len(index) == len(ds)
    emb.calibrate(ds)
    res = emb.evaluate(ds)
    assert res
    csv = tmp_path / "qg.csv"
    csv.write_text(
        "label,path,split,is_query,is_gallery\n"
        + "".join(
            f"{k},{p},validation,{int(i % 2 == 0)},1\n" for i, (p, k) in enumerate(zip(ds.paths, ds.labels))
        )
    )
    dc = ImageCSV(csv, size=(12, 16), channels=1)
    assert emb.evaluate(dc.split("validation"))


def test_misuse_is_a_clear_error(tree):
    ds = ImageFolder(tree, size=(12, 16), channels=1)
    emb = Embedder(models.small_cnn_embedder(4), seed=0)
    with pytest.raises(ValueError, match="y must be None"):
        emb.fit(ds, ds.labels)
    with pytest.raises(ValueError, match="augment"):
        emb.fit(ds, augment="hflip")
    with pytest.raises(ValueError, match="empty dataset"):
        emb.fit(ds.subset([]))
    emb.fit(ds, epochs=1, batch_size=8)
    rgb = ImageFolder(tree, size=(12, 16), channels=3)
    with pytest.raises(ValueError, match=r"shape \(3, 12, 16\)"):
        emb.embed(rgb)
    with pytest.raises(ValueError, match=r"\(3, 12, 16\)"):
        emb.fit(rgb)
    with pytest.raises(ValueError, match="validation"):
        emb.fit(ds, validation=ImageFolder(tree, size=(8, 8), channels=1))
    with pytest.raises(TypeError, match="labels"):
        emb.calibrate(ds.load_all())


def test_bad_file_mid_fit_and_embed_names_it_and_leaves_no_thread(tree):
    bad = tree / "k2" / "3.png"
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) * 2 // 3])
    ds = ImageFolder(tree, size=(12, 16), channels=1, num_workers=4)
    baseline = threading.active_count()
    emb = Embedder(models.small_cnn_embedder(4), seed=0)
    i_bad = ds.paths.index(str(bad))
    with pytest.raises(ImageFileError, match="3.png"):  # 2 classes x 2 images: every batch holds the bad one
        emb.fit(ds.subset([0, 1, i_bad - 1, i_bad]), epochs=1, batch_size=4)
    assert _threads_settle(baseline) == baseline
    emb.fit(ds.subset(np.array([p != str(bad) for p in ds.paths])), epochs=1, batch_size=4)
    with pytest.raises(ImageFileError, match="3.png"):
        emb.embed(ds, batch_size=3)
    assert _threads_settle(baseline) == baseline


def test_fit_interrupted_mid_stream_leaves_no_thread(tree, monkeypatch):
    ds = ImageFolder(tree, size=(12, 16), channels=1, num_workers=4, prefetch=3)
    emb = Embedder(models.small_cnn_embedder(4), seed=0)
    emb.fit(ds.subset([0, 1, 6, 7]), epochs=1, batch_size=4)  # builds the trunk
    baseline = threading.active_count()
    calls = []
    real_forward = emb.net.forward

    def forward(x, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_forward(x, *a, **k)

    monkeypatch.setattr(emb.net, "forward", forward)
    with pytest.raises(KeyboardInterrupt):
        emb.fit(ds, epochs=2, batch_size=4)
    assert _threads_settle(baseline) == baseline


def test_evaluate_equals_accuracy_calculator_on_the_same_embeddings(tree, tmp_path):
    from mantissa_embed.evaluation import AccuracyCalculator, query_gallery_metrics

    ds = ImageFolder(tree, size=(12, 16), channels=1, num_workers=2)
    emb = Embedder(models.small_cnn_embedder(4), seed=1).fit(ds, epochs=1, batch_size=8)
    Z = emb.embed(ds)
    got = emb.evaluate(
        ds, metrics=("precision_at_1", "r_precision", "mean_average_precision_at_r", "cmc_at_1")
    )
    want = AccuracyCalculator(
        include=("precision_at_1", "r_precision", "mean_average_precision_at_r"), k="max_bin_count"
    ).get_accuracy(Z, ds.labels)
    for name, value in want.items():
        assert got[name] == value, name
    assert got["cmc_at_1"] == got["precision_at_1"]
    # a CSV's flags: the same numbers as the array function with those flags
    q = np.arange(len(ds)) % 3 != 0
    g = np.arange(len(ds)) % 2 == 0
    csv = tmp_path / "qg.csv"
    csv.write_text(
        "label,path,split,is_query,is_gallery\n"
        + "".join(
            f"{k},{p},validation,{int(a)},{'True' if b else 'False'}\n"
            for p, k, a, b in zip(ds.paths, ds.labels, q, g)
        )
    )
    dc = ImageCSV(csv, size=(12, 16), channels=1)
    metrics = ("cmc_at_1", "cmc_at_3", "precision_at_3", "mean_average_precision_at_r")
    assert emb.evaluate(dc, metrics=metrics) == query_gallery_metrics(Z, ds.labels, q, g, metrics=metrics)
    # arrays: labels required; the dataset's labels may not be given twice
    assert emb.evaluate(Z, ds.labels, metrics=metrics) == query_gallery_metrics(Z, ds.labels, metrics=metrics)
    with pytest.raises(TypeError, match="labels"):
        emb.evaluate(Z)
    with pytest.raises(ValueError, match="labels must be None"):
        emb.evaluate(ds, ds.labels)


def test_the_folder_demo_streams_any_image_folder(tree, tmp_path):
    import io

    from mantissa_embed.__main__ import build_parser, run_demo

    out = io.StringIO()
    args = build_parser().parse_args(
        [
            "demo",
            "--dataset",
            "folder",
            "--data-dir",
            str(tree),
            "--image-size",
            "12x16",
            "--channels",
            "1",
            "--epochs",
            "1",
            "--batch-size",
            "8",
            "--embed-dim",
            "8",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    code = run_demo(args, out=out)
    text = out.getvalue()
    assert code == 0, text
    assert "unseen classes (12 images" in text and "raw pixels (192-D)" in text, text
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [
        "embedding_manifold.png",
        "retrieval_gallery.png",
    ]
    bad = build_parser().parse_args(["demo", "--dataset", "folder", "--out", str(tmp_path / "o")])
    assert run_demo(bad, out=io.StringIO()) == 2  # no --data-dir
