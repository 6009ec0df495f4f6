"""The safetensors file format, read and written with numpy only (no torch, never unpickled).

The safetensors format (https://github.com/huggingface/safetensors, README "Format"): an
8-byte little-endian unsigned header length ``N``; ``N`` bytes of UTF-8 JSON,
``{name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__":
{str: str}}`` (padded with spaces); then the byte buffer, little-endian, C order, where the
offsets (relative to the buffer's start) of the entries are contiguous, do not overlap and
cover the whole buffer. Pickle checkpoints (``.pt`` / ``.pth``) are never unpickled: convert
them on the torch side (the error message gives the one-line command).
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
import zipfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._io import atomic_write, require_regular_file

__all__ = ["read_safetensors", "write_safetensors"]

#: safetensors dtype name -> (numpy dtype of the stored bytes, bytes per element)
_DTYPES = {
    "F64": ("<f8", 8),
    "F32": ("<f4", 4),
    "F16": ("<f2", 2),
    "BF16": ("<u2", 2),
    "I64": ("<i8", 8),
    "I32": ("<i4", 4),
    "I16": ("<i2", 2),
    "I8": ("i1", 1),
    "U64": ("<u8", 8),
    "U32": ("<u4", 4),
    "U16": ("<u2", 2),
    "U8": ("u1", 1),
    "BOOL": ("?", 1),
}
#: dtypes of the format this reader does not convert
_UNSUPPORTED = ("F8_E5M2", "F8_E4M3", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64")
_MAX_HEADER = 100 * 1024 * 1024  # the reference implementation's bound on the JSON header
_PICKLE_EXTENSIONS = (".pt", ".pth", ".pkl", ".pickle", ".ckpt")


def _conversion_hint(path: str) -> str:
    name = os.path.basename(path) or "m.pth"
    stem = os.path.splitext(name)[0]
    return (
        f"{path}: a PyTorch pickle checkpoint, which mantissa_embed never unpickles (unpickling runs "
        f'arbitrary code). Convert it on the torch side: python -c "import torch; from safetensors.torch '
        f"import save_file; save_file(torch.load('{name}', map_location='cpu'), '{stem}.safetensors')\" "
        f'(or, with numpy instead of safetensors: python -c "import numpy as np, torch; '
        f"np.savez('{stem}.npz', **{{k: v.numpy() for k, v in torch.load('{name}', "
        f"map_location='cpu').items()}})\")"
    )


def _looks_pickled(head: bytes) -> bool:
    """A zip archive (torch.save's format since 1.6) or a pickle of protocol 2 to 5."""
    return head[:4] == b"PK\x03\x04" or (len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5)


def _zip_holds_pickle(path: str) -> bool:
    """Whether the zip archive at ``path`` has a pickle member (torch.save's ``archive/data.pkl``)."""
    try:
        with zipfile.ZipFile(path) as z:
            return any(name.endswith(".pkl") for name in z.namelist())
    except (zipfile.BadZipFile, OSError, EOFError):
        return False


class _Duplicate(Exception):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _parse_header(
    path: str, f: Any, size: int
) -> tuple[dict[str, tuple[str, tuple[int, ...], int, int]], int]:
    """``({name: (dtype, shape, begin, end)}, buffer start)`` after every check of the header."""
    head = f.read(8)
    if len(head) < 8:
        if _looks_pickled(head):
            raise ValueError(_conversion_hint(path))
        raise ValueError(
            f"{path}: truncated: {size} bytes, a safetensors file starts with an 8-byte header length"
        )
    (n,) = struct.unpack("<Q", head)
    first = f.read(1)
    if n > size - 8 or first != b"{":
        if head[:4] == b"PK\x03\x04" and path.lower().endswith(".npz") and not _zip_holds_pickle(path):
            raise ValueError(
                f"{path}: an .npz archive, not a safetensors file: load_weights reads it "
                f"(or numpy.load(path, allow_pickle=False))"
            )
        if _looks_pickled(head):
            raise ValueError(_conversion_hint(path))
        if n > size - 8:
            raise ValueError(
                f"{path}: truncated or not a safetensors file: its header length is {n} bytes, "
                f"larger than the {size - 8} bytes after the length"
            )
    if n > _MAX_HEADER:
        raise ValueError(f"{path}: header of {n} bytes, more than the format's limit of {_MAX_HEADER}")
    raw = first + f.read(n - 1) if n else b""
    if len(raw) != n:
        raise ValueError(f"{path}: truncated: the header claims {n} bytes, {len(raw)} could be read")
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except _Duplicate as exc:
        raise ValueError(f"{path}: the header names entry {exc.args[0]!r} twice") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ValueError(f"{path}: the header is not UTF-8 JSON ({exc})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: the header must be a JSON object, got {type(header).__name__}")
    start = 8 + n
    buffer_len = size - start
    entries: dict[str, tuple[str, tuple[int, ...], int, int]] = {}
    for key, info in header.items():
        if key == "__metadata__":
            if not isinstance(info, dict) or not all(isinstance(v, str) for v in info.values()):
                raise ValueError(f"{path}: '__metadata__' must map strings to strings")
            continue
        where = f"{path}: entry {key!r}"
        if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= set(info):
            raise ValueError(f"{where}: must be an object with 'dtype', 'shape' and 'data_offsets'")
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if dtype in _UNSUPPORTED:
            raise ValueError(f"{where}: dtype {dtype} is not supported (supported: {', '.join(_DTYPES)})")
        if not isinstance(dtype, str) or dtype not in _DTYPES:
            raise ValueError(
                f"{where}: unknown dtype {dtype!r} (the format's are {', '.join(_DTYPES)}, "
                f"{', '.join(_UNSUPPORTED)})"
            )
        if not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape):
            raise ValueError(f"{where}: shape must be a list of non-negative ints, got {shape!r}")
        if len(shape) > 32 or any(s >= 1 << 62 for s in shape):  # beyond any numpy array
            raise ValueError(
                f"{where}: shape {shape} has more than 32 dimensions or a dimension of 2**62 or more"
            )
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(_is_int(o) for o in offsets)
            or not 0 <= offsets[0] <= offsets[1]
        ):
            raise ValueError(
                f"{where}: data_offsets must be [begin, end] with 0 <= begin <= end, got {offsets!r}"
            )
        begin, end = offsets
        if end > buffer_len:
            raise ValueError(
                f"{where}: data_offsets {offsets} out of bounds: the byte buffer holds {buffer_len} bytes"
            )
        nbytes = math.prod(shape) * _DTYPES[dtype][1]
        if end - begin != nbytes:
            raise ValueError(
                f"{where}: data_offsets {offsets} hold {end - begin} bytes, shape {shape} "
                f"of {dtype} needs {nbytes}"
            )
        entries[key] = (dtype, tuple(shape), begin, end)
    expected, previous = 0, None
    for key, (_, _, begin, end) in sorted(entries.items(), key=lambda kv: (kv[1][2], kv[1][3])):
        if begin < expected:
            raise ValueError(
                f"{path}: entry {key!r}: data_offsets [{begin}, {end}] overlap entry {previous!r}"
            )
        if begin > expected:
            raise ValueError(
                f"{path}: entry {key!r}: data_offsets [{begin}, {end}] leave bytes "
                f"[{expected}, {begin}] of the buffer to no entry"
            )
        expected, previous = end, key
    if expected != buffer_len:
        raise ValueError(
            f"{path}: the byte buffer holds {buffer_len} bytes, the entries cover {expected}"
            + (f" (the last is {previous!r})" if previous is not None else "")
        )
    return entries, start


