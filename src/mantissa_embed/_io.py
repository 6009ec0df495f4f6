"""Atomic file writes shared by ``Embedder.save``, ``viz`` and ``_download``.

``atomic_write`` writes to a temporary file in the target's directory, fsyncs it, gives it
the mode an ordinary ``open(path, "w")`` would (``0o666 & ~umask``; ``tempfile.mkstemp``
alone leaves 0600), then ``os.replace``s it onto the target. On any error (including
``KeyboardInterrupt``) the temporary file is removed and the target is left untouched.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import threading

__all__ = ["atomic_write", "current_umask"]

_UMASK_LOCK = threading.Lock()


def current_umask():
    """The process umask (read without changing it where the OS allows)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _unlink(path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def require_regular_file(path) -> None:
    """Raise unless ``path`` is a regular file (after symlinks): ``FileNotFoundError`` when it
    does not exist, ``ValueError`` naming it for a directory, FIFO, socket or device, whose
    ``open`` or read could block forever or never end."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{os.fspath(path)!r} is not a regular file (a directory, FIFO, socket or device)")


def _naming_target(exc, path):
    """``exc`` (an OSError about the temporary file) re-raised as the same OSError subclass
    naming the target ``path`` instead."""
    if exc.errno is None:
        return OSError(f"cannot write {path!r}: {exc}")
    return OSError(exc.errno, exc.strerror, path)  # OSError(errno, ...) picks the subclass


def atomic_write(path, write_fn, suffix: str = ".tmp", *, check=None):
    """Atomically create or replace ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        The target file; its directory must exist.
    write_fn : callable
        ``write_fn(f)`` writes the content to ``f``, a binary file object open on the
        temporary file.
    suffix : str
        Suffix of the temporary file (it is named ``.<target name>.XXXX<suffix>``).
    check : callable or None
        ``check(tmp_path)`` is called once the temporary file is complete, closed and
        fsynced, before the rename; raising from it aborts the write.

    Returns ``path`` as a ``str``. An OSError about the temporary file (a missing or read-only
    directory, a full disk) is raised as the same OSError subclass naming ``path`` (e.g.
    ``FileNotFoundError: [Errno 2] no such directory '/x' to write into: '/x/m.npz'``);
    errors raised by ``write_fn`` / ``check`` about other files pass through unchanged.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, f"no such directory {directory!r} to write into", path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=suffix, dir=directory)
    except OSError as exc:
        raise _naming_target(exc, path) from exc
    try:
        with os.fdopen(fd, "wb") as f:
            write_fn(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())
        if check is not None:
            check(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        _unlink(tmp)
        if exc.filename in (None, tmp):
            raise _naming_target(exc, path) from exc
        raise
    except BaseException:
        _unlink(tmp)
        raise
    _fsync_dir(directory)
    return path


def _fsync_dir(directory) -> None:
    """Best effort: persist the rename itself (not possible on every OS / filesystem)."""
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
