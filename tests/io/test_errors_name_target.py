"""Errors of every atomic writer (``_io.atomic_write``, ``Embedder.save``, ``Index.save``) name
the target path, never the temporary file."""

import re

import numpy as np
import pytest

from mantissa_embed import Embedder, models
from mantissa_embed._io import atomic_write
from mantissa_embed.index import Index


def _check_names_target(excinfo, target):
    msg = str(excinfo.value)
    assert repr(str(target)) in msg, msg
    assert not re.search(r"\.tmp|\.XXXX|/\.[^/]*\.[a-z0-9_]{8}", msg), msg  # no temporary name
    assert excinfo.value.filename == str(target)


def test_missing_directory_is_file_not_found_naming_target(tmp_path):
    target = tmp_path / "no" / "such" / "x.bin"
    with pytest.raises(FileNotFoundError, match=r"no such directory") as ei:
        atomic_write(target, lambda f: f.write(b"x"))
    _check_names_target(ei, target)
    assert list(tmp_path.iterdir()) == []


def test_failed_rename_names_target(tmp_path):
    target = tmp_path / "adir"
    (target / "inner").mkdir(parents=True)  # os.replace cannot put a file over a non-empty directory
    with pytest.raises(OSError) as ei:
        atomic_write(target, lambda f: f.write(b"x"))
    _check_names_target(ei, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir"]


def test_os_error_about_another_file_passes_through(tmp_path):
    other = tmp_path / "source.bin"

    def write(f):
        raise FileNotFoundError(2, "No such file or directory", str(other))

    with pytest.raises(FileNotFoundError) as ei:
        atomic_write(tmp_path / "x.bin", write)
    assert ei.value.filename == str(other)


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    X = rng.random((24, 1, 8, 8), dtype=np.float32)
    return Embedder(models.small_cnn_embedder(4)).fit(X, np.arange(24) % 3, batch_size=12)


def test_embedder_save_names_target(fitted, tmp_path):
    target = tmp_path / "missing" / "model.npz"
    with pytest.raises(FileNotFoundError) as ei:
        fitted.save(target)
    _check_names_target(ei, target)


def test_index_save_names_target(tmp_path):
    target = tmp_path / "missing" / "gallery.meindex"
    with pytest.raises(FileNotFoundError) as ei:
        Index(3).add(np.eye(3, dtype=np.float32)).save(target)
    _check_names_target(ei, target)
