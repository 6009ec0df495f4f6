"""Embedder.save / Embedder.load: one .npz (arrays + JSON config), atomic, never unpickled."""

import json
import os
import zipfile

import numpy as np
import pytest

from mantissa_embed import Embedder, models


def _data(n=72, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 1, 8, 8), dtype=np.float32)
    y = np.arange(n, dtype=np.int64) % 4
    return X, y


@pytest.fixture(scope="module")
def fitted():
    X, y = _data()
    return Embedder(models.small_cnn_embedder(6), loss="contrastive", margin=0.8, momentum=0.5, seed=3).fit(
        X, y, epochs=2, batch_size=16
    )


def test_round_trip_identical_embeddings(fitted, tmp_path):
    X, _ = _data(30, seed=1)
    path = tmp_path / "model.npz"
    assert fitted.save(path) == str(path)
    loaded = Embedder.load(path)
    np.testing.assert_array_equal(loaded.embed(X), fitted.embed(X))
    np.testing.assert_array_equal(loaded.embed(X, normalize=False), fitted.embed(X, normalize=False))
    # retrieve / verify work on the loaded model without a fit
    i1, d1 = loaded.retrieve(X[0], X, k=4)
    i2, d2 = fitted.retrieve(X[0], X, k=4)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)
    assert loaded.verify(X[0], X[1]) == fitted.verify(X[0], X[1])
    # the recipe and the history survive
    assert loaded.history_ == fitted.history_ and len(loaded.history_["loss"]) == 2
    assert loaded.margin == 0.8 and loaded.momentum == 0.5 and loaded._loss_spec == "contrastive"
    assert loaded.input_shape_ == (1, 8, 8) and loaded.embed_dim_ == 6
    for a, b in zip(loaded.parameters(), fitted.parameters()):
        np.testing.assert_array_equal(a.data, b.data)
        assert a.data is not b.data


def test_file_format_is_plain_npz(fitted, tmp_path):
    path = tmp_path / "m.npz"
    fitted.save(path)
    with np.load(path, allow_pickle=False) as f:
        names = set(f.files)
        cfg = json.loads(str(f["__config__"][()]))
        assert all(f[k].dtype != object for k in f.files)
        w0 = f["trunk/0.weight"]
    assert "__config__" in names and {"trunk/0.weight", "trunk/0.bias"} <= names
    assert cfg["format"] == "mantissa-embed/embedder" and cfg["embed_dim"] == 6
    assert cfg["input_shape"] == [1, 8, 8]
    np.testing.assert_array_equal(w0, fitted.net.parameters()[0].data)


def test_atomic_write_leaves_no_temporary(fitted, tmp_path):
    path = tmp_path / "m.npz"
    fitted.save(path)
    fitted.save(path)  # overwrite in place
    assert sorted(os.listdir(tmp_path)) == ["m.npz"]


def test_exact_path_kept_without_npz_suffix(fitted, tmp_path):
    path = tmp_path / "model.bin"
    fitted.save(str(path))
    assert sorted(os.listdir(tmp_path)) == ["model.bin"]
    X, _ = _data(5)
    np.testing.assert_array_equal(Embedder.load(str(path)).embed(X), fitted.embed(X))


def test_load_with_other_backend(fitted, tmp_path):
    path = tmp_path / "m.npz"
    fitted.save(path)
    loaded = Embedder.load(path, backend="numpy")
    assert loaded.backend == "numpy" and loaded.net.backend == "numpy"
    X, _ = _data(10, seed=2)
    np.testing.assert_allclose(loaded.embed(X), fitted.embed(X), atol=1e-5)


def test_loaded_model_can_continue_training(fitted, tmp_path):
    path = tmp_path / "m.npz"
    fitted.save(path)
    loaded = Embedder.load(path)
    X, y = _data()
    before = [p.data.copy() for p in loaded.parameters()]
    loaded.fit(X, y, epochs=1, batch_size=16)
    assert any(not np.array_equal(a, p.data) for a, p in zip(before, loaded.parameters()))


