"""Bad input: every bad file or CSV is a clear error naming the file (and the CSV line), found
when the dataset is built when a header read can find it, at decode otherwise; never a crash,
a hang or a silent skip. ``skip_bad=True`` skips and reports each one."""

import os
import warnings

import numpy as np
import pytest
from PIL import Image

from mantissa_embed.datasets import ImageCSV, ImageFileError, ImageFolder
from mantissa_embed.datasets._stream import eval_batches


def _truncate(path, keep=0.6):
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[: int(len(data) * keep)])


@pytest.fixture
def tree(tmp_path, write_image):
    """root/a, root/b: 3 good JPEGs each (big enough that cutting one at 60% keeps its header)."""
    root = tmp_path / "r"
    for c in "ab":
        for i in range(3):
            write_image(root / c / f"{i}.jpg", size=(96, 80), seed=i + (10 if c == "b" else 0))
    return root


def _csv_for(tmp_path, paths, labels=None):
    p = tmp_path / "list.csv"
    labels = labels if labels is not None else [i % 2 for i in range(len(paths))]
    p.write_text("label,path\n" + "".join(f"{lab},{q}\n" for lab, q in zip(labels, paths)))
    return p


# ---------------------------------------------------------------------- found at build time
@pytest.mark.parametrize(
    "kind, match",
    [
        ("zero", "empty file"),
        ("text", "not an image"),
        ("dir", "not a regular file"),
        ("fifo", "not a regular file"),
    ],
)
def test_header_errors_at_build(tmp_path, tree, kind, match):
    bad = tree / "a" / ("x.png" if kind != "dir" else "x.jpg")
    if kind == "zero":
        bad.write_bytes(b"")
    elif kind == "text":
        bad.write_text("just some text, not a PNG\n")
    elif kind == "dir":
        bad.mkdir()
    else:
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this platform")
        os.mkfifo(bad)
    if kind != "dir":  # a folder named x.jpg inside a class folder is walked into, not listed
        with pytest.raises(ImageFileError, match=match) as e:
            ImageFolder(tree, size=8)
        assert e.value.path == str(bad) and str(bad) in str(e.value)
    else:
        assert len(ImageFolder(tree, size=8)) == 6
    with pytest.raises(ImageFileError, match=match) as e:  # the same file listed in a CSV: names the line
        ImageCSV(_csv_for(tmp_path, [tree / "a" / "0.jpg", bad]), size=8)
    assert e.value.line == 3 and "CSV line 3" in str(e.value)


def test_missing_file_in_csv(tmp_path, tree):
    with pytest.raises(ImageFileError, match="no such file") as e:
        ImageCSV(_csv_for(tmp_path, ["r/a/0.jpg", "r/a/1.jpg", "r/a/nope.jpg"]), size=8)
    assert e.value.line == 4 and e.value.path.endswith("nope.jpg")


def test_decompression_bomb(tmp_path, tree, monkeypatch):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 96 * 80 - 1)  # just under: a warning from Pillow
    with pytest.raises(ImageFileError, match="decompression-bomb") as e:
        ImageFolder(tree, size=8)
    assert e.value.path.endswith("0.jpg")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)  # far under: Pillow's own error
    with pytest.raises(ImageFileError, match="decompression-bomb"):
        ImageCSV(_csv_for(tmp_path, ["r/a/0.jpg"]), size=8)


def test_empty_class_folder_and_empty_root(tmp_path, tree):
    (tree / "empty").mkdir()
    with pytest.raises(ValueError, match="without image files.*empty"):
        ImageFolder(tree, size=8)
    (tree / "empty" / "readme.txt").write_text("no images here")
    with pytest.raises(ValueError, match="without image files"):
        ImageFolder(tree, size=8)
    nothing = tmp_path / "nothing"
    nothing.mkdir()
    with pytest.raises(ValueError, match="no class sub-folders"):
        ImageFolder(nothing)
    (nothing / "a").mkdir()
    (nothing / "a" / "x.txt").write_text("x")
    with pytest.raises(ValueError, match="holds no image files"):
        ImageFolder(nothing)


