"""``ImageCSV``: images listed in a CSV file with Open Metric Learning's columns."""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Sequence

import numpy as np

from .image_dataset import ImageDataset
from .image_transforms import ImageTransform

__all__ = ["ImageCSV", "SPLITS", "BBOX_COLUMNS"]

#: the values of the ``split`` column
SPLITS = ("train", "validation")
#: the optional bounding-box columns, in pixels (x_2, y_2 exclusive)
BBOX_COLUMNS = ("x_1", "y_1", "x_2", "y_2")
_TRUE = ("1", "true", "1.0")
_MAX_PIXELS = 2**31 - 1  # a coordinate beyond any image Pillow opens
_FALSE = ("0", "false", "0.0")
_INT = re.compile(r"[+-]?[0-9]+")


def _flag(v, column, path, line):
    s = v.strip().lower()
    if s in _TRUE:
        return 1
    if s in _FALSE:
        return 0
    if s == "":
        return -1
    raise ValueError(f"{path!r} line {line}: {column} must be 0, 1, True or False, got {v!r}")


def _bbox_value(v, column, path, line):
    try:
        f = float(v)
    except ValueError:
        raise ValueError(f"{path!r} line {line}: {column} must be a number of pixels, got {v!r}") from None
    if not math.isfinite(f) or not 0 <= f <= _MAX_PIXELS:
        raise ValueError(
            f"{path!r} line {line}: {column} must be a number of pixels in [0, {_MAX_PIXELS}], got {v!r}"
        )
    return int(round(f))


