"""datasets: loaders (digits, MNIST IDX, ORL PGM), splits, resizing and the explicit download."""

import gzip
import hashlib
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import datasets
from mantissa_embed.datasets import _download

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = (REPO / ".." / "shared" / "data").resolve()
MNIST_DIR = SHARED_DATA / "mnist"
ORL_DIR = SHARED_DATA / "orl_faces"
needs_mnist = pytest.mark.skipif(
    not (MNIST_DIR / "t10k-images-idx3-ubyte.gz").is_file(),
    reason=(
        f"real MNIST test set not found: checked {MNIST_DIR / 't10k-images-idx3-ubyte.gz'}; the data is "
        "expected at <repo>/../shared/data/mnist (the repository cloned next to shared/)"
    ),
)
needs_orl = pytest.mark.skipif(
    not (ORL_DIR / "s40" / "10.pgm").is_file(),
    reason=(
        f"ORL faces not found: checked {ORL_DIR / 's40' / '10.pgm'}; the data is expected at "
        "<repo>/../shared/data/orl_faces (the repository cloned next to shared/)"
    ),
)

MNIST_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


# --------------------------------------------------------------------------- helpers
def idx_bytes(arr, type_code=0x08):
    arr = np.asarray(arr)
    head = bytes([0, 0, type_code, arr.ndim]) + b"".join(struct.pack(">I", d) for d in arr.shape)
    return head + arr.astype(">u1").tobytes()


def write_mnist(d, split="t10k", n=12, seed=0, gz=True):
    rng = np.random.default_rng(seed)
    imgs = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    labs = rng.integers(0, 10, n, dtype=np.uint8)
    d.mkdir(parents=True, exist_ok=True)
    for stem, arr in ((f"{split}-images-idx3-ubyte", imgs), (f"{split}-labels-idx1-ubyte", labs)):
        data = idx_bytes(arr)
        if gz:
            (d / (stem + ".gz")).write_bytes(gzip.compress(data))
        else:
            (d / stem).write_bytes(data)
    return imgs, labs


def pgm_bytes(img, maxval=255, comment=True):
    h, w = img.shape
    head = b"P5\n"
    if comment:
        head += b"# written by a test\n"
    head += f"{w} {h}\n".encode()
    if comment:
        head += b"# another comment\n"
    head += f"{maxval}\n".encode()
    body = img.astype(">u2" if maxval > 255 else "u1").tobytes()
    return head + body


# --------------------------------------------------------------------------- digits
def test_digits_shape_range_and_values():
    X, y = datasets.load("digits")
    assert X.shape == (1797, 1, 8, 8) and X.dtype == np.float32 and X.flags.c_contiguous
    assert y.shape == (1797,) and y.dtype == np.int64
    assert X.min() == 0.0 and X.max() == 1.0
    from sklearn.datasets import load_digits

    d = load_digits()
    np.testing.assert_array_equal(X[:, 0] * 16, d.images)
    np.testing.assert_array_equal(y, d.target)


def test_digits_rejects_split_and_unknown_name():
    with pytest.raises(ValueError, match="split"):
        datasets.load("digits", split="train")
    with pytest.raises(ValueError, match="name"):
        datasets.load("cifar")
    with pytest.raises(TypeError, match="name"):
        datasets.load(3)


def test_load_size_resizes():
    X, _ = datasets.load("digits", size=(16, 16))
    assert X.shape == (1797, 1, 16, 16) and X.dtype == np.float32
    assert 0.0 <= X.min() and X.max() <= 1.0


# --------------------------------------------------------------------------- MNIST (real)
@needs_mnist
@pytest.mark.parametrize("sub", [True, False])
def test_mnist_real_test_set(sub, tmp_path):
    data_dir = SHARED_DATA if sub else MNIST_DIR
    X, y = datasets.load("mnist", split="test", data_dir=data_dir)
    assert X.shape == (10000, 1, 28, 28) and X.dtype == np.float32
    assert y.dtype == np.int64 and np.bincount(y).tolist() == MNIST_TEST_COUNTS
    assert X.min() == 0.0 and X.max() == 1.0
    # independent parse of the first image: raw bytes after the 16-byte header
    with gzip.open(MNIST_DIR / "t10k-images-idx3-ubyte.gz", "rb") as f:
        raw = f.read(16 + 784)
    np.testing.assert_array_equal(
        np.round(X[0, 0] * 255).astype(np.uint8), np.frombuffer(raw[16:], np.uint8).reshape(28, 28)
    )
    assert y[:5].tolist() == [7, 2, 1, 0, 4]