# ---------------------------------------------------------------------- CSV format errors
@pytest.mark.parametrize(
    "text, match",
    [
        ("path\nr/a/0.jpg\n", "line 1: no 'label' column"),
        ("label\n0\n", "line 1: no 'path' column"),
        ("label,file\n0,r/a/0.jpg\n", "no 'path' column"),
        ("", "empty CSV"),
        ("label,path\n", "no rows"),
        ("label,path,path\n0,r/a/0.jpg,r/a/1.jpg\n", "line 1: duplicate columns"),
        ("label,path\n0,r/a/0.jpg,extra\n", "line 2: more fields"),
        ("label,path\n0,r/a/0.jpg\n,r/a/1.jpg\n", "line 3: empty label"),
        ("label,path\n0,\n", "line 2: empty path"),
        ("label,path,split\n0,r/a/0.jpg,train\n1,r/a/1.jpg,test\n", "line 3: split must be"),
        ("label,path,split\n0,r/a/0.jpg,Train\n", "line 2: split must be"),
        ("label,path,is_query,is_gallery\n0,r/a/0.jpg,2,1\n", "line 2: is_query must be 0, 1, True or False"),
        ("label,path,is_query,is_gallery\n0,r/a/0.jpg,1,yes\n", "line 2: is_gallery must be"),
        (
            "label,path,split,is_query,is_gallery\n0,r/a/0.jpg,validation,1,\n",
            "line 2: a validation row needs",
        ),
        ('label,path\n0,"r/a/0.jpg\n', "malformed CSV"),  # an unclosed quote, not a field read to EOF
        ('label,path\n0,"r/a/0.jpg\n1,r/a/1.jpg\n', "malformed CSV"),
        ('label,path\n0,"r/a/0"x.jpg\n', "line 2: malformed CSV"),
    ],
)
def test_csv_format_errors_name_the_csv(tmp_path, tree, text, match):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(ValueError, match=match) as e:
        ImageCSV(p, size=8)
    assert str(p) in str(e.value)


def test_csv_not_utf8_missing_or_not_a_file(tmp_path, tree):
    p = tmp_path / "latin1.csv"
    p.write_bytes("label,path\ncaf\u00e9,r/a/0.jpg\n".encode("latin-1"))
    with pytest.raises(ValueError, match="not a UTF-8 CSV") as e:
        ImageCSV(p, size=8)
    assert str(p) in str(e.value)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ImageCSV(tmp_path / "nope.csv")
    with pytest.raises(ValueError, match="not a regular file"):
        ImageCSV(tmp_path)


# ---------------------------------------------------------------------- found at decode time
def test_truncated_jpeg_raises_at_decode_naming_the_file(tmp_path, tree):
    bad = tree / "b" / "1.jpg"
    _truncate(bad)
    ds = ImageFolder(tree, size=8, num_workers=2)  # the header is intact: the build succeeds
    i = ds.paths.index(str(bad))
    ds[0]
    with pytest.raises(ImageFileError, match="cannot decode") as e:
        ds[i]
    assert e.value.path == str(bad)
    with pytest.raises(ImageFileError, match="1.jpg"):
        ds.load_all()
    with pytest.raises(ImageFileError, match="CSV line 3"):
        ImageCSV(_csv_for(tmp_path, ["r/a/0.jpg", "r/b/1.jpg"]), size=8)[1]


def test_file_removed_after_build(tmp_path, tree):
    ds = ImageFolder(tree, size=8)
    os.remove(ds.paths[2])
    with pytest.raises(ImageFileError, match="no such file") as e:
        ds[2]
    assert e.value.path == ds.paths[2]


