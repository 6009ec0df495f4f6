"""Atomic file writes shared by :meth:`Embedder.save`, :mod:`viz` and :mod:`_download`.

``atomic_write`` writes to a temporary file in the target's directory, fsyncs it, gives it
the mode an ordinary ``open(path, "w")`` would (``0o666 & ~umask``; ``tempfile.mkstemp``
alone leaves 0600), then ``os.replace``s it onto the target. On any error (including
``KeyboardInterrupt``) the temporary file is removed and the target is left untouched.
"""

from __future__ import annotations

import os
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


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def atomic_write(path, write_fn, suffix=".tmp", *, check=None):
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

    Returns ``path`` as a ``str``.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=suffix, dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            write_fn(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())
        if check is not None:
            check(tmp)
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise
    _fsync_dir(directory)
    return path


def _fsync_dir(directory):
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