@needs_mnist
def test_mnist_uncompressed_equals_gzipped(tmp_path):
    for stem in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        with gzip.open(MNIST_DIR / (stem + ".gz"), "rb") as f:
            (tmp_path / stem).write_bytes(f.read())
    X1, y1 = datasets.load("mnist", split="test", data_dir=tmp_path)
    X2, y2 = datasets.load("mnist", split="test", data_dir=MNIST_DIR)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)


@needs_mnist
def test_mnist_env_var(monkeypatch):
    monkeypatch.setenv(datasets.ENV_VAR, str(SHARED_DATA))
    X, y = datasets.load("mnist", split="test")
    assert X.shape[0] == y.shape[0] == 10000


# --------------------------------------------------------------------------- MNIST (synthetic)
@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("sub", [True, False])
def test_mnist_synthetic_roundtrip(tmp_path, gz, sub):
    imgs, labs = write_mnist(tmp_path / "mnist" if sub else tmp_path, "train", gz=gz)
    X, y = datasets.load("mnist", data_dir=tmp_path)  # split=None means train
    np.testing.assert_allclose(X[:, 0], imgs / 255.0, atol=1e-7)
    np.testing.assert_array_equal(y, labs)


def test_mnist_missing_file_names_the_fix_command(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        datasets.load("mnist", split="train", data_dir=tmp_path)
    assert f"python -m mantissa_embed.datasets download mnist --data-dir {tmp_path}" in str(e.value)
    assert "train-images-idx3-ubyte" in str(e.value)


def test_mnist_missing_uses_env_dir_in_command(tmp_path, monkeypatch):
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path / "somewhere"))
    with pytest.raises(FileNotFoundError, match="--data-dir " + str(tmp_path / "somewhere")):
        datasets.load("mnist", split="test")


def test_mnist_bad_split(tmp_path):
    with pytest.raises(ValueError, match="split"):
        datasets.load("mnist", split="validation", data_dir=tmp_path)


@pytest.mark.parametrize("gz", [True, False])
def test_mnist_truncated_file_names_the_file(tmp_path, gz):
    write_mnist(tmp_path, "t10k", gz=False)
    p = tmp_path / "t10k-images-idx3-ubyte"
    data = p.read_bytes()[:-100]
    p.unlink()
    if gz:
        (tmp_path / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(data))
    else:
        p.write_bytes(data)
    with pytest.raises(ValueError, match="t10k-images-idx3-ubyte.*truncated"):
        datasets.load("mnist", split="test", data_dir=tmp_path)


def test_mnist_truncated_gzip_stream(tmp_path):
    write_mnist(tmp_path, "t10k", gz=True)
    p = tmp_path / "t10k-labels-idx1-ubyte.gz"
    p.write_bytes(p.read_bytes()[:20])
    with pytest.raises(ValueError, match="t10k-labels-idx1-ubyte.gz"):
        datasets.load("mnist", split="test", data_dir=tmp_path)


def test_mnist_foreign_file(tmp_path):
    write_mnist(tmp_path, "t10k", gz=False)
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    with pytest.raises(ValueError, match="t10k-images-idx3-ubyte.*not an IDX"):
        datasets.load("mnist", split="test", data_dir=tmp_path)


def test_mnist_wrong_dims_and_count_mismatch(tmp_path):
    write_mnist(tmp_path, "t10k", gz=False)
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(idx_bytes(np.zeros((12, 20, 20), np.uint8)))
    with pytest.raises(ValueError, match="28, 28"):
        datasets.load("mnist", split="test", data_dir=tmp_path)
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(idx_bytes(np.zeros((11, 28, 28), np.uint8)))
    with pytest.raises(ValueError, match="11 images"):
        datasets.load("mnist", split="test", data_dir=tmp_path)
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(idx_bytes(np.zeros((12, 28, 28), np.uint8)))
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(np.full(12, 10, np.uint8)))
    with pytest.raises(ValueError, match="0..9"):
        datasets.load("mnist", split="test", data_dir=tmp_path)


