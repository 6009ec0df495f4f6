"""MNIST (LeCun, Cortes & Burges 1998) from its IDX files: 60,000 train / 10,000 test 28x28 digits."""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .._typing import Float32Array, Int64Array
from .paths import download_command, resolve_dir

_MNIST_SPLITS = {"train": "train", "test": "t10k"}
_IDX_TYPES: dict[int, np.dtype[Any]] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def _read_bytes(path):
    path = Path(path)
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise ValueError(f"{path}: truncated or corrupt gzip stream ({exc})") from None
    return raw


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """Read one IDX file (LeCun's MNIST format), gzipped or not, into a numpy array.

    The header is 2 zero bytes, a type code (0x08 = uint8, ...), the number of dimensions,
    then each dimension as a big-endian uint32; the payload must have exactly the announced
    size. Returns an array of the announced shape in native byte order.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        Wrong magic number, unknown type code, truncated or oversized payload, or a corrupt
        gzip stream; the message names the file.
    """
    path = Path(path)
    raw = _read_bytes(path)
    if len(raw) < 4:
        raise ValueError(f"{path}: not an IDX file (only {len(raw)} bytes)")
    if raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise ValueError(f"{path}: not an IDX file (bad magic number 0x{raw[:4].hex()})")
    dtype = _IDX_TYPES[raw[2]]
    ndim = raw[3]
    header = 4 + 4 * ndim
    if ndim == 0 or len(raw) < header:
        raise ValueError(f"{path}: truncated IDX header (ndim={ndim}, {len(raw)} bytes)")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    expected = header + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        kind = "truncated" if len(raw) < expected else "oversized"
        raise ValueError(
            f"{path}: {kind} IDX file: header announces shape {shape} ({expected} bytes), "
            f"file has {len(raw)} bytes"
        )
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def _find_mnist_file(root, stem):
    for d in (root, root / "mnist"):
        for name in (stem, stem + ".gz"):
            p = d / name
            if p.is_file():
                return p
    raise FileNotFoundError(
        f"MNIST file {stem}[.gz] not found in {root} or {root / 'mnist'}. Fetch it with:\n"
        f"    {download_command(root)}"
    )


def load_mnist(split: str | None, data_dir: str | os.PathLike[str] | None) -> tuple[Float32Array, Int64Array]:
    """X (N, 1, 28, 28) float32 in [0, 1], y (N,) int64 of ``split`` ("train", the default, or
    "test"), read from ``data_dir`` or its ``mnist/`` subfolder."""
    if split is None:
        split = "train"
    if split not in _MNIST_SPLITS:
        raise ValueError(f"split must be 'train' or 'test' for 'mnist', got {split!r}")
    root = resolve_dir(data_dir)
    prefix = _MNIST_SPLITS[split]
    img_path = _find_mnist_file(root, f"{prefix}-images-idx3-ubyte")
    lab_path = _find_mnist_file(root, f"{prefix}-labels-idx1-ubyte")
    images = read_idx(img_path)
    labels = read_idx(lab_path)
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (28, 28):
        raise ValueError(
            f"{img_path}: expected uint8 images of shape (N, 28, 28), got {images.dtype} {images.shape}"
        )
    if labels.dtype != np.uint8 or labels.ndim != 1:
        raise ValueError(
            f"{lab_path}: expected uint8 labels of shape (N,), got {labels.dtype} {labels.shape}"
        )
    if labels.shape[0] != images.shape[0]:
        raise ValueError(f"{lab_path}: {labels.shape[0]} labels for {images.shape[0]} images in {img_path}")
    if labels.size and labels.max() > 9:
        raise ValueError(f"{lab_path}: labels must be digits 0..9, found {int(labels.max())}")
    X = images.astype(np.float32)
    X *= np.float32(1.0 / 255.0)
    return X.reshape(-1, 1, 28, 28), labels.astype(np.int64)
