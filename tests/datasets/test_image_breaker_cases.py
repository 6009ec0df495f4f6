"""Cases a breaker found: extreme aspect ratios in eval mode, huge boxes, files changed after
the build, NUL bytes, integer and float modes, concurrent builds and the warnings filter,
evaluate's flag overrides, out-of-range arguments."""

import threading
import warnings

import numpy as np
import pytest
from PIL import Image

from mantissa_embed import Embedder, models
from mantissa_embed.datasets import ImageCSV, ImageFileError, ImageFolder
from mantissa_embed.datasets.image_transforms import CenterCrop, Resize


def test_a_thin_strip_is_cropped_from_its_preimage(tmp_path):
    a = np.random.default_rng(0).integers(0, 256, (1, 4000, 3), dtype=np.uint8)
    (tmp_path / "c").mkdir()
    Image.fromarray(a).save(tmp_path / "c" / "x.png")
    ds = ImageFolder(tmp_path, size=16)
    got = ds[0]
    # the reference resizes the whole strip (16 x 64000) then crops: the same up to rounding
    im = CenterCrop(16).apply(Resize(16).apply(Image.fromarray(a), None), None)
    want = np.asarray(im, np.float32).transpose(2, 0, 1) / 255
    assert got.shape == (3, 16, 16) and np.abs(got - want).max() <= 2 / 255


def test_a_huge_box_is_a_value_error_naming_the_line(tmp_path, write_image):
    write_image(tmp_path / "a.png")
    (tmp_path / "d.csv").write_text("label,path,x_1,y_1,x_2,y_2\n0,a.png,0,0,1e20,5\n")
    with pytest.raises(ValueError, match=r"line 2: x_2 must be a number of pixels"):
        ImageCSV(tmp_path / "d.csv", size=8)


def test_a_nul_byte_in_a_path_names_the_line(tmp_path):
    (tmp_path / "d.csv").write_text("label,path\n0,a\x00b.png\n")
    with pytest.raises(ImageFileError, match=r"CSV line 2"):
        ImageCSV(tmp_path / "d.csv", size=8)


def test_a_file_resized_after_the_build_is_named(tmp_path, write_image):
    for i in range(4):
        write_image(tmp_path / f"k{i % 2}" / f"{i}.png", size=(16, 16), seed=i)
    ds = ImageFolder(tmp_path, size=8)
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(ds.paths[0])
    with pytest.raises(ImageFileError, match=r"was 16x16 when the dataset was built"):
        ds[0]
    with pytest.raises(ImageFileError, match="changed since"):
        Embedder(models.small_cnn_embedder(4)).fit(ds, epochs=1, batch_size=4)


@pytest.mark.parametrize(
    "mode, values, want",
    [
        ("I", np.array([[0, 128, 255]], np.int32), [0, 128, 255]),  # 8-bit values in a 32-bit image
        ("I", np.array([[0, 32768, 65535]], np.int32), [0, 128, 255]),  # 16-bit values
        ("F", np.array([[0.0, 0.5, 1.0]], np.float32), [0, 128, 255]),  # [0, 1] floats
        ("F", np.array([[0.0, 100.0, 300.0]], np.float32), [0, 100, 255]),  # 0..255 floats, clipped
    ],
)
def test_integer_and_float_modes(tmp_path, mode, values, want):
    (tmp_path / "k").mkdir()
    Image.fromarray(values, mode).save(tmp_path / "k" / "x.tif")
    ds = ImageFolder(tmp_path, size=(1, 3), channels=1)
    np.testing.assert_array_equal(np.rint(ds[0][0, 0] * 255), want)


def test_concurrent_builds_leave_the_warnings_filters_as_they_were(image_tree):
    before = list(warnings.filters)

    def build():
        for _ in range(10):
            ImageFolder(image_tree, size=8, num_workers=2)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert warnings.filters == before


def test_evaluate_takes_flags_over_a_csv_with_empty_ones(tmp_path, write_image):
    rows = []
    for i in range(12):
        write_image(tmp_path / f"{i}.png", size=(12, 12), seed=i)
        rows.append(f"{i % 3},{i}.png,train,,")
    (tmp_path / "d.csv").write_text("label,path,split,is_query,is_gallery\n" + "\n".join(rows) + "\n")
    ds = ImageCSV(tmp_path / "d.csv", size=8, channels=1)
    emb = Embedder(models.small_cnn_embedder(4), seed=0).fit(ds, epochs=1, batch_size=6)
    with pytest.raises(ValueError, match="is_query is empty"):
        emb.evaluate(ds)
    ones = np.ones(len(ds), bool)
    assert emb.evaluate(ds, is_query=ones, is_gallery=ones) == emb.evaluate(emb.embed(ds), ds.labels)


def test_out_of_range_arguments(image_tree):
    with pytest.raises(ValueError, match=r"prefetch must be an int in \[1, 64\]"):
        ImageFolder(image_tree, size=8, prefetch=65)
    ds = ImageFolder(image_tree, size=8)
    with pytest.raises(IndexError):
        ds.subset(np.array([2**64 - 1], np.uint64))
