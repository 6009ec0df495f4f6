"""``ImageFolder``: what it lists (classes, labels, paths), what ``ds[i]`` gives (shape, dtype,
range, mode conversions, the eval resize/crop against an independent Pillow computation) and
``subset``."""

import os

import numpy as np
import pytest
from PIL import Image

from mantissa_embed.datasets import ImageDataset, ImageFolder


def _pillow_eval(path, size, mode):
    """The eval transform computed independently: torchvision's Resize(int) + CenterCrop(int)
    on a Pillow image (shorter side to ``size``, long side ``int(size * long / short)``; crop
    top/left ``round((dim - size) / 2)``), or an exact resize for a pair; then ``/ 255``."""
    im = Image.open(path).convert(mode)
    w, h = im.size
    if isinstance(size, int):
        nw, nh = (size, int(size * h / w)) if w <= h else (int(size * w / h), size)
        im = im.resize((nw, nh), Image.BILINEAR) if (nw, nh) != (w, h) else im
        top, left = round((nh - size) / 2.0), round((nw - size) / 2.0)
        im = im.crop((left, top, left + size, top + size))
    else:
        H, W = size
        im = im.resize((W, H), Image.BILINEAR) if (W, H) != (w, h) else im
    a = np.asarray(im, np.float32) / 255
    return a[None] if a.ndim == 2 else a.transpose(2, 0, 1)


def test_lists_sorted_classes_labels_and_paths(image_tree):
    ds = ImageFolder(image_tree, size=8)
    assert isinstance(ds, ImageDataset)
    assert ds.classes == ["a", "b", "c"]
    assert len(ds) == 12
    assert ds.labels.dtype == np.int64
    np.testing.assert_array_equal(ds.labels, np.repeat([0, 1, 2], 4))
    assert ds.paths == sorted(ds.paths)
    for p, lab in zip(ds.paths, ds.labels):
        assert os.path.basename(os.path.dirname(p)) == ds.classes[lab]
    assert ds.image_shape == (3, 8, 8)


def test_ignores_hidden_and_non_image_files_and_recurses(image_tree, write_image):
    (image_tree / "a" / "notes.txt").write_text("not an image")
    write_image(image_tree / "a" / ".hidden.png")
    write_image(image_tree / "a" / "deeper" / "x.PNG")  # nested, upper-case extension
    (image_tree / ".git").mkdir()
    write_image(image_tree / ".git" / "y.png")
    ds = ImageFolder(image_tree, size=8)
    assert ds.classes == ["a", "b", "c"]
    assert len(ds) == 13
    assert any(p.endswith(os.path.join("deeper", "x.PNG")) for p in ds.paths)


@pytest.mark.parametrize("size", [8, 11, (9, 13), (14, 18)])
@pytest.mark.parametrize("channels", [1, 3])
def test_getitem_matches_independent_pillow(image_tree, size, channels):
    ds = ImageFolder(image_tree, size=size, channels=channels)
    H, W = (size, size) if isinstance(size, int) else size
    for i in range(len(ds)):
        x = ds[i]
        assert x.shape == (channels, H, W) and x.dtype == np.float32
        assert 0.0 <= x.min() and x.max() <= 1.0
        np.testing.assert_array_equal(x, _pillow_eval(ds.paths[i], size, "L" if channels == 1 else "RGB"))
    np.testing.assert_array_equal(ds[-1], ds[len(ds) - 1])


def test_int_size_center_crops_a_wide_and_a_tall_image(tmp_path, write_image):
    write_image(tmp_path / "r" / "a" / "wide.png", size=(40, 10), seed=1)
    write_image(tmp_path / "r" / "b" / "tall.png", size=(7, 31), seed=2)
    ds = ImageFolder(tmp_path / "r", size=6, channels=1)
    for i in range(2):
        assert ds[i].shape == (1, 6, 6)
        np.testing.assert_array_equal(ds[i], _pillow_eval(ds.paths[i], 6, "L"))


def test_getitem_rejects_bad_indices(image_tree):
    ds = ImageFolder(image_tree, size=8)
    with pytest.raises(IndexError, match="out of range"):
        ds[12]
    with pytest.raises(IndexError):
        ds[-13]
    with pytest.raises(TypeError, match="subset"):
        ds[np.arange(2)]
    with pytest.raises(TypeError):
        ds[True]