def _array(buf: Any, dtype: str, shape: tuple[int, ...], offset: int) -> np.ndarray:
    stored, _ = _DTYPES[dtype]
    count = math.prod(shape)
    raw = np.frombuffer(buf, dtype=stored, count=count, offset=offset) if count else np.empty(0, stored)
    if dtype == "F16":
        raw = raw.astype(np.float32)
    elif dtype == "BF16":  # bfloat16 is the high half of a float32
        raw = (raw.astype(np.uint32) << 16).view(np.float32)
    return raw.reshape(shape)


def _read(path: Any) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    path = os.fspath(path)
    if str(path).lower().endswith(_PICKLE_EXTENSIONS):
        raise ValueError(_conversion_hint(path))
    require_regular_file(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        entries, start = _parse_header(path, f, size)
        buf: Any = b""
        if size > start:
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            if len(buf) != size:
                raise ValueError(f"{path}: the file changed size while being read")
    arrays = {
        key: _array(buf, dtype, shape, start + begin) for key, (dtype, shape, begin, _) in entries.items()
    }
    return arrays, {key: e[0] for key, e in entries.items()}


def read_safetensors(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read every tensor of a ``.safetensors`` file, with numpy only (no ``safetensors`` package).

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns ``{name: array}`` in the header's order (``__metadata__`` left out). F32 and the
    integer/bool/F64 dtypes are **read-only views of a memory map** of the file (no copy: the data
    is read from disk when used; keep the file in place while they live); F16 and BF16 are
    converted to new float32 arrays. Shapes are the header's (``[]`` gives a 0-d array).

    Raises ``ValueError`` naming the file (and the entry) for: a truncated file, a header length
    beyond the file, a header that is not a UTF-8 JSON object or names an entry twice, offsets out
    of the buffer, overlapping, leaving a gap or not matching dtype x shape, an unknown or
    unsupported dtype (the float8/float6/float4 and complex ones), and a PyTorch pickle / zip
    checkpoint (``.pt``, ``.pth``, or by its first bytes), which is refused with the command that
    converts it. Nothing larger than the file is ever allocated. ``OSError`` for an unreadable file.
    """
    return _read(path)[0]


def write_safetensors(
    path: str | os.PathLike[str], tensors: Mapping[str, np.ndarray], metadata: Mapping[str, str] | None = None
) -> str:
    """Write ``tensors`` to a ``.safetensors`` file, atomically (a temporary file then a rename).

    Parameters
    ----------
    path : str or os.PathLike
        The target; its directory must exist. An existing file is replaced only once the new one
        is complete.
    tensors : mapping str -> numpy.ndarray
        float32 arrays (written as F32) and int64 arrays (I64) or numpy scalars, any shape (0-d included), any
        memory layout (written in C order, little-endian).
    metadata : mapping str -> str or None, default None
        The header's ``__metadata__`` (omitted when None).

    The header is compact JSON padded with spaces to a multiple of 8 bytes, so the data starts
    8-byte aligned; int64 entries come first, then float32 ones, each group in the mapping's
    order. Returns ``path`` as a str. Raises ``TypeError`` for a non-str name or a non-array,
    ``ValueError`` for another dtype, the reserved name ``__metadata__`` or non-str metadata.
    """
    if metadata is not None and not (
        isinstance(metadata, Mapping)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        raise ValueError("metadata must map str to str")
    items = []
    for key, arr in tensors.items():
        if not isinstance(key, str):
            raise TypeError(f"tensor names must be str, got {type(key).__name__}")
        if key == "__metadata__":
            raise ValueError("'__metadata__' is reserved by the format")
        if not isinstance(arr, (np.ndarray, np.generic)):
            raise TypeError(f"tensors[{key!r}] must be a numpy array, got {type(arr).__name__}")
        arr = np.asarray(arr)
        if arr.dtype == np.float32:
            items.append((key, "F32", arr.astype("<f4", copy=False)))
        elif arr.dtype == np.int64:
            items.append((key, "I64", arr.astype("<i8", copy=False)))
        else:
            raise ValueError(
                f"tensors[{key!r}] has dtype {arr.dtype}; write_safetensors writes float32 and int64"
            )
    items.sort(key=lambda item: item[1] != "I64")  # stable: int64 first keeps them 8-byte aligned
    header: dict[str, Any] = {}
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    offset = 0
    for key, dtype, arr in items:
        header[key] = {
            "dtype": dtype,
            "shape": list(arr.shape),
            "data_offsets": [offset, offset + arr.nbytes],
        }
        offset += arr.nbytes
    raw = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    raw += b" " * (-len(raw) % 8)

    def write(f: Any) -> None:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for _, _, arr in items:
            f.write(np.ascontiguousarray(arr).data)

    return atomic_write(path, write)