def test_read_idx_other_types_and_oversize(tmp_path):
    p = tmp_path / "f.idx"
    a = np.arange(6, dtype=">i4").reshape(2, 3)
    p.write_bytes(bytes([0, 0, 0x0C, 2]) + struct.pack(">II", 2, 3) + a.tobytes())
    np.testing.assert_array_equal(datasets.read_idx(p), a)
    p.write_bytes(bytes([0, 0, 0x0C, 2]) + struct.pack(">II", 2, 3) + a.tobytes() + b"xx")
    with pytest.raises(ValueError, match="oversized"):
        datasets.read_idx(p)
    p.write_bytes(b"\x00\x00")
    with pytest.raises(ValueError, match="f.idx"):
        datasets.read_idx(p)


# --------------------------------------------------------------------------- ORL
@needs_orl
def test_orl_real():
    X, y = datasets.load("orl_faces", data_dir=SHARED_DATA)
    assert X.shape == (400, 1, 112, 92) and X.dtype == np.float32
    assert 0.0 <= X.min() and X.max() <= 1.0
    np.testing.assert_array_equal(y, np.repeat(np.arange(40), 10))
    PIL = pytest.importorskip("PIL.Image")
    for s, i in [(1, 1), (7, 3), (40, 10)]:
        ref = np.asarray(PIL.open(ORL_DIR / f"s{s}" / f"{i}.pgm"), dtype=np.float32) / 255.0
        np.testing.assert_allclose(X[(s - 1) * 10 + (i - 1), 0], ref, atol=1e-7)
    X2, _ = datasets.load("orl_faces", data_dir=ORL_DIR)  # the tree itself is accepted too
    np.testing.assert_array_equal(X, X2)


@needs_orl
def test_orl_block_average_downscale():
    X, _ = datasets.load("orl_faces", data_dir=SHARED_DATA)
    Xs, _ = datasets.load("orl_faces", data_dir=SHARED_DATA, size=(56, 46))
    ref = X.reshape(400, 1, 56, 2, 46, 2).astype(np.float64).mean(axis=(3, 5))
    np.testing.assert_allclose(Xs, ref, atol=1e-6)


def make_orl_tree(root, subjects=40, images=10, seed=0):
    rng = np.random.default_rng(seed)
    imgs = {}
    for s in range(1, subjects + 1):
        (root / f"s{s}").mkdir(parents=True, exist_ok=True)
        for i in range(1, images + 1):
            img = rng.integers(0, 256, (112, 92), dtype=np.uint8)
            (root / f"s{s}" / f"{i}.pgm").write_bytes(pgm_bytes(img, comment=(s + i) % 2 == 0))
            imgs[s, i] = img
    return imgs


def test_orl_synthetic_order_and_missing_file(tmp_path):
    imgs = make_orl_tree(tmp_path / "orl_faces")
    X, y = datasets.load("orl_faces", data_dir=tmp_path)
    # s10 must come after s9 (numeric, not lexicographic order)
    np.testing.assert_allclose(X[9 * 10 + 0, 0], imgs[10, 1] / 255.0, atol=1e-7)
    np.testing.assert_allclose(X[8 * 10 + 9, 0], imgs[9, 10] / 255.0, atol=1e-7)
    assert y[90] == 9
    (tmp_path / "orl_faces" / "s17" / "4.pgm").unlink()
    with pytest.raises(FileNotFoundError, match=r"s17/4\.pgm"):
        datasets.load("orl_faces", data_dir=tmp_path)


