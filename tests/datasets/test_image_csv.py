"""``ImageCSV``: Open Metric Learning's columns (label, path, split, is_query, is_gallery,
x_1/y_1/x_2/y_2), label mapping, path resolution, ``split`` and the query/gallery flags; the
CSV's own errors name the file and line."""

import os

import numpy as np
import pytest
from PIL import Image

from mantissa_embed.datasets import ImageCSV, ImageFileError


def _csv(path, header, rows, encoding="utf-8"):
    lines = [",".join(header)] + [",".join(str(v) for v in r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding=encoding)
    return path


@pytest.fixture
def files(tmp_path, write_image):
    """Six images in tmp_path/img: relative names img/0.png .. img/5.png."""
    for i in range(6):
        write_image(tmp_path / "img" / f"{i}.png", size=(16 + i, 12), seed=i)
    return [f"img/{i}.png" for i in range(6)]


def test_string_labels_map_to_sorted_ints(tmp_path, files):
    labels = ["dog", "cat", "dog", "emu", "cat", "cat"]
    p = _csv(tmp_path / "d.csv", ["label", "path"], zip(labels, files))
    ds = ImageCSV(p, size=8)
    assert ds.classes == ["cat", "dog", "emu"]
    assert ds.labels.dtype == np.int64
    assert [ds.classes[k] for k in ds.labels] == labels
    assert ds.paths == [os.path.join(str(tmp_path), f) for f in files]
    assert ds[0].shape == (3, 8, 8)


def test_int_labels_are_kept(tmp_path, files):
    p = _csv(tmp_path / "d.csv", ["path", "label"], zip(files, [7, 3, 7, 12, 3, 3]))
    ds = ImageCSV(p, size=8)
    np.testing.assert_array_equal(ds.labels, [7, 3, 7, 12, 3, 3])
    assert ds.classes == [3, 7, 12]


def test_relative_paths_resolve_against_root_else_csv_folder(tmp_path, files):
    sub = tmp_path / "lists"
    sub.mkdir()
    p = _csv(sub / "d.csv", ["label", "path"], [(0, f) for f in files[:3]] + [(1, f) for f in files[3:]])
    with pytest.raises(ImageFileError, match="no such file") as e:
        ImageCSV(p, size=8)  # relative to lists/: not there
    assert e.value.line == 2 and os.path.join("lists", "img", "0.png") in e.value.path
    ds = ImageCSV(p, root=tmp_path, size=8)
    assert ds.paths[0] == os.path.join(str(tmp_path), "img/0.png")
    abs_csv = _csv(sub / "abs.csv", ["label", "path"], [(0, tmp_path / f) for f in files])
    assert ImageCSV(abs_csv, root="/elsewhere", size=8).paths[0] == str(tmp_path / files[0])


def test_same_images_as_hand_decoded(tmp_path, files):
    p = _csv(tmp_path / "d.csv", ["label", "path"], [(i % 2, f) for i, f in enumerate(files)])
    ds = ImageCSV(p, size=(12, 16), channels=1)
    X = ds.load_all()
    for i, f in enumerate(files):
        im = Image.open(tmp_path / f).convert("L")
        if im.size != (16, 12):
            im = im.resize((16, 12), Image.BILINEAR)
        np.testing.assert_array_equal(X[i, 0], np.asarray(im, np.float32) / 255)


def test_split_and_query_gallery(tmp_path, files):
    rows = [
        (0, files[0], "train", "", ""),
        (1, files[1], "train", "", ""),
        (0, files[2], "validation", 1, 1),
        (1, files[3], "validation", "True", "false"),
        (0, files[4], "validation", "0", "1"),
        (1, files[5], "validation", "FALSE", "TRUE"),
    ]
    p = _csv(tmp_path / "d.csv", ["label", "path", "split", "is_query", "is_gallery"], rows)
    ds = ImageCSV(p, size=8)
    train, val = ds.split("train"), ds.split("validation")
    assert train.paths == ds.paths[:2] and val.paths == ds.paths[2:]
    assert list(val.splits) == ["validation"] * 4
    q, g = val.query_gallery()
    np.testing.assert_array_equal(q, [True, True, False, False])
    np.testing.assert_array_equal(g, [True, False, True, True])
    np.testing.assert_array_equal(val.is_query, q)
    with pytest.raises(ValueError, match="line 2: is_query is empty"):
        ds.query_gallery()  # the train rows have no flags
    with pytest.raises(ValueError, match="split must be one of"):
        ds.split("test")
    assert train.subset([1]).split("train").paths == [ds.paths[1]]
    with pytest.raises(ValueError, match="no 'validation' rows"):
        train.split("validation")


def test_without_split_or_flags(tmp_path, files):
    ds = ImageCSV(_csv(tmp_path / "d.csv", ["label", "path"], [(0, f) for f in files]), size=8)
    assert ds.splits is None and ds.is_query is None and ds.is_gallery is None
    assert ds.query_gallery() == (None, None)
    with pytest.raises(ValueError, match="no 'split' column"):
        ds.split("train")


def test_bounding_boxes_crop(tmp_path, files):
    rows = [
        (0, files[0], 2, 3, 12, 11),
        (0, files[1], "", "", "", ""),
        (1, files[2], 0, 0, 18, 12),
        (1, files[3], 1.4, 0.6, 9.6, 7),
    ]  # rounded to ints
    p = _csv(tmp_path / "d.csv", ["label", "path", "x_1", "y_1", "x_2", "y_2"], rows)
    ds = ImageCSV(p, size=(8, 10), channels=3)
    assert ds.source_size(0) == (10, 8) and ds.source_size(1) == (17, 12) and ds.source_size(3) == (9, 6)
    im = Image.open(tmp_path / files[0]).convert("RGB").crop((2, 3, 12, 11))
    np.testing.assert_array_equal(ds[0], np.asarray(im, np.float32).transpose(2, 0, 1) / 255)
    im = Image.open(tmp_path / files[3]).convert("RGB").crop((1, 1, 10, 7)).resize((10, 8), Image.BILINEAR)
    np.testing.assert_array_equal(ds[3], np.asarray(im, np.float32).transpose(2, 0, 1) / 255)


@pytest.mark.parametrize(
    "box, match",
    [
        ((0, 0, 99, 5), "bounding box"),
        ((5, 5, 5, 9), "bounding box"),
        ((6, 2, 3, 9), "bounding box"),
    ],
)
def test_bounding_box_outside_or_empty(tmp_path, files, box, match):
    p = _csv(
        tmp_path / "d.csv",
        ["label", "path", "x_1", "y_1", "x_2", "y_2"],
        [(0, files[0], 0, 0, 4, 4), (1, files[1]) + box],
    )
    with pytest.raises(ImageFileError, match=match) as e:
        ImageCSV(p, size=8)
    assert e.value.line == 3 and e.value.path.endswith("1.png") and "CSV line 3" in str(e.value)


@pytest.mark.parametrize(
    "header, rows, match",
    [
        (["label", "path", "x_1", "y_1"], [(0, "img/0.png", 1, 1)], "all four columns"),
        (
            ["label", "path", "x_1", "y_1", "x_2", "y_2"],
            [(0, "img/0.png", 1, "", 5, 5)],
            "line 2: a bounding box",
        ),
        (["label", "path", "x_1", "y_1", "x_2", "y_2"], [(0, "img/0.png", -1, 0, 5, 5)], "line 2: x_1"),
        (["label", "path", "x_1", "y_1", "x_2", "y_2"], [(0, "img/0.png", "nan", 0, 5, 5)], "line 2: x_1"),
        (["label", "path", "x_1", "y_1", "x_2", "y_2"], [(0, "img/0.png", "a", 0, 5, 5)], "line 2: x_1"),
    ],
)
def test_malformed_boxes(tmp_path, files, header, rows, match):
    with pytest.raises(ValueError, match=match):
        ImageCSV(_csv(tmp_path / "d.csv", header, rows), size=8)


def test_bom_blank_lines_and_whitespace(tmp_path, files):
    p = tmp_path / "d.csv"
    p.write_text(" label , path \n\n0, img/0.png \n,\n1,img/1.png\n", encoding="utf-8-sig")
    ds = ImageCSV(p, size=8)
    assert len(ds) == 2 and ds.paths[0].endswith("img/0.png")
    assert ds._line(1) == 5  # lines are counted in the file, blank ones included


@pytest.mark.parametrize(
    "labels, classes",
    [
        (["7", "07", "7"], ["07", "7"]),  # two distinct strings, not one int
        (["1_0", "10"], ["10", "1_0"]),  # Python's int() reads "1_0" as 10: not a decimal label here
        (["\u0663", "3"], ["3", "\u0663"]),  # an Arabic-Indic digit three is a string label
        (["99999999999999999999", "1"], ["1", "99999999999999999999"]),  # beyond int64: strings, not a crash
        (["-2", "+5", "007"], [-2, 5, 7]),  # a sign and zero padding are ints while no two strings collide
    ],
)
def test_int_detection_keeps_distinct_labels_apart(tmp_path, files, labels, classes):
    p = _csv(tmp_path / "d.csv", ["label", "path"], zip(labels, files))
    ds = ImageCSV(p, size=8)
    assert ds.classes == classes
    if isinstance(classes[0], str):
        assert [ds.classes[k] for k in ds.labels] == labels
    else:
        np.testing.assert_array_equal(ds.labels, [int(v) for v in labels])
