"""The ORL / AT&T faces (Samaria & Harter 1994): 40 subjects x 10 binary PGM images, 92x112 (W x H)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import numpy as np

from .._typing import Float32Array, Int64Array
from .paths import ENV_VAR, resolve_dir

_ORL_SUBJECTS = 40
_ORL_IMAGES = 10
_ORL_SHAPE = (112, 92)  # (H, W)
_ORL_SUBDIRS = ("", "orl_faces", "att_faces")
_ORL_INSTRUCTIONS = (
    "The ORL / AT&T face database cannot be downloaded automatically. Get the archive "
    "(published by AT&T Laboratories Cambridge as att_faces.zip / orl_faces.tar.Z; mirrored on "
    "Kaggle as 'AT&T Database of Faces') and extract it so that "
    "{root}/orl_faces/s1/1.pgm ... {root}/orl_faces/s40/10.pgm exist, e.g.\n"
    "    mkdir -p {qroot}/orl_faces && unzip att_faces.zip -d {qroot}/orl_faces\n"
    "then call load('orl_faces', data_dir={root_repr}) (or set ${env}={qroot})."
)


def orl_instructions(root: str | os.PathLike[str]) -> str:
    """The manual step that installs the ORL faces under ``root`` (they cannot be downloaded)."""
    return _ORL_INSTRUCTIONS.format(
        root=root, qroot=shlex.quote(str(root)), root_repr=repr(str(root)), env=ENV_VAR
    )


def _pgm_tokens(raw, path, count):
    """Parse ``count`` ASCII integers after the magic, skipping whitespace and # comments."""
    pos, vals, n = 2, [], len(raw)
    ws = b" \t\n\r\x0b\x0c"
    while len(vals) < count:
        while pos < n and (raw[pos] in ws or raw[pos] == ord("#")):
            if raw[pos] == ord("#"):
                while pos < n and raw[pos] not in b"\n\r":
                    pos += 1
            else:
                pos += 1
        start = pos
        while pos < n and 48 <= raw[pos] <= 57:
            pos += 1
        if start == pos:
            raise ValueError(f"{path}: malformed PGM header (expected width, height, maxval)")
        vals.append(int(raw[start:pos]))
    if pos >= n or raw[pos] not in ws:
        raise ValueError(f"{path}: malformed PGM header (no whitespace after maxval)")
    return vals, pos + 1


def read_pgm(path: str | os.PathLike[str]) -> Float32Array:
    """Read a binary PGM (``P5``) image into a float32 ``(H, W)`` array in [0, 1].

    Netpbm format: ``P5``, width, height, maxval as ASCII decimals separated by whitespace,
    with ``#`` comments allowed in the header, one whitespace byte, then H*W samples of 1 byte
    (maxval < 256) or 2 big-endian bytes. Samples are divided by maxval.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        Not a binary PGM (e.g. ``P2`` or another format), a malformed header, maxval outside
        1..65535, a sample above maxval, or a truncated raster; the message names the file.
    """
    path = Path(path)
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] != b"P5":
        raise ValueError(f"{path}: not a binary PGM file (magic {raw[:2]!r}, expected b'P5')")
    (w, h, maxval), start = _pgm_tokens(raw, path, 3)
    if w <= 0 or h <= 0:
        raise ValueError(f"{path}: invalid PGM size {w}x{h}")
    if not 1 <= maxval <= 65535:
        raise ValueError(f"{path}: PGM maxval must be in 1..65535, got {maxval}")
    dtype = np.dtype("u1") if maxval < 256 else np.dtype(">u2")
    need = w * h * dtype.itemsize
    if len(raw) - start < need:
        raise ValueError(f"{path}: truncated PGM raster ({len(raw) - start} of {need} bytes)")
    img = np.frombuffer(raw, dtype=dtype, count=w * h, offset=start).reshape(h, w)
    if int(img.max()) > maxval:
        raise ValueError(f"{path}: PGM sample {int(img.max())} exceeds maxval {maxval}")
    out = img.astype(np.float32)
    out *= np.float32(1.0 / maxval)
    return out


def _find_orl_root(root):
    for sub in _ORL_SUBDIRS:
        d = root / sub if sub else root
        if (d / "s1").is_dir():
            return d
    return None


def _orl_missing(root, what):
    return FileNotFoundError(f"ORL faces: {what}.\n" + orl_instructions(root))


def load_orl(split: str | None, data_dir: str | os.PathLike[str] | None) -> tuple[Float32Array, Int64Array]:
    """X (400, 1, 112, 92) float32 in [0, 1], y (400,) int64 subject 0..39, ordered by subject then
    image; ``split`` must be None."""
    if split is not None:
        raise ValueError(f"split must be None for 'orl_faces' (it has no predefined split), got {split!r}")
    root = resolve_dir(data_dir)
    base = _find_orl_root(root)
    if base is None:
        raise _orl_missing(root, f"no s1/ folder in {root} or {root / 'orl_faces'}")
    X = np.empty((_ORL_SUBJECTS * _ORL_IMAGES, 1) + _ORL_SHAPE, dtype=np.float32)
    y = np.repeat(np.arange(_ORL_SUBJECTS, dtype=np.int64), _ORL_IMAGES)
    for s in range(_ORL_SUBJECTS):
        for i in range(_ORL_IMAGES):
            p = base / f"s{s + 1}" / f"{i + 1}.pgm"
            if not p.is_file():
                raise _orl_missing(root, f"missing file {p}")
            img = read_pgm(p)
            if img.shape != _ORL_SHAPE:
                raise ValueError(f"{p}: expected a 92x112 (W x H) image, got {img.shape[1]}x{img.shape[0]}")
            X[s * _ORL_IMAGES + i, 0] = img
    return X, y
