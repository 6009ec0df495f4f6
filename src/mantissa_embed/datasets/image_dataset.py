"""``ImageDataset``: labelled image files decoded on demand, the base of ``ImageFolder`` and
``ImageCSV``.

A dataset holds paths, labels and each file's size (read from its header when the dataset is
built), never pixels. ``ds[i]`` decodes one image in eval mode; ``Embedder.fit`` / ``embed`` /
``build_index`` / ``calibrate`` / ``evaluate`` stream batches of them, decoded on
``num_workers`` threads (``mantissa_embed.datasets._stream``).

Images come out as (C, H, W) float32 in [0, 1]: ``value / 255`` of the 8-bit RGB (``channels=3``)
or grey (``channels=1``) pixels, after the transform. No normalization: the trunk's
``input_mean`` / ``input_std`` are applied by the Embedder.
"""

from __future__ import annotations

import copy
import numbers
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .. import engine
from .._typing import Float32Array
from .._validation import check_bool
from ._pillow import ImageFileError, decode, quiet_bomb_warnings, read_header, to_chw
from ._stream import eval_batches
from .image_transforms import ImageTransform, _size_hw, default_train_transform, eval_transform

__all__ = ["ImageDataset"]


def _check_channels(channels):
    if isinstance(channels, bool) or not isinstance(channels, numbers.Integral) or channels not in (1, 3):
        raise ValueError(f"channels must be 1 (grey) or 3 (RGB), got {channels!r}")
    return int(channels)


def _check_workers(n, name="num_workers"):
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be an int >= 1 or None, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"{name} must be >= 1, got {n}")
    return int(n)


