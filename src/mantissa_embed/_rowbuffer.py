"""``RowBuffer``: the growable storage behind ``Index``'s arrays (the rows of one dtype, with a
capacity that at least doubles when it fills, as a ``std::vector``), and ``append_rows``, which
appends to an object's arrays held in such buffers.

A buffer starts as a numpy array. Grown to ``MAP_MIN`` bytes or more on Linux, it moves into an
anonymous private memory map of whole 2 MiB huge pages (advised), and later growths remap those
pages (``mremap``) instead of copying them into fresh memory. The remap is refused while a numpy
view of the buffer is alive outside the buffer (a ``BufferError``, checked by ``mmap`` itself);
then, as on other systems and below ``MAP_MIN``, the rows are copied into a new buffer and a view
taken earlier keeps its memory.
"""

from __future__ import annotations

import mmap
import sys
from typing import Any

import numpy as np

#: grown buffers from this many bytes on are memory maps that later grow in place
MAP_MIN = 1 << 21
_HUGE = 1 << 21  # maps are whole huge pages, which the kernel then aligns
_REMAP = sys.platform.startswith("linux") and hasattr(mmap, "MAP_PRIVATE") and hasattr(mmap, "MAP_ANONYMOUS")


class RowBuffer:
    """``capacity`` uninitialized rows of shape ``row_shape`` (a tuple of ints >= 1; () for
    scalars) and numpy ``dtype``.

    ``flat`` is the 1-D array owning the memory (the ``base`` of every view of ``rows``);
    ``rows`` is the (capacity, *row_shape) view. ``ahead`` is free for the owner to describe
    rows written ahead of the filled ones (``Index``: the spare ids rows hold ``row + ahead``);
    a growth sets it to None. Raises MemoryError / OSError when the memory cannot be had.
    """

    __slots__ = ("flat", "rows", "ahead", "_map")

    def __init__(self, capacity: int, row_shape: tuple[int, ...], dtype: np.dtype) -> None:
        self._map: mmap.mmap | None = None
        self.ahead: int | None = None
        self._set(np.empty(capacity * int(np.prod(row_shape, dtype=np.int64)), dtype), row_shape)

    def write_ahead(self, n: int, first: int) -> None:
        """Fill the rows from ``n`` on with ``first``, ``first + 1``, ... (1-D integer rows) and
        record it in ``ahead``."""
        self.rows[n:] = np.arange(first, first + self.rows.shape[0] - n)
        self.ahead = first - n

    def _set(self, flat, row_shape):
        self.flat, self.rows = flat, flat.reshape((-1,) + row_shape)

    def grow(self, capacity: int, keep: int) -> None:
        """Make ``rows`` hold at least ``capacity`` rows, the first ``keep`` of them the old
        ``rows``' (``keep`` <= the old capacity <= ``capacity``). The caller drops its own views
        of ``rows`` first, or the rows are copied. On an error ``rows`` is unchanged."""
        self.ahead = None
        dtype, row_shape = self.rows.dtype, self.rows.shape[1:]
        per_row = int(np.prod(row_shape, dtype=np.int64))
        need = capacity * per_row * dtype.itemsize
        size = -(-need // _HUGE) * _HUGE
        m = self._map
        if m is not None:
            self.flat = self.rows = None  # the map's own exports: a live one refuses the remap
            try:
                m.resize(size)
                remapped = True
            except Exception:  # a view still alive (BufferError), no mremap, no memory: copy below
                remapped = False
            self._set(_map_view(m, dtype, per_row), row_shape)
            if remapped:
                _advise(m)
                return
        if _REMAP and need >= MAP_MIN:
            new_map = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            _advise(new_map)
            flat = _map_view(new_map, dtype, per_row)
        else:
            new_map, flat = None, np.empty(capacity * per_row, dtype)
        flat[: keep * per_row] = self.flat[: keep * per_row]
        self._map = new_map
        self._set(flat, row_shape)


def _map_view(m, dtype, per_row):
    """The whole rows of the map ``m``, 1-D."""
    return np.frombuffer(m, dtype, count=len(m) // (per_row * dtype.itemsize) * per_row)


def _advise(m):
    try:
        m.madvise(mmap.MADV_HUGEPAGE)
    except (AttributeError, OSError, ValueError):
        pass  # no transparent huge pages: the map works with small pages


def append_rows(owner: object, bufs: dict[str, RowBuffer], parts: dict[str, Any], n0: int, n1: int) -> None:
    """Append rows ``n0:n1`` to the arrays of ``owner`` named by the keys of ``parts`` ({name:
    (n1 - n0, ...) array, or None to skip}), each the first ``n0`` rows of ``bufs[name]``, in
    amortized O(rows). An array that is not (a first add; one replaced by a copy) goes into a
    new buffer of at least ``max(n1, 2 * n0, 16)`` rows; a full buffer grows to at least
    ``max(n1, 2 * n0)``. Room is made for every array before any is written: a failure (no
    memory) leaves them as they were. While a buffer remaps, an array of 2 or more dimensions is
    replaced by a stand-in of its shape and dtype (the owner's readers without its lock read
    only their shapes); 1-D arrays keep their views, so their buffers are copied."""
    for key, new in parts.items():
        if new is None:
            continue
        cur, rb = getattr(owner, key), bufs.get(key)
        if rb is None or cur is None or cur.base is not rb.flat:
            rb = RowBuffer(max(n1, 2 * n0, 16), new.shape[1:], new.dtype)
            if cur is not None:
                rb.rows[:n0] = cur
            bufs[key] = rb
            setattr(owner, key, rb.rows[:n0])
        elif rb.rows.shape[0] < n1:
            if cur.ndim >= 2:
                setattr(owner, key, np.broadcast_to(np.zeros((), cur.dtype), cur.shape))
            cur = None
            try:
                rb.grow(max(n1, 2 * n0), n0)
            finally:
                setattr(owner, key, rb.rows[:n0])
    for key, new in parts.items():
        if new is not None:
            rows = bufs[key].rows
            rows[n0:n1] = new
            setattr(owner, key, rows[:n1])
