"""Reading image files with Pillow: the header check a dataset runs when it is built, and the
decode a worker thread runs per image.

A header read (``Image.open``: the format and the size, no pixels) finds a missing file, an
empty one, one that is not an image Pillow reads, and one over Pillow's decompression-bomb
limit (``PIL.Image.MAX_IMAGE_PIXELS``). Only a full decode finds a truncated or corrupt body.
Every error is an ``ImageFileError`` naming the file (and the CSV line when there is one).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import warnings

import numpy as np
from PIL import Image, UnidentifiedImageError

__all__ = ["ImageFileError", "image_extensions", "read_header", "decode", "to_chw", "quiet_bomb_warnings"]

#: held while this module's filter for Pillow's DecompressionBombWarning is in place:
#: ``warnings.catch_warnings`` saves and restores process-wide state, so two overlapping ones in
#: different threads can leave a filter behind
_WARNINGS_LOCK = threading.Lock()


@contextlib.contextmanager
def quiet_bomb_warnings():
    """Pillow's DecompressionBombWarning silenced (the header check reports such an image as an
    error), one holder at a time."""
    with _WARNINGS_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        yield


class ImageFileError(ValueError):
    """A file a dataset cannot use. ``path`` names it, ``line`` is its CSV line (1-based, the
    header being line 1) or None, ``reason`` the cause without the location."""

    def __init__(self, path, reason, line=None) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        self.line = line
        where = f"{self.path!r}" + (f" (CSV line {line})" if line is not None else "")
        super().__init__(f"{where}: {reason}")


def image_extensions() -> frozenset[str]:
    """The lower-case file extensions (with the dot) of every format Pillow can open here."""
    return frozenset(ext for ext, fmt in Image.registered_extensions().items() if fmt in Image.OPEN)


def _bomb_limit():
    return Image.MAX_IMAGE_PIXELS


def read_header(path, line=None, *, catch_warnings=True) -> tuple[int, int]:
    """``(width, height)`` of the image at ``path`` from its header (no pixels decoded).

    Raises ImageFileError for a missing path, a non-regular file, an empty file, a file Pillow
    cannot identify, and an image over ``PIL.Image.MAX_IMAGE_PIXELS`` pixels. Pillow's
    ``DecompressionBombWarning`` is silenced (the error replaces it); ``catch_warnings=False``
    leaves that to the caller, as threads must (``warnings.catch_warnings`` is process-wide
    state: entering it in several threads at once can leave a filter behind)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ImageFileError(path, "no such file", line) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise ImageFileError(path, f"cannot read: {getattr(exc, 'strerror', None) or exc}", line) from None
    if not stat.S_ISREG(st.st_mode):
        raise ImageFileError(path, "not a regular file (a directory, FIFO, socket or device)", line)
    if st.st_size == 0:
        raise ImageFileError(path, "empty file (0 bytes)", line)
    try:
        with quiet_bomb_warnings() if catch_warnings else contextlib.nullcontext():
            with Image.open(path) as im:
                w, h = im.size
    except Image.DecompressionBombError:
        raise ImageFileError(
            path,
            "over Pillow's decompression-bomb limit (PIL.Image.MAX_IMAGE_PIXELS = "
            f"{Image.MAX_IMAGE_PIXELS} pixels)",
            line,
        ) from None
    except UnidentifiedImageError:
        raise ImageFileError(path, "not an image Pillow can read", line) from None
    except OSError as exc:
        raise ImageFileError(path, f"cannot read the image header: {exc}", line) from None
    limit = _bomb_limit()
    if limit is not None and w * h > limit:
        raise ImageFileError(
            path,
            f"{w}x{h} = {w * h} pixels is over Pillow's decompression-bomb limit "
            f"(PIL.Image.MAX_IMAGE_PIXELS = {limit})",
            line,
        )
    if w < 1 or h < 1:
        raise ImageFileError(path, f"the image has no pixels ({w}x{h})", line)
    return int(w), int(h)


def _to_8bit(im):
    """Integer and float images to 8-bit grey (Pillow's own conversion clips them): 16-bit
    modes ``I;16*`` scaled 65535 -> 255 (rounded); mode ``I`` (32-bit) as 8-bit values when
    they all lie in 0..255, as 16-bit when in 0..65535, else scaled by its maximum; mode ``F``
    as [0, 1] when it lies there, else clipped to 0..255."""
    a = np.asarray(im)
    top = float(a.max()) if a.size else 0.0
    if im.mode == "F":
        a = a.astype(np.float64) * (255.0 if 0.0 <= float(a.min(initial=0.0)) and top <= 1.0 else 1.0)
        return Image.fromarray(np.clip(np.rint(a), 0, 255).astype(np.uint8), "L")
    if im.mode == "I" and top <= 255:
        return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), "L")
    if im.mode == "I" and top > 65535:
        a = a.astype(np.float64) * (255.0 / top)
        return Image.fromarray(np.clip(np.rint(a), 0, 255).astype(np.uint8), "L")
    a = np.clip(a.astype(np.int64), 0, 65535)
    return Image.fromarray(((a * 255 + 32767) // 65535).astype(np.uint8), "L")


def decode(path, channels, box=None, line=None):
    """The image at ``path`` decoded, cropped to ``box`` ``(x1, y1, x2, y2)`` (pixels, right and
    bottom exclusive) when given, and converted to ``"RGB"`` (``channels=3``: every mode,
    alpha dropped as ``Image.convert`` does) or ``"L"`` (``channels=1``); 16-bit images are
    scaled to 8 bits first. Raises ImageFileError naming the file when it cannot be decoded."""
    try:
        with Image.open(path) as im:
            im.load()
            if im.mode in ("I;16", "I;16L", "I;16B", "I;16N", "I", "F"):
                im = _to_8bit(im)
            if box is not None:
                im = im.crop(box)
            mode = "RGB" if channels == 3 else "L"
            return im.convert(mode) if im.mode != mode else im  # loaded: valid once the file is closed
    except ImageFileError:
        raise
    except Image.DecompressionBombError as exc:
        raise ImageFileError(path, f"over Pillow's decompression-bomb limit ({exc})", line) from None
    except FileNotFoundError:
        raise ImageFileError(path, "no such file (it was there when the dataset was built)", line) from None
    except (OSError, SyntaxError, ValueError) as exc:  # Pillow's errors for truncated / corrupt data
        raise ImageFileError(path, f"cannot decode: {exc}", line) from None


def to_chw(im, out) -> None:
    """Write the 8-bit ``"L"`` / ``"RGB"`` image ``im`` into ``out`` (C, H, W) float32 as
    ``value / 255`` (numpy's float32 division: the same bits as
    ``np.asarray(im, np.float32) / 255``)."""
    a = np.asarray(im)
    if a.ndim == 2:
        np.divide(a, np.float32(255), out=out[0], dtype=np.float32)
    else:
        np.divide(a.transpose(2, 0, 1), np.float32(255), out=out, dtype=np.float32)
