"""_io.atomic_write: the mode follows the umask; on error the temp file is removed and the target kept."""

import os
import stat

import pytest

from mantissa_embed._io import atomic_write, current_umask


@pytest.fixture
def umask():
    def set_mask(mask):
        old = os.umask(mask)
        restore.append(old)
        return mask

    restore = []
    yield set_mask
    if restore:
        os.umask(restore[0])


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_mode_follows_umask(tmp_path, umask, mask):
    umask(mask)
    assert current_umask() == mask
    target = tmp_path / "out.bin"
    assert atomic_write(target, lambda f: f.write(b"abc"), suffix=".tmp") == str(target)
    assert target.read_bytes() == b"abc"
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask
    assert sorted(os.listdir(tmp_path)) == ["out.bin"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_mode_on_replace_follows_umask_too(tmp_path, umask):
    umask(0o022)
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    os.chmod(target, 0o600)
    atomic_write(target, lambda f: f.write(b"new"))
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_error_in_write_removes_temp_and_keeps_target(tmp_path, exc):
    target = tmp_path / "out.bin"
    target.write_bytes(b"original")

    def write(f):
        f.write(b"partial")
        raise exc("boom")

    with pytest.raises(exc, match="boom"):
        atomic_write(target, write, suffix=".part")
    assert sorted(os.listdir(tmp_path)) == ["out.bin"]
    assert target.read_bytes() == b"original"


def test_error_in_check_removes_temp_and_creates_nothing(tmp_path):
    target = tmp_path / "new.bin"
    seen = []

    def check(tmp):
        seen.append(open(tmp, "rb").read())  # complete and closed when checked
        raise ValueError("bad checksum")

    with pytest.raises(ValueError, match="bad checksum"):
        atomic_write(target, lambda f: f.write(b"data"), check=check)
    assert seen == [b"data"]
    assert list(tmp_path.iterdir()) == []


def test_missing_directory_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        atomic_write(tmp_path / "nope" / "x.bin", lambda f: f.write(b"x"))
    assert list(tmp_path.iterdir()) == []