def test_save_path_type_and_missing_dir(fitted, tmp_path):
    with pytest.raises(TypeError, match=r"path must be a str or os.PathLike"):
        fitted.save(3)
    with pytest.raises(OSError):
        fitted.save(tmp_path / "no" / "such" / "dir.npz")


# ------------------------------------------------------------------ bad files
def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.npz"):
        Embedder.load(tmp_path / "nope.npz")


def test_truncated_file(fitted, tmp_path):
    path = tmp_path / "m.npz"
    fitted.save(path)
    raw = path.read_bytes()
    for cut in (len(raw) // 2, len(raw) - 30, 10):
        bad = tmp_path / f"cut{cut}.npz"
        bad.write_bytes(raw[:cut])
        with pytest.raises(ValueError, match=rf"cut{cut}\.npz"):
            Embedder.load(bad)


def test_foreign_npz(tmp_path):
    path = tmp_path / "foreign.npz"
    np.savez(path, a=np.arange(3), b=np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"foreign\.npz.*__config__"):
        Embedder.load(path)


def test_foreign_files(tmp_path):
    npy = tmp_path / "single.npy"
    np.save(npy, np.arange(4))
    txt = tmp_path / "text.npz"
    txt.write_text("hello, not an archive")
    for p in (npy, txt):
        with pytest.raises(ValueError, match=p.name.replace(".", r"\.")):
            Embedder.load(p)


def test_pickled_content_is_never_loaded(fitted, tmp_path):
    path = tmp_path / "m.npz"
    fitted.save(path)
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["trunk/0.weight"] = np.array([{"evil": 1}], dtype=object)  # needs pickle
    bad = tmp_path / "pickled.npz"
    np.savez(bad, **arrays)
    with pytest.raises(ValueError, match=r"pickled\.npz"):
        Embedder.load(bad)


def _rewrite(src, dst, drop=(), replace=None):
    with np.load(src) as f:
        arrays = {k: f[k] for k in f.files if k not in drop}
    arrays.update(replace or {})
    np.savez(dst, **arrays)


def test_missing_key(fitted, tmp_path):
    path = tmp_path / "m.npz"
    fitted.save(path)
    bad = tmp_path / "missing.npz"
    _rewrite(path, bad, drop=("trunk/2.bias",))
    with pytest.raises(ValueError, match=r"missing\.npz.*missing \['2\.bias'\]"):
        Embedder.load(bad)
    bad2 = tmp_path / "noconfig.npz"
    _rewrite(path, bad2, drop=("__config__",))
    with pytest.raises(ValueError, match=r"noconfig\.npz"):
        Embedder.load(bad2)


def test_wrong_shapes_and_bad_config(fitted, tmp_path):
    path = tmp_path / "m.npz"
    fitted.save(path)
    bad = tmp_path / "shape.npz"
    _rewrite(path, bad, replace={"trunk/0.bias": np.zeros(3, np.float32)})
    with pytest.raises(ValueError, match=r"shape\.npz"):
        Embedder.load(bad)
    for name, cfg in (("json", "{not json"), ("fmt", json.dumps({"format": "other"})), ("nan", None)):
        bad = tmp_path / f"cfg_{name}.npz"
        if cfg is None:
            _rewrite(path, bad, replace={"trunk/0.bias": np.full(8, np.nan, np.float32)})
        else:
            _rewrite(path, bad, replace={"__config__": np.array(cfg)})
        with pytest.raises(ValueError, match=rf"cfg_{name}\.npz"):
            Embedder.load(bad)
    extra = tmp_path / "extra.npz"
    _rewrite(path, extra, replace={"surprise": np.zeros(1)})
    with pytest.raises(ValueError, match=r"extra\.npz.*unexpected"):
        Embedder.load(extra)


def test_load_rejects_bad_backend_and_path_type(fitted, tmp_path):
    path = tmp_path / "m.npz"
    fitted.save(path)
    with pytest.raises(ValueError, match=r"backend"):
        Embedder.load(path, backend="torch")
    with pytest.raises(TypeError, match=r"path must be"):
        Embedder.load(42)


def test_zip_with_config_but_garbage_member(fitted, tmp_path):
    path = tmp_path / "m.npz"
    fitted.save(path)
    bad = tmp_path / "garbage.npz"
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(bad, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "trunk/0.weight.npy":
                data = b"\x93NUMPY garbage"
            zout.writestr(item, data)
    with pytest.raises(ValueError, match=r"garbage\.npz"):
        Embedder.load(bad)


def test_library_loss_object_round_trip(tmp_path):
    from mantissa_embed import losses

    X, y = _data()
    emb = Embedder(models.small_cnn_embedder(3), loss=losses.TripletMarginLoss(margin=0.3), miner=None)
    emb.fit(X, y, batch_size=16)
    path = tmp_path / "lib.npz"
    emb.save(path)
    loaded = Embedder.load(path)
    np.testing.assert_array_equal(loaded.embed(X), emb.embed(X))
    assert type(loaded.loss_func) is losses.TripletMarginLoss and loaded.loss_func.margin == 0.3
    assert loaded.miner_func is None


def test_custom_loss_object_round_trip(tmp_path):
    from mantissa_embed import losses

    class MyLoss(losses.TripletMarginLoss):
        pass

    X, y = _data()
    emb = Embedder(models.small_cnn_embedder(3), loss=MyLoss(margin=0.3), miner=None)
    emb.fit(X, y, batch_size=16)
    path = tmp_path / "custom.npz"
    emb.save(path)
    with pytest.warns(UserWarning, match=r"custom loss or miner"):
        loaded = Embedder.load(path)
    np.testing.assert_array_equal(loaded.embed(X), emb.embed(X))  # the trunk is exact
    assert loaded._loss_spec == "proxy_anchor" and loaded.miner_func is None


def _with_config(src, dst, edit):
    with np.load(src) as f:
        arrays = {k: f[k] for k in f.files}
    cfg = json.loads(str(arrays["__config__"]))
    edit(cfg)
    arrays["__config__"] = np.array(json.dumps(cfg))
    np.savez(dst, **arrays)


@pytest.mark.parametrize(
    "edit",
    [
        lambda c: c["trunk"]["layers"][-1].update(units=10**13),  # was a MemoryError
        lambda c: c["trunk"]["layers"][-1].update(units=2 * 10**7),  # was a 10 GB allocation
        lambda c: c["trunk"]["layers"][0].update(out_channels=10**12),
        lambda c: c["trunk"]["layers"][0].update(pad=2**40),
    ],
    ids=["dense_absurd", "dense_large", "conv_channels", "conv_pad"],
)
def test_manipulated_layer_sizes_fail_before_allocating(fitted, tmp_path, edit):
    path = tmp_path / "m.npz"
    fitted.save(path)
    bad = tmp_path / "sizes.npz"
    _with_config(path, bad, edit)
    with pytest.raises(ValueError, match=r"sizes\.npz.*must have shape"):
        Embedder.load(bad)


@pytest.mark.parametrize(
    "shape, pat",
    [
        ([1.5, 28, 28], r"input_shape\[0\] must be an int"),
        ([True, 28, 28], r"input_shape\[0\] must be an int"),
        ([1, 10**6, 10**6], r"differs from input_shape"),
    ],
)
def test_manipulated_input_shape(fitted, tmp_path, shape, pat):
    path = tmp_path / "m.npz"
    fitted.save(path)
    bad = tmp_path / "shape.npz"
    _with_config(path, bad, lambda c: c.update(input_shape=shape))
    with pytest.raises(ValueError, match=pat):
        Embedder.load(bad)