def test_orl_missing_tree_gives_manual_instruction(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        datasets.load("orl_faces", data_dir=tmp_path)
    msg = str(e.value)
    assert "orl_faces/s1/1.pgm" in msg and "unzip" in msg


def test_orl_wrong_size_image(tmp_path):
    make_orl_tree(tmp_path, subjects=40, images=10)
    (tmp_path / "s3" / "2.pgm").write_bytes(pgm_bytes(np.zeros((50, 40), np.uint8)))
    with pytest.raises(ValueError, match=r"s3/2\.pgm"):
        datasets.load("orl_faces", data_dir=tmp_path)


def test_read_pgm_header_comments_and_16bit(tmp_path):
    p = tmp_path / "a.pgm"
    img = np.arange(12, dtype=np.uint16).reshape(3, 4) * 5000
    p.write_bytes(pgm_bytes(img, maxval=65535))
    np.testing.assert_allclose(datasets.read_pgm(p), img / 65535.0, rtol=1e-6)
    img8 = np.array([[0, 7], [3, 15]], np.uint8)
    p.write_bytes(b"P5 2 2 15\n" + img8.tobytes())
    np.testing.assert_allclose(datasets.read_pgm(p), img8 / 15.0, rtol=1e-6)


@pytest.mark.parametrize(
    "content, match",
    [
        (b"P2\n2 2\n255\n0 1 2 3\n", "not a binary PGM"),
        (b"P5\n2 2\n255\n\x00\x01", "truncated"),
        (b"P5\n2 x\n255\n\x00\x01\x02\x03", "malformed"),
        (b"P5\n2 2\n0\n\x00\x01\x02\x03", "maxval"),
        (b"P5\n2 2\n3\n\x00\x01\x02\x09", "exceeds maxval"),
    ],
)
def test_read_pgm_rejects_bad_files(tmp_path, content, match):
    p = tmp_path / "bad.pgm"
    p.write_bytes(content)
    with pytest.raises(ValueError, match=match) as e:
        datasets.read_pgm(p)
    assert "bad.pgm" in str(e.value)


# --------------------------------------------------------------------------- subset / split
@st.composite
def labelled(draw):
    n_classes = draw(st.integers(1, 6))
    counts = draw(st.lists(st.integers(1, 30), min_size=n_classes, max_size=n_classes))
    y = np.repeat(np.arange(n_classes) * 2 + 3, counts)
    y = np.random.default_rng(draw(st.integers(0, 10**6))).permutation(y)
    n = draw(st.integers(1, len(y)))
    return y, n, draw(st.integers(0, 1000))


@settings(max_examples=60, deadline=None)
@given(labelled())
def test_subset_is_stratified_and_deterministic(case):
    y, n, seed = case
    X = np.arange(len(y))[:, None] * np.ones((1, 3))
    Xs, ys = datasets.subset(X, y, n, seed=seed)
    assert Xs.shape == (n, 3) and ys.shape == (n,) and ys.dtype == np.int64
    idx = Xs[:, 0].astype(int)
    assert len(np.unique(idx)) == n and np.all(np.diff(idx) > 0)  # no repeats, original order
    np.testing.assert_array_equal(y[idx], ys)
    classes, counts = np.unique(y, return_counts=True)
    got = np.array([np.sum(ys == c) for c in classes])
    quota = counts * n / len(y)
    assert got.sum() == n
    assert np.all(got >= np.floor(quota)) and np.all(got <= np.ceil(quota))
    Xs2, ys2 = datasets.subset(X, y, n, seed=seed)
    np.testing.assert_array_equal(Xs, Xs2)


def test_subset_seed_changes_selection_and_errors():
    X, y = datasets.load("digits")
    a, _ = datasets.subset(X, y, 100, seed=0)
    b, _ = datasets.subset(X, y, 100, seed=1)
    assert not np.array_equal(a, b)
    with pytest.raises(ValueError, match="n must be <="):
        datasets.subset(X, y, 1798)
    with pytest.raises(ValueError, match="n must be >="):
        datasets.subset(X, y, 0)
    with pytest.raises(TypeError, match="n must be an int"):
        datasets.subset(X, y, 10.0)
    with pytest.raises(ValueError, match="y must have length"):
        datasets.subset(X, y[:-1], 10)
    with pytest.raises(TypeError, match="y"):
        datasets.subset(X, y.astype(float), 10)


def test_split_by_class():
    X, y = datasets.load("digits")
    Xi, yi, Xo, yo = datasets.split_by_class(X, y, [0, 1, 2, 3, 4])
    assert set(np.unique(yi)) == {0, 1, 2, 3, 4} and set(np.unique(yo)) == {5, 6, 7, 8, 9}
    assert len(yi) + len(yo) == len(y)
    np.testing.assert_array_equal(Xi, X[y < 5])
    np.testing.assert_array_equal(Xo, X[y >= 5])
    Xi1, yi1, _, _ = datasets.split_by_class(X, y, 7)
    assert (yi1 == 7).all()
    with pytest.raises(ValueError, match=r"classes \[11\]"):
        datasets.split_by_class(X, y, [1, 11])
    with pytest.raises(ValueError, match="non-empty"):
        datasets.split_by_class(X, y, [])
    with pytest.raises(TypeError, match="classes"):
        datasets.split_by_class(X, y, [1.5])


# --------------------------------------------------------------------------- pad_or_resize
def test_pad_centres_and_keeps_values():
    X = np.random.default_rng(0).random((3, 1, 8, 8), dtype=np.float32)
    P = datasets.pad_or_resize(X, 28, mode="pad")
    assert P.shape == (3, 1, 28, 28)
    np.testing.assert_array_equal(P[:, :, 10:18, 10:18], X)
    assert P.sum() == pytest.approx(X.sum(), rel=1e-6)
    P2 = datasets.pad_or_resize(X[:, 0], (9, 11), mode="pad")  # (N, H, W), odd margins
    assert P2.shape == (3, 9, 11)
    np.testing.assert_array_equal(P2[:, 0:8, 1:9], X[:, 0])
    with pytest.raises(ValueError, match="cannot crop"):
        datasets.pad_or_resize(X, 4, mode="pad")


def test_resize_nearest_integer_factor_is_repeat_and_area_is_block_mean():
    X = np.random.default_rng(1).random((2, 3, 8, 6), dtype=np.float32)
    N = datasets.pad_or_resize(X, (24, 12), mode="nearest")
    np.testing.assert_array_equal(N, X.repeat(3, axis=2).repeat(2, axis=3))
    A = datasets.pad_or_resize(X, (4, 3), mode="area")
    np.testing.assert_allclose(A, X.reshape(2, 3, 4, 2, 3, 2).mean(axis=(3, 5)), atol=1e-6)
    C = datasets.pad_or_resize(np.full((1, 1, 8, 8), 0.3, np.float32), (28, 17))
    np.testing.assert_allclose(C, 0.3, atol=1e-6)


@pytest.mark.parametrize("size", [(28, 28), (16, 12), (5, 3), (8, 8)])
def test_bilinear_matches_torch(size):
    torch = pytest.importorskip("torch")
    X = np.random.default_rng(2).random((2, 1, 8, 8), dtype=np.float32)
    got = datasets.pad_or_resize(X, size, mode="bilinear")
    ref = torch.nn.functional.interpolate(
        torch.from_numpy(X), size=size, mode="bilinear", align_corners=False, antialias=False
    ).numpy()
    np.testing.assert_allclose(got, ref, atol=1e-5)


def test_resize_errors():
    X = np.zeros((2, 1, 8, 8), np.float32)
    with pytest.raises(ValueError, match="mode"):
        datasets.pad_or_resize(X, 4, mode="cubic")
    with pytest.raises(ValueError, match="X must be 3 or 4-D"):
        datasets.pad_or_resize(X[0, 0], 4)
    with pytest.raises(ValueError, match="size"):
        datasets.pad_or_resize(X, (0, 4))
    with pytest.raises(TypeError, match="size"):
        datasets.pad_or_resize(X, (4, 4, 4))
    with pytest.raises(ValueError, match="NaN"):
        datasets.pad_or_resize(np.full((1, 1, 2, 2), np.nan), 4)


# --------------------------------------------------------------------------- download
def _sha(data):
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def fake_mirror(tmp_path, monkeypatch):
    """A file:// mirror holding four small valid IDX .gz files, with their checksums registered."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    table = {}
    rng = np.random.default_rng(5)
    for split, n in (("train", 30), ("t10k", 10)):
        imgs = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labs = rng.integers(0, 10, n, dtype=np.uint8)
        for stem, arr in ((f"{split}-images-idx3-ubyte", imgs), (f"{split}-labels-idx1-ubyte", labs)):
            raw = idx_bytes(arr)
            gz = gzip.compress(raw, mtime=0)
            (mirror / (stem + ".gz")).write_bytes(gz)
            table[stem + ".gz"] = (_sha(gz), hashlib.md5(gz).hexdigest(), _sha(raw))
    monkeypatch.setattr(_download, "MNIST_FILES", table)
    return mirror


def test_download_from_file_url_then_load(fake_mirror, tmp_path, monkeypatch):
    data = tmp_path / "data"
    rc = datasets.main(["download", "mnist", "--data-dir", str(data), "--url-base", fake_mirror.as_uri()])
    assert rc == 0
    assert sorted(p.name for p in (data / "mnist").iterdir()) == sorted(_download.MNIST_FILES)
    X, y = datasets.load("mnist", split="train", data_dir=data)
    assert X.shape == (30, 1, 28, 28) and y.shape == (30,)

    # present and valid: a second run fetches nothing
    def boom(url, f, timeout=60.0):
        raise AssertionError("should not fetch")

    monkeypatch.setattr(_download, "_fetch", boom)
    assert datasets.main(["download", "mnist", "--data-dir", str(data)]) == 0


def test_download_checksum_mismatch_leaves_nothing(fake_mirror, tmp_path, capsys):
    p = fake_mirror / "t10k-labels-idx1-ubyte.gz"
    p.write_bytes(gzip.compress(idx_bytes(np.zeros(10, np.uint8))))  # valid file, wrong content
    data = tmp_path / "data"
    with pytest.raises(_download.ChecksumError, match="t10k-labels-idx1-ubyte.gz"):
        _download.download_mnist(data, fake_mirror.as_uri(), log=None)
    assert not (data / "mnist" / "t10k-labels-idx1-ubyte.gz").exists()
    assert not any(n.name.endswith(".part") for n in (data / "mnist").iterdir())
    rc = datasets.main(["download", "mnist", "--data-dir", str(data), "--url-base", fake_mirror.as_uri()])
    assert rc == 1 and "checksum mismatch" in capsys.readouterr().err


def test_download_accepts_recompressed_mirror(fake_mirror, tmp_path):
    # same IDX payload, different gzip bytes (mtime/level): accepted through the content hash
    for p in fake_mirror.iterdir():
        raw = gzip.decompress(p.read_bytes())
        p.write_bytes(gzip.compress(raw, compresslevel=1, mtime=123456))
    out = _download.download_mnist(tmp_path / "d", fake_mirror.as_uri(), log=None)
    assert len(out) == 4 and all(p.is_file() for p in out)


def test_download_network_failure_is_reported(fake_mirror, tmp_path, monkeypatch, capsys):
    def offline(url, f, timeout=60.0):
        raise OSError(f"no route to host for {url}")

    monkeypatch.setattr(_download, "_fetch", offline)
    with pytest.raises(OSError, match="could not download") as e:
        _download.download_mnist(tmp_path / "d", log=None)
    for base in _download.MIRRORS:  # every default mirror was tried
        assert base in str(e.value)
    assert datasets.main(["download", "mnist", "--data-dir", str(tmp_path / "d")]) == 1
    assert "could not download" in capsys.readouterr().err


@needs_mnist
def test_real_test_files_verify_against_published_checksums(tmp_path, monkeypatch):
    # the shared copy was re-gzipped: its .gz hash differs, the IDX payload hash is the published one
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        assert _download.verify_file(MNIST_DIR / name, name) in ("gz", "content")
    mirror = tmp_path / "m"
    mirror.mkdir()
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(MNIST_DIR / name, mirror / name)
    test_only = {k: v for k, v in _download.MNIST_FILES.items() if k.startswith("t10k")}
    monkeypatch.setattr(_download, "MNIST_FILES", test_only)
    _download.download_mnist(tmp_path / "d", mirror.as_uri(), log=None)
    X, y = datasets.load("mnist", split="test", data_dir=tmp_path / "d")
    assert np.bincount(y).tolist() == MNIST_TEST_COUNTS
    with pytest.raises(_download.ChecksumError):
        _download.verify_file(MNIST_DIR / "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")


def test_download_orl_prints_manual_instruction(tmp_path, capsys):
    assert datasets.main(["download", "orl_faces", "--data-dir", str(tmp_path)]) == 2
    assert "orl_faces/s1/1.pgm" in capsys.readouterr().err


def test_cli_module_entry_point():
    # the exact command printed by FileNotFoundError works as a subprocess
    env = dict(os.environ)
    out = subprocess.run(
        [sys.executable, "-m", "mantissa_embed.datasets", "download", "mnist", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0 and "--data-dir" in out.stdout and "--url-base" in out.stdout


def test_pad_or_resize_empty_images_is_a_value_error():
    from mantissa_embed.datasets import pad_or_resize

    with pytest.raises(ValueError, match=r"at least 1x1"):  # was an IndexError
        pad_or_resize(np.ones((2, 1, 0, 8), np.float32), 10)