class ImageDataset:
    """Labelled image files, decoded on demand (base class; build ``ImageFolder`` or
    ``ImageCSV``).

    Attributes
    ----------
    paths : list of str
        One file per image.
    labels : ndarray, int64, shape (N,)
        Class labels (``ImageFolder``: the index of the class folder in ``classes``).
    classes : list
        The class names (``ImageFolder``: folder names, sorted; ``ImageCSV``: the sorted
        distinct labels, strings or ints).
    image_shape : tuple (C, H, W)
        The shape of every image the dataset gives, in eval and in train mode.
    transform : ImageTransform
        The eval-mode transform (``image_transforms.eval_transform(size)``).
    train_transform : ImageTransform
        The transform ``fit`` applies, with parameters drawn from its seeded generator.
    num_workers : int or None
        Decode threads; None: the engine's thread count at the time of the call.
    prefetch : int
        Batches decoded ahead of the one in use.
    skipped : list of (path, reason)
        The files ``skip_bad=True`` left out.
    """

    def __init__(self, size, channels, train_transform, num_workers, prefetch) -> None:
        size = _size_hw(size)
        self.size = size
        self.channels = _check_channels(channels)
        H, W = (size, size) if isinstance(size, int) else size
        self.image_shape = (self.channels, H, W)
        self.transform = eval_transform(size)
        if train_transform is None or (isinstance(train_transform, str) and train_transform == "default"):
            train_transform = default_train_transform(size)
        if not isinstance(train_transform, ImageTransform):
            raise TypeError(
                'train_transform must be an ImageTransform (datasets.image_transforms), "default" or '
                f"None, got {type(train_transform).__name__}"
            )
        self.train_transform = train_transform
        self.num_workers = _check_workers(num_workers)
        if (
            isinstance(prefetch, bool)
            or not isinstance(prefetch, numbers.Integral)
            or not 1 <= int(prefetch) <= 64
        ):
            raise ValueError(f"prefetch must be an int in [1, 64] (batches decoded ahead), got {prefetch!r}")
        self.prefetch = int(prefetch)
        self.skipped: list[tuple[str, str]] = []

    # ---------------------------------------------------------------------------- building
    def _set_items(self, paths, labels, classes, boxes=None, lines=None, skip_bad=False):
        """Read every header (sizes, boxes checked), drop the bad files when ``skip_bad`` (after
        a full decode of each, so that streaming never meets one), and store the rows."""
        check_bool(skip_bad, "skip_bad")
        n = len(paths)
        sizes = np.zeros((n, 2), dtype=np.int64)
        keep = np.ones(n, dtype=bool)
        for i, res in enumerate(self._read_headers(paths, boxes, lines)):
            if isinstance(res, ImageFileError):
                if not skip_bad:
                    raise ImageFileError(
                        res.path, res.reason + " (skip_bad=True leaves bad files out)", res.line
                    )
                keep[i] = False
                self._skip(res)
            else:
                sizes[i] = res
        self.paths = list(paths)
        self.labels = np.ascontiguousarray(np.asarray(labels, dtype=np.int64))
        self.classes = list(classes)
        self._sizes = sizes
        self._boxes = None if boxes is None else np.ascontiguousarray(boxes)
        self._lines = None if lines is None else np.asarray(lines, dtype=np.int64)
        if not keep.all():
            self._take_rows(np.flatnonzero(keep))
        if skip_bad and len(self.paths):
            self._drop_undecodable()
        self._check_train_transform()

    def _check_train_transform(self):
        """ValueError when ``train_transform`` would not give ``image_shape`` for a source size of
        this dataset (e.g. ``Resize(s)`` alone keeps the aspect ratio: use ``eval_transform(s)``).
        Transforms without ``output_size`` are checked per image instead, at decode."""
        _, H, W = self.image_shape
        for w, h in {tuple(int(v) for v in sz) for sz in self._sizes[:4096]}:
            try:
                out = self.train_transform.output_size((w, h))
            except NotImplementedError:
                return
            if tuple(out) != (W, H):
                raise ValueError(
                    f"train_transform {self.train_transform!r} turns a {w}x{h} image of this dataset "
                    f"into {out[0]}x{out[1]}, not the {W}x{H} of size={self.size!r}; end it with a crop "
                    "or resize to that size (datasets.image_transforms.eval_transform(size) is the "
                    "eval transform)"
                )

    def _read_headers(self, paths, boxes, lines):
        """Per file, in order: ``(width, height)`` after its box, or the ImageFileError its header
        read (or box check) gave. Read on ``workers()`` threads, in contiguous chunks; Pillow's
        decompression-bomb warning is silenced for the duration (``read_header`` reports it)."""

        def header(i):
            p, line = paths[i], None if lines is None else int(lines[i])
            try:
                w, h = read_header(p, line, catch_warnings=False)
                if boxes is not None and boxes[i, 0] >= 0:
                    x1, y1, x2, y2 = (int(v) for v in boxes[i])
                    if not (0 <= x1 < x2 <= w and 0 <= y1 < y2 <= h):
                        raise ImageFileError(
                            p,
                            f"bounding box (x_1, y_1, x_2, y_2) = {(x1, y1, x2, y2)} is not "
                            f"inside the {w}x{h} image with x_1 < x_2 and y_1 < y_2",
                            line,
                        )
                    w, h = x2 - x1, y2 - y1
            except ImageFileError as exc:
                return exc
            return (w, h)

        def chunk(bounds):
            return [header(i) for i in range(*bounds)]

        n = len(paths)
        step = max(1, -(-n // (4 * self.workers())))
        with quiet_bomb_warnings():  # one filter for every decode thread, set and restored here only
            with ThreadPoolExecutor(self.workers()) as pool:
                parts = list(pool.map(chunk, [(s, min(s + step, n)) for s in range(0, n, step)]))
        return [r for part in parts for r in part]

    def _skip(self, exc):
        self.skipped.append((exc.path, str(exc)))
        warnings.warn(f"skipping {exc}", RuntimeWarning, stacklevel=4)

    def _drop_undecodable(self):
        def check(i):
            try:
                decode(self.paths[i], self.channels, self._box(i), self._line(i))
            except ImageFileError as exc:
                return exc
            return None

        with ThreadPoolExecutor(self.workers()) as pool:
            errors = list(pool.map(check, range(len(self.paths))))
        bad = [i for i, e in enumerate(errors) if e is not None]
        for i in bad:
            self._skip(errors[i])
        if bad:
            keep = np.ones(len(self.paths), dtype=bool)
            keep[bad] = False
            self._take_rows(np.flatnonzero(keep))

    def _take_rows(self, idx):
        """Keep rows ``idx`` (int64 array) of every per-image attribute, in place."""
        self.paths = [self.paths[i] for i in idx]
        self.labels = np.ascontiguousarray(self.labels[idx])
        self._sizes = self._sizes[idx]
        if self._boxes is not None:
            self._boxes = np.ascontiguousarray(self._boxes[idx])
        if self._lines is not None:
            self._lines = self._lines[idx]
        for name in self._row_attributes():
            setattr(self, name, np.ascontiguousarray(getattr(self, name)[idx]))

    def _row_attributes(self) -> Sequence[str]:
        """Names of the subclass's per-image arrays, kept by ``subset``."""
        return ()

    # ------------------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self.paths)

    def workers(self) -> int:
        """Decode threads for a call: ``num_workers``, or the engine's thread count."""
        return self.num_workers if self.num_workers is not None else max(1, engine.get_num_threads())

    def _box(self, i):
        if self._boxes is None or self._boxes[i, 0] < 0:
            return None
        return tuple(int(v) for v in self._boxes[i])

    def _line(self, i):
        return None if self._lines is None else int(self._lines[i])

    def source_size(self, i) -> tuple[int, int]:
        """``(width, height)`` of image ``i`` as decoded (after its bounding box)."""
        w, h = self._sizes[i]
        return int(w), int(h)

    def load_into(self, i: int, out: np.ndarray, params: Any = None, train: bool = False) -> None:
        """Decode image ``i`` into ``out`` (C, H, W) float32: the eval transform, or (``train``)
        ``train_transform`` with ``params`` from its ``draw``. Raises ImageFileError naming the
        file (and CSV line) when it cannot be decoded or the transform gives another size."""
        path, line = self.paths[i], self._line(i)
        im = decode(path, self.channels, self._box(i), line)
        if im.size != self.source_size(i):
            raise ImageFileError(
                path,
                f"the image is {im.size[0]}x{im.size[1]}, but was "
                f"{self.source_size(i)[0]}x{self.source_size(i)[1]} when the dataset was built: the "
                "file changed since (build the dataset again)",
                line,
            )
        im = self.train_transform.apply(im, params) if train else self.transform.apply(im, None)
        _, H, W = self.image_shape
        if im.size != (W, H):
            which = "train_transform" if train else "the eval transform"
            raise ImageFileError(
                path,
                f"{which} gave a {im.size[0]}x{im.size[1]} image; the dataset's images "
                f"are {W}x{H} (size={self.size!r})",
                line,
            )
        to_chw(im, out)

    def __getitem__(self, i: int) -> Float32Array:
        """Image ``i`` in eval mode: (C, H, W) float32 in [0, 1]. IndexError out of range."""
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise TypeError(f"dataset indices must be ints, got {type(i).__name__} (use subset(indices))")
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for a dataset of {n} images")
        out = np.empty(self.image_shape, dtype=np.float32)
        self.load_into(int(i) % n, out)
        return out

    def subset(self, indices) -> ImageDataset:
        """A dataset of the rows ``indices`` (ints, or a boolean mask of length N), in that
        order, with the same classes, sizes, transforms and workers. Raises IndexError /
        TypeError / ValueError for bad indices."""
        idx = np.asarray(indices)
        if idx.dtype == bool:
            if idx.shape != (len(self),):
                raise ValueError(f"a boolean mask must have shape ({len(self)},), got {idx.shape}")
            idx = np.flatnonzero(idx)
        elif idx.size == 0:
            idx = idx.astype(np.int64)
        elif idx.dtype.kind not in "iu":
            raise TypeError(f"indices must be ints or a boolean mask, got dtype {idx.dtype}")
        if idx.size and idx.dtype.kind == "u" and int(idx.max()) >= len(self):
            raise IndexError(f"indices must be in [-{len(self)}, {len(self)}), got {int(idx.max())}")
        idx = idx.reshape(-1).astype(np.int64)
        if idx.size and (idx.min() < -len(self) or idx.max() >= len(self)):
            raise IndexError(f"indices must be in [-{len(self)}, {len(self)}), got {idx.min()}..{idx.max()}")
        out = copy.copy(self)
        out.skipped = list(self.skipped)
        out._take_rows(idx % max(len(self), 1))
        return out

    def query_gallery(self):
        """``(is_query, is_gallery)`` for ``Embedder.evaluate``: ``(None, None)``, every image
        queries all the others (``ImageCSV`` reads its flags)."""
        return None, None

    def __repr__(self) -> str:
        present = int(np.unique(self.labels).size)
        of = "" if present == len(self.classes) else f" (of {len(self.classes)})"
        return f"{type(self).__name__}({len(self)} images, {present} classes{of}, image_shape={self.image_shape})"

    def load_all(self) -> Float32Array:
        """Every image in eval mode as one (N, C, H, W) float32 array (for data that fits in
        memory), decoded on ``workers()`` threads."""
        out = np.empty((len(self),) + self.image_shape, dtype=np.float32)
        for idx, xb in eval_batches(self, 256):
            out[idx] = xb
        return out
