"""Embedder.load checks every entry's .npy header (shape, dtype, size) and the config's
plausibility before reading or allocating anything."""

import io
import json
import math
import re
import time
import tracemalloc
import zipfile

import numpy as np
import pytest
from numpy.lib import format as npy_format

from mantissa_embed import Embedder, layers, models


def _data(n=48, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, 1, 8, 8), dtype=np.float32), np.arange(n, dtype=np.int64) % 4


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    X, y = _data()
    emb = Embedder(models.small_cnn_embedder(6), seed=1).fit(X, y, epochs=1, batch_size=16)
    path = tmp_path_factory.mktemp("m") / "m.npz"
    emb.save(path)
    return emb, path


def _arrays(path):
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def _npy_header(shape, dtype):
    """The bytes of an .npy header (version 1.0) claiming ``shape`` and ``dtype``, no data."""
    buf = io.BytesIO()
    npy_format.write_array_header_1_0(
        buf,
        {"descr": npy_format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": tuple(shape)},
    )
    return buf.getvalue()


def _replace_member(src, dst, member, data):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            zout.writestr(item, data if item.filename == member else zin.read(item.filename))


def _load_fails(src, dst, pat, **replace):
    """Embedder.load of ``src`` with the entries ``replace`` (``"trunk__0.weight"`` for
    ``"trunk/0.weight"``) raises ValueError matching ``<dst name>.*pat``."""
    arrays = _arrays(src)
    arrays.update({k.replace("__", "/") if k != "__config__" else k: v for k, v in replace.items()})
    np.savez(dst, **arrays)
    with pytest.raises(ValueError, match=re.escape(dst.name) + ".*" + pat):
        Embedder.load(dst)


def _load_peak(path, pat):
    """Embedder.load(path) raises ValueError matching ``pat``: (seconds, peak bytes traced)."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(ValueError, match=pat):
            Embedder.load(path)
        return time.perf_counter() - t0, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_header_claiming_1e11_floats_fails_fast_without_allocating(saved, tmp_path):
    _, path = saved
    bad = tmp_path / "huge.npz"
    _replace_member(path, bad, "trunk/0.weight.npy", _npy_header((10**11,), np.float32) + b"\0" * 64)
    seconds, peak = _load_peak(bad, r"huge\.npz.*'trunk/0\.weight'.*100000000000")
    assert seconds < 5.0
    assert peak < 16 * 2**20  # was a MemoryError asking for 373 GiB


def test_wrong_shape_is_rejected_before_its_data_is_read(saved, tmp_path):
    _, path = saved
    arrays = _arrays(path)
    arrays["trunk/0.weight"] = np.zeros(2**22, np.float32)  # a real 16 MiB entry of the wrong shape
    bad = tmp_path / "big.npz"
    np.savez(bad, **arrays)
    assert _load_peak(bad, r"big\.npz.*0\.weight.*must have shape")[1] < 4 * 2**20


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.bool_, np.complex64])
def test_non_float_weights_are_rejected_naming_file_and_entry(saved, tmp_path, dtype):
    emb, path = saved
    w = np.ones(emb.net.parameters()[0].shape, dtype)  # was loaded: all-zero embeddings
    _load_fails(path, tmp_path / "ints.npz", r"'trunk/0\.weight' has dtype", **{"trunk__0.weight": w})


@pytest.mark.parametrize("dtype", [np.float64, np.float16, ">f4"])
def test_other_float_weights_are_cast_to_float32(saved, tmp_path, dtype):
    emb, path = saved
    arrays = {k: (v.astype(dtype) if k.startswith("trunk/") else v) for k, v in _arrays(path).items()}
    other = tmp_path / "cast.npz"
    np.savez(other, **arrays)
    loaded = Embedder.load(other)
    for p, q in zip(loaded.net.parameters(), emb.net.parameters()):
        assert p.data.dtype == np.float32
        np.testing.assert_array_equal(p.data, q.data.astype(dtype).astype(np.float32))


def test_float64_weight_beyond_float32_is_rejected(saved, tmp_path):
    emb, path = saved
    b = np.full(emb.net.parameters()[1].shape, 1e300)
    _load_fails(path, tmp_path / "f64.npz", r"NaN or Inf", **{"trunk__0.bias": b})


def _edit_config(src, dst, edit):
    arrays = _arrays(src)
    cfg = json.loads(str(arrays["__config__"]))
    edit(cfg)
    arrays["__config__"] = np.array(json.dumps(cfg))
    np.savez(dst, **arrays)


@pytest.fixture(scope="module")
def flatten_file(tmp_path_factory):
    X, y = _data()
    emb = Embedder([layers.Flatten()]).fit(X, y, batch_size=16)  # only the proxies learn
    path = tmp_path_factory.mktemp("flat") / "flat.npz"
    emb.save(path)
    assert Embedder.load(path).embed_dim_ == 64
    return path


@pytest.mark.parametrize(
    "shape, pat",
    [
        (
            [1, 10**5, 10**5],
            r"input_shape \[1, 100000, 100000\] has 10000000000 values per image.*at most 268435456",
        ),
        ([2**13, 2**6, 2**6], r"embedding size 33554432 .*exceeds 16777216"),  # 2**25 values: one vector
    ],
    ids=["input_shape", "embed_dim"],
)
def test_implausible_shapes_of_a_flatten_trunk(flatten_file, tmp_path, shape, pat):
    def edit(cfg):
        cfg["input_shape"] = cfg["trunk"]["input_shape"] = shape
        cfg["embed_dim"] = math.prod(shape)  # was loaded: embed_dim_ = 10**10

    bad = tmp_path / "flat_huge.npz"
    _edit_config(flatten_file, bad, edit)
    with pytest.raises(ValueError, match=r"flat_huge\.npz.*" + pat):
        Embedder.load(bad)


def test_implausible_layer_output_in_the_middle(tmp_path):
    X, y = _data()
    trunk = [layers.Conv2D(4, 1), layers.GlobalAvgPool2D()]
    emb = Embedder(trunk, loss="contrastive").fit(X, y, batch_size=16)
    path = tmp_path / "conv.npz"
    emb.save(path)
    assert Embedder.load(path).embed_dim_ == 4

    def edit(cfg):  # the 1x1 conv keeps its parameters and pads an image out to 2**32 values
        cfg["trunk"]["layers"][0]["pad"] = 2**14

    bad = tmp_path / "conv_huge.npz"
    _edit_config(path, bad, edit)
    with pytest.raises(ValueError, match=r"conv_huge\.npz.*layer 0 \(Conv2D\) outputs \d+ values per image"):
        Embedder.load(bad)


def test_config_entry_must_be_a_string(saved, tmp_path):
    _load_fails(saved[1], tmp_path / "cfg.npz", r"__config__", __config__=np.zeros(3))


def test_config_header_claiming_a_huge_string(saved, tmp_path):
    _, path = saved
    bad = tmp_path / "cfg_huge.npz"
    _replace_member(path, bad, "__config__.npy", _npy_header((), "<U500000000"))
    with pytest.raises(ValueError, match=r"cfg_huge\.npz.*'__config__'"):
        Embedder.load(bad)


def test_optimizer_state_header_is_checked(tmp_path):
    X, y = _data()
    emb = Embedder(models.small_cnn_embedder(6), seed=1)
    emb.fit(X, y, epochs=2, batch_size=16, callbacks=[lambda e, ep, h: True])  # stopped: a checkpoint
    path = tmp_path / "ckpt.npz"
    emb.save(path)
    key = next(k for k in _arrays(path) if k.startswith("optim/0/"))
    bad = tmp_path / "ckpt_bad.npz"
    _load_fails(
        path, bad, rf"{key}.*must have shape", **{key.replace("/", "__"): np.zeros(2**20, np.float32)}
    )
    w = np.zeros(emb.net.parameters()[0].shape, np.int64)
    _load_fails(path, bad, rf"{key}.*has dtype int64", **{key.replace("/", "__"): w})


def test_duplicated_members_cannot_claim_the_archive_twice(saved, tmp_path):
    _, path = saved
    bad = tmp_path / "dup.npz"
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(bad, "w") as zout:
        for item in zin.infolist():
            zout.writestr(item, zin.read(item.filename))
        with pytest.warns(UserWarning, match="Duplicate name"):
            zout.writestr("trunk/0.weight.npy", zin.read("trunk/0.weight.npy"))
    with pytest.raises(ValueError, match=r"dup\.npz.*twice"):
        Embedder.load(bad)
