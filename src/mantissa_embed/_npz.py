"""Reading an ``.npz`` archive entry by entry, checking every entry's ``.npy`` header before
any data is read (the reader of ``mantissa_embed.embedder._persistence.load``).

``NpzEntries`` opens the archive and reads each member's magic and header
(``numpy.lib.format.read_magic`` / ``read_array_header_1_0`` / ``_2_0``), never its data. A
header must describe exactly the bytes its member holds, and the members together at most the
archive's bytes (stored members) or 1032 times their compressed bytes (deflated members, the
largest deflate ratio), so a header claiming 1e11 floats is a ``ValueError`` here, not a 373 GiB
allocation. ``NpzEntries.read`` then checks the header's shape and dtype against what the
caller expects before reading the data. Nothing is unpickled (object dtypes are rejected).
"""

from __future__ import annotations

import math
import os
import zipfile

import numpy as np
from numpy.lib import format as npy_format

from ._io import require_regular_file

__all__ = ["NpzEntries", "FLOAT_DTYPES"]

#: the weight dtypes a file may hold (either byte order); they are cast to float32 (float64
#: values outside the float32 range become Inf and are then rejected as non-finite)
FLOAT_DTYPES = ("float16", "float32", "float64")
_DEFLATE_MAX_RATIO = 1032
_MAX_HEADER = 10000  # numpy's own default bound on a header's length


class NpzEntries:
    """The ``.npy`` members of the ``.npz`` archive at ``path``: ``headers`` maps each entry name
    (member name without ``.npy``) to its ``(shape, dtype)``; use as a context manager.

    Raises ValueError (with the reason; the caller adds the path) when the file is not a zip
    archive, a member is not an ``.npy`` array, a header is malformed or needs pickle, or a
    header claims more data than its member holds.
    """

    def __init__(self, path) -> None:
        self.path = os.fspath(path)
        require_regular_file(self.path)
        try:
            self._zip = zipfile.ZipFile(self.path)
        except (
            zipfile.BadZipFile,
            zipfile.LargeZipFile,
            OSError,
            EOFError,
            RuntimeError,
            NotImplementedError,
        ) as exc:
            raise ValueError(f"not a zip archive ({exc})") from None
        try:
            self.headers, self._members = self._read_headers(os.path.getsize(self.path))
        except BaseException:
            self._zip.close()
            raise

    def _read_headers(self, archive_size):
        headers, members, total = {}, {}, 0
        for info in self._zip.infolist():
            name = info.filename
            if not name.endswith(".npy"):
                raise ValueError(f"entry {name!r} is not an .npy array")
            key = name[: -len(".npy")]
            if key in headers:
                raise ValueError(f"entry {key!r} appears twice")
            total += info.compress_size
            if info.compress_type == zipfile.ZIP_STORED:
                limit = info.compress_size
            elif info.compress_type == zipfile.ZIP_DEFLATED:
                limit = _DEFLATE_MAX_RATIO * info.compress_size + 1024
            else:
                raise ValueError(f"entry {key!r} uses an unsupported zip compression ({info.compress_type})")
            if total > archive_size or info.file_size > limit:
                raise ValueError(f"entry {key!r} claims more bytes than the archive holds")
            shape, dtype, offset = self._header(info, key)
            nbytes = math.prod(shape) * dtype.itemsize
            if offset + nbytes != info.file_size:
                raise ValueError(
                    f"entry {key!r}: its header claims shape {shape} {dtype} ({nbytes} bytes), "
                    f"the member holds {info.file_size - offset} bytes of data"
                )
            headers[key], members[key] = (shape, dtype), info
        return headers, members

    def _header(self, info, key):
        try:
            with self._zip.open(info) as f:
                version = npy_format.read_magic(f)
                if version == (1, 0):
                    shape, _, dtype = npy_format.read_array_header_1_0(f, max_header_size=_MAX_HEADER)
                elif version == (2, 0):
                    shape, _, dtype = npy_format.read_array_header_2_0(f, max_header_size=_MAX_HEADER)
                else:
                    raise ValueError(f"unsupported .npy format version {version}")
                offset = f.tell()
        except (
            ValueError,
            OSError,
            EOFError,
            zipfile.BadZipFile,
            SyntaxError,
            RuntimeError,
            NotImplementedError,
        ) as exc:
            raise ValueError(f"entry {key!r} has no valid .npy header ({exc})") from None
        if dtype.hasobject:
            raise ValueError(f"entry {key!r} holds Python objects (dtype {dtype}), which would need pickle")
        return tuple(int(s) for s in shape), dtype, offset

    def read(self, key, shape=None, floats: bool = True):
        """The array of entry ``key``, after checking its header: ``shape`` (a tuple, or None for
        any) and, with ``floats``, a dtype among ``FLOAT_DTYPES`` (returned as float32).

        Raises ValueError naming the entry for a missing entry, another shape or dtype, or
        unreadable data.
        """
        if key not in self.headers:
            raise ValueError(f"missing the {key!r} entry")
        have, dtype = self.headers[key]
        if floats and not (dtype.kind == "f" and dtype.itemsize in (2, 4, 8)):
            raise ValueError(
                f"entry {key!r} has dtype {dtype}; weights must be float32 (float16 and "
                "float64 are accepted and cast)"
            )
        if shape is not None and have != tuple(shape):
            raise ValueError(f"entry {key!r} must have shape {tuple(shape)}, got {have}")
        try:
            with self._zip.open(self._members[key]) as f:
                arr = npy_format.read_array(f, allow_pickle=False, max_header_size=_MAX_HEADER)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, RuntimeError, NotImplementedError) as exc:
            raise ValueError(f"entry {key!r} is unreadable ({exc})") from None
        if floats and arr.dtype != np.float32:
            with np.errstate(over="ignore"):  # out of float32 range: Inf, rejected by the caller
                arr = arr.astype(np.float32)  # native byte order too
        return arr

    def close(self) -> None:
        self._zip.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