class ImageCSV(ImageDataset):
    """Images listed in a CSV file with Open Metric Learning's columns, decoded on demand.

    Columns (a header row names them; other columns are ignored):

    - ``label`` (required): the class, an int or any string. Labels that are all decimal
      integers (ASCII digits, an optional sign) in int64's range, no two distinct strings
      naming the same int, are kept as those ints (``classes`` their sorted distinct values);
      otherwise they are strings mapped to ``0 .. C-1`` in sorted order, ``classes[label]``
      giving the string back.
    - ``path`` (required): the image file; a relative path resolves against ``root``, or the
      CSV's folder when ``root`` is None.
    - ``split`` (optional): ``train`` or ``validation`` (``split(...)`` selects one).
    - ``is_query``, ``is_gallery`` (optional): 0 / 1 / True / False (any case), empty when
      unknown; required on ``validation`` rows when the columns exist. They set the
      query/gallery protocol of ``Embedder.evaluate``.
    - ``x_1``, ``y_1``, ``x_2``, ``y_2`` (optional, all four or none): a bounding box in pixels
      (rounded to ints; ``x_2``, ``y_2`` exclusive); the image is cropped to it before any
      transform. An empty box on a row keeps the whole image.

    Parameters
    ----------
    path : str or os.PathLike
        The CSV file (UTF-8, a BOM allowed).
    root : str, os.PathLike or None, default None
    size, channels, train_transform, num_workers, prefetch, skip_bad
        As ``ImageFolder``.

    Attributes
    ----------
    splits : ndarray of str or None
        Each row's ``split`` (None without the column).
    is_query, is_gallery : ndarray of bool or None
        The flags (None without the columns); unknown values read as False.

    Raises
    ------
    FileNotFoundError  the CSV does not exist.
    ValueError         naming the CSV (and its line): no ``label`` or ``path`` column, an empty
                       label or path, a ``split`` other than train / validation, flags other
                       than 0/1/True/False, a partial or malformed bounding box, no rows; and
                       ``datasets.ImageFileError`` naming the file and CSV line for a missing,
                       empty or unreadable image, or a box outside it.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        root: str | os.PathLike[str] | None = None,
        size: int | Sequence[int] = 224,
        *,
        channels: int = 3,
        train_transform: ImageTransform | str | None = "default",
        num_workers: int | None = None,
        prefetch: int = 2,
        skip_bad: bool = False,
    ) -> None:
        super().__init__(size, channels, train_transform, num_workers, prefetch)
        if isinstance(path, (bytes, bool)) or not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a path (str or os.PathLike), got {type(path).__name__}")
        path = os.fspath(path)
        if root is not None and (isinstance(root, (bytes, bool)) or not isinstance(root, (str, os.PathLike))):
            raise TypeError(f"root must be a path or None, got {type(root).__name__}")
        if not os.path.isfile(path):
            if not os.path.exists(path):
                raise FileNotFoundError(f"CSV file {path!r} does not exist")
            raise ValueError(f"{path!r} is not a regular file")
        self.csv_path = path
        base = (
            os.path.abspath(os.fspath(root)) if root is not None else os.path.dirname(os.path.abspath(path))
        )
        self.root = base
        rows, lines = self._read(path)
        cols = rows[0].keys() if rows else ()
        has_split = "split" in cols
        has_flags = [c for c in ("is_query", "is_gallery") if c in cols]
        bbox_cols = [c for c in BBOX_COLUMNS if c in cols]
        if bbox_cols and len(bbox_cols) != 4:
            raise ValueError(
                f"{path!r}: bounding boxes need all four columns {BBOX_COLUMNS}, found {bbox_cols}"
            )
        raw_labels: list[str] = []
        paths: list[str] = []
        splits: list[str] = []
        qflags = np.full(len(rows), -1, np.int8)
        gflags = np.full(len(rows), -1, np.int8)
        boxes = np.full((len(rows), 4), -1, np.int64) if bbox_cols else None
        for r, (row, line) in enumerate(zip(rows, lines)):
            label, p = (row.get("label") or "").strip(), (row.get("path") or "").strip()
            if not label:
                raise ValueError(f"{path!r} line {line}: empty label")
            if not p:
                raise ValueError(f"{path!r} line {line}: empty path")
            raw_labels.append(label)
            paths.append(p if os.path.isabs(p) else os.path.join(base, p))
            if has_split:
                s = (row.get("split") or "").strip()
                if s not in SPLITS:
                    raise ValueError(f"{path!r} line {line}: split must be one of {SPLITS}, got {s!r}")
                splits.append(s)
            if "is_query" in cols:
                qflags[r] = _flag(row.get("is_query") or "", "is_query", path, line)
            if "is_gallery" in cols:
                gflags[r] = _flag(row.get("is_gallery") or "", "is_gallery", path, line)
            if (
                has_flags
                and has_split
                and splits[-1] == "validation"
                and (("is_query" in cols and qflags[r] < 0) or ("is_gallery" in cols and gflags[r] < 0))
            ):
                raise ValueError(f"{path!r} line {line}: a validation row needs is_query and is_gallery")
            if boxes is not None:
                vals = [(row.get(c) or "").strip() for c in BBOX_COLUMNS]
                if any(vals) and not all(vals):
                    raise ValueError(
                        f"{path!r} line {line}: a bounding box needs all of {BBOX_COLUMNS}, got {vals}"
                    )
                if all(vals):
                    boxes[r] = [_bbox_value(v, c, path, line) for v, c in zip(vals, BBOX_COLUMNS)]
        classes: list[int] | list[str]
        ints = [int(v) for v in raw_labels] if all(_INT.fullmatch(v) for v in raw_labels) else None
        if (
            ints is not None
            and len(set(ints)) == len(set(raw_labels))
            and all(  # "7" and "07": two classes
                -(2**63) <= v < 2**63 for v in ints
            )
        ):
            labels = np.asarray(ints, dtype=np.int64)
            classes = [int(c) for c in np.unique(labels)]
        else:
            names = sorted(set(raw_labels))
            index = {c: i for i, c in enumerate(names)}
            labels = np.asarray([index[v] for v in raw_labels], dtype=np.int64)
            classes = names
        self.splits = np.asarray(splits, dtype=object) if has_split else None
        self._qflags, self._gflags = qflags, gflags
        self._has_query = "is_query" in cols
        self._has_gallery = "is_gallery" in cols
        self._set_items(paths, labels, classes, boxes=boxes, lines=lines, skip_bad=skip_bad)
        if not len(self):
            raise ValueError(f"{path!r}: every image file was bad (see skipped)")

    @staticmethod
    def _read(path):
        reader = None
        try:
            with open(path, newline="", encoding="utf-8-sig") as f:
                reader = csv.DictReader(f, strict=True)  # an unclosed quote is an error, not a field to EOF
                header = reader.fieldnames
                if not header:
                    raise ValueError(f"{path!r}: empty CSV (expected a header row with label and path)")
                header = [h.strip() for h in header]
                dup = sorted({h for h in header if header.count(h) > 1})
                if dup:
                    raise ValueError(f"{path!r} line 1: duplicate columns {dup}")
                missing = [c for c in ("label", "path") if c not in header]
                if missing:
                    raise ValueError(
                        f"{path!r} line 1: no {' or '.join(repr(c) for c in missing)} column "
                        f"(Open Metric Learning's columns: label, path, split, is_query, is_gallery); "
                        f"found {header}"
                    )
                reader.fieldnames = header
                rows, lines = [], []
                for row in reader:
                    if None in row:
                        raise ValueError(
                            f"{path!r} line {reader.line_num}: more fields than the header's {len(header)}"
                        )
                    if not any((v or "").strip() for v in row.values()):
                        continue  # a blank line
                    rows.append(row)
                    lines.append(reader.line_num)
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path!r} is not a UTF-8 CSV file ({exc})") from None
        except csv.Error as exc:
            where = f" line {reader.reader.line_num}" if reader is not None else ""  # where it was noticed
            raise ValueError(f"{path!r}{where}: malformed CSV ({exc})") from None
        if not rows:
            raise ValueError(f"{path!r}: no rows after the header")
        return rows, lines

    def _row_attributes(self):
        names = ["_qflags", "_gflags"]
        return names + (["splits"] if self.splits is not None else [])

    @property
    def is_query(self):
        return None if not self._has_query else self._qflags > 0

    @property
    def is_gallery(self):
        return None if not self._has_gallery else self._gflags > 0

    def split(self, name: str) -> ImageCSV:
        """The rows whose ``split`` is ``name`` (``"train"`` or ``"validation"``). ValueError
        without a ``split`` column, for another name, or when no row has it."""
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
        if self.splits is None:
            raise ValueError(f"{self.csv_path!r} has no 'split' column")
        mask = self.splits == name
        if not mask.any():
            raise ValueError(f"{self.csv_path!r} has no {name!r} rows")
        return self.subset(mask)  # type: ignore[return-value]

    def query_gallery(self):
        """``(is_query, is_gallery)`` bool arrays for ``evaluate``, or ``(None, None)`` without
        the columns (every image against the others). ValueError naming the first CSV line whose
        flags are unknown."""
        if not (self._has_query or self._has_gallery):
            return None, None
        for flags, has, col in (
            (self._qflags, self._has_query, "is_query"),
            (self._gflags, self._has_gallery, "is_gallery"),
        ):
            if has and (flags < 0).any():
                i = int(np.flatnonzero(flags < 0)[0])
                raise ValueError(
                    f"{self.csv_path!r} line {self._line(i)}: {col} is empty; evaluate rows with "
                    "both flags (e.g. ds.split('validation'))"
                )
        q = self._qflags > 0 if self._has_query else np.ones(len(self), bool)
        g = self._gflags > 0 if self._has_gallery else np.ones(len(self), bool)
        return q, g