@pytest.mark.parametrize("mode", ["L", "LA", "P", "RGBA", "CMYK", "1", "I;16"])
def test_modes_convert_to_rgb_and_grey(tmp_path, write_image, mode):
    root = tmp_path / "m"
    if mode == "I;16":  # a 16-bit grey PNG, full 16-bit range
        a16 = np.random.default_rng(3).integers(0, 65536, (12, 15)).astype(np.uint16)
        (root / "a").mkdir(parents=True)
        path = str(root / "a" / "x.png")
        Image.fromarray(a16).save(path)
        assert Image.open(path).mode.startswith("I")
        grey = ((a16.astype(np.int64) * 255 + 32767) // 65535).astype(np.uint8)  # 65535 -> 255, rounded
        expect_l = grey.astype(np.float32) / 255
        expect_rgb = np.repeat(expect_l[None], 3, axis=0)
    else:
        fmt = "TIFF" if mode == "CMYK" else None
        ext = "tif" if mode == "CMYK" else "png"
        path = write_image(root / "a" / f"x.{ext}", size=(15, 12), mode=mode, seed=4, fmt=fmt)
        src = Image.open(path)
        assert src.mode == mode
        expect_l = np.asarray(src.convert("L"), np.float32) / 255
        expect_rgb = np.asarray(src.convert("RGB"), np.float32).transpose(2, 0, 1) / 255
    write_image(root / "b" / "y.png", size=(15, 12))
    rgb = ImageFolder(root, size=(12, 15), channels=3)
    grey = ImageFolder(root, size=(12, 15), channels=1)
    np.testing.assert_array_equal(rgb[0], expect_rgb)
    np.testing.assert_array_equal(grey[0], expect_l[None] if expect_l.ndim == 2 else expect_l)
    assert rgb[0].shape == (3, 12, 15) and grey[0].shape == (1, 12, 15)


def test_subset_by_indices_and_mask(image_tree):
    ds = ImageFolder(image_tree, size=8, num_workers=2)
    sub = ds.subset([5, 0, 11])
    assert len(sub) == 3 and isinstance(sub, ImageFolder)
    assert sub.paths == [ds.paths[5], ds.paths[0], ds.paths[11]]
    np.testing.assert_array_equal(sub.labels, ds.labels[[5, 0, 11]])
    assert sub.classes == ds.classes and sub.image_shape == ds.image_shape and sub.num_workers == 2
    np.testing.assert_array_equal(sub[0], ds[5])
    mask = ds.labels == 2
    by_mask = ds.subset(mask)
    assert by_mask.paths == [p for p, m in zip(ds.paths, mask) if m]
    assert len(ds) == 12  # the original is untouched
    neg = ds.subset([-1])
    assert neg.paths == [ds.paths[-1]]
    empty = ds.subset([])
    assert len(empty) == 0 and empty.labels.dtype == np.int64
    assert empty.load_all().shape == (0, 3, 8, 8)
    assert len(empty.subset(np.zeros(0, bool))) == 0
    with pytest.raises(IndexError):
        ds.subset([12])
    with pytest.raises(ValueError, match="mask"):
        ds.subset(np.ones(5, bool))
    with pytest.raises(TypeError):
        ds.subset([0.5])


def test_load_all_equals_getitem(image_tree):
    ds = ImageFolder(image_tree, size=(7, 9), num_workers=3)
    X = ds.load_all()
    assert X.shape == (12, 3, 7, 9)
    for i in range(len(ds)):
        np.testing.assert_array_equal(X[i], ds[i])


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"size": 0}, ValueError),
        ({"size": (8,)}, ValueError),
        ({"size": "8"}, TypeError),
        ({"channels": 2}, ValueError),
        ({"channels": True}, ValueError),
        ({"num_workers": 0}, ValueError),
        ({"num_workers": 1.5}, TypeError),
        ({"prefetch": 0}, ValueError),
        ({"train_transform": "flip"}, TypeError),
        ({"skip_bad": "yes"}, TypeError),
    ],
)
def test_bad_arguments(image_tree, kwargs, exc):
    with pytest.raises(exc):
        ImageFolder(image_tree, **kwargs)


def test_root_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ImageFolder(tmp_path / "nope")
    f = tmp_path / "file.png"
    f.write_bytes(b"x")
    with pytest.raises(NotADirectoryError):
        ImageFolder(f)
    with pytest.raises(TypeError):
        ImageFolder(b"/tmp")


def test_symlink_loop_lists_each_file_once(image_tree):
    try:
        os.symlink(image_tree / "a", image_tree / "a" / "loop")
    except (OSError, NotImplementedError):
        pytest.skip("cannot make symbolic links here")
    ds = ImageFolder(image_tree, size=8)
    assert len(ds) == 12 and len(set(ds.paths)) == 12
    assert not any(os.path.join("a", "loop", "") in p for p in ds.paths)