# ---------------------------------------------------------------------- skip_bad
def test_skip_bad_skips_and_reports_each_file(tmp_path, tree):
    zero, text, trunc = tree / "a" / "z.jpg", tree / "b" / "t.png", tree / "b" / "2.jpg"
    zero.write_bytes(b"")
    text.write_text("hello")
    _truncate(trunc)
    with pytest.raises(ImageFileError):
        ImageFolder(tree, size=8)  # off by default
    with pytest.warns(RuntimeWarning) as rec:
        ds = ImageFolder(tree, size=8, skip_bad=True, num_workers=2)
    assert sorted(p for p, _ in ds.skipped) == sorted(map(str, (zero, text, trunc)))
    msgs = [str(w.message) for w in rec if issubclass(w.category, RuntimeWarning)]
    for p in (zero, text, trunc):
        assert sum(str(p) + "'" in m for m in msgs) == 1
    assert len(ds) == 5 and not set(map(str, (zero, text, trunc))) & set(ds.paths)
    assert ds.load_all().shape == (5, 3, 8, 8)
    np.testing.assert_array_equal(ds.labels, [0, 0, 0, 1, 1])
    assert ds.subset([0]).skipped == ds.skipped


def test_skip_bad_in_csv_keeps_rows_aligned(tmp_path, tree):
    (tree / "a" / "z.jpg").write_bytes(b"")
    p = tmp_path / "d.csv"
    p.write_text(
        "label,path,split,is_query,is_gallery\n"
        "cat,r/a/0.jpg,validation,1,0\n"
        "dog,r/a/z.jpg,validation,0,1\n"
        "emu,r/a/missing.jpg,train,,\n"
        "dog,r/b/0.jpg,validation,0,1\n"
    )
    with pytest.warns(RuntimeWarning) as rec:
        ds = ImageCSV(p, size=8, skip_bad=True)
    assert len(rec) == 2 and "CSV line 3" in str(rec[0].message) and "CSV line 4" in str(rec[1].message)
    assert [line for line in ("CSV line 3", "CSV line 4") if any(line in r for _, r in ds.skipped)] == [
        "CSV line 3",
        "CSV line 4",
    ]
    assert len(ds) == 2 and ds.paths[1].endswith(os.path.join("b", "0.jpg"))
    assert [ds.classes[k] for k in ds.labels] == ["cat", "dog"]
    q, g = ds.query_gallery()
    np.testing.assert_array_equal(q, [True, False])
    np.testing.assert_array_equal(g, [False, True])
    assert list(ds.splits) == ["validation", "validation"]


def test_skip_bad_every_file_bad(tmp_path):
    root = tmp_path / "r"
    (root / "a").mkdir(parents=True)
    (root / "a" / "x.png").write_bytes(b"")
    with pytest.warns(RuntimeWarning), pytest.raises(ValueError, match="every image file was bad"):
        ImageFolder(root, skip_bad=True)


def test_skip_bad_reports_an_empty_class_folder(tmp_path, tree):
    (tree / "c_empty").mkdir()
    with pytest.warns(RuntimeWarning, match="c_empty"):
        ds = ImageFolder(tree, size=8, skip_bad=True)
    assert len(ds) == 6
    assert [p for p, _ in ds.skipped] == [str(tree / "c_empty")]


def test_no_warning_without_bad_files(tree):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = ImageFolder(tree, size=8, skip_bad=True)
    assert ds.skipped == [] and len(ds) == 6


def test_bad_file_in_stream_raises_not_hangs(tmp_path, tree):
    _truncate(tree / "b" / "2.jpg")
    ds = ImageFolder(tree, size=8, num_workers=3, prefetch=2)
    seen = []
    with pytest.raises(ImageFileError, match="2.jpg"):
        for idx, _ in eval_batches(ds, 2):
            seen.append(idx.tolist())
    assert seen == [[0, 1], [2, 3]]  # the batches before the bad one are given, in order
