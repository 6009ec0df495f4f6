"""``ImageFolder``: one sub-folder of image files per class (torchvision's layout)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence

import numpy as np

from ._pillow import ImageFileError, image_extensions
from .image_dataset import ImageDataset
from .image_transforms import ImageTransform

__all__ = ["ImageFolder"]


class ImageFolder(ImageDataset):
    """Images in ``root/<class>/**/<file>``, one sub-folder per class, decoded on demand.

    Classes are the sub-folders of ``root``, sorted by name (label ``i`` is ``classes[i]``),
    as torchvision's ``ImageFolder``. The images of a class are its files, searched
    recursively (symbolic links followed, each folder once) and sorted by path, whose
    extension is one Pillow opens (``PIL.Image.registered_extensions()``, case-insensitive);
    other files are ignored.
    Hidden files and folders (names starting with ".") are ignored.

    Parameters
    ----------
    root : str or os.PathLike
    size : int or (H, W), default 224
        An int ``s`` resizes the shorter side to ``s``, then crops the central ``s x s``
        square (torchvision's ``Resize(s)`` + ``CenterCrop(s)``). A pair resizes to exactly
        ``(H, W)``, changing the aspect ratio. Resampling is Pillow's bilinear with
        antialiasing. This differs from the array helper ``datasets.pad_or_resize``, which
        works on float arrays already in memory, never crops, and interpolates without
        antialiasing.
    channels : {3, 1}, default 3
        3: every mode (L, LA, P, RGBA, CMYK, 16-bit, ...) converted to RGB (alpha dropped);
        1: to grey (``"L"``). 16-bit images are scaled to 8 bits (65535 -> 255).
    train_transform : ImageTransform, "default" or None, default "default"
        What ``Embedder.fit`` applies to each image (parameters drawn from the fit's seeded
        generator). ``"default"`` / None: ``RandomResizedCrop(size, scale=(0.16, 1))`` then
        ``RandomHorizontalFlip()``. It replaces ``fit``'s ``augment``.
    num_workers : int >= 1 or None, default None
        Decode threads; None: the engine's thread count.
    prefetch : int >= 1, default 2
        Batches decoded ahead of the one in use.
    skip_bad : bool, default False
        Leave out (with a RuntimeWarning each, listed in ``skipped``) the files that fail the
        header read or a full decode, which then runs once for every file at build time, and
        the class folders without image files (their classes stay in ``classes``, with no
        image). By default the first bad file raises.

    Raises
    ------
    FileNotFoundError   ``root`` does not exist.
    NotADirectoryError  ``root`` is a file.
    ValueError          no class folder, a class folder without images, no images at all;
                        ``datasets.ImageFileError`` (a ValueError) naming the first file that is
                        empty, not an image, or over Pillow's decompression-bomb limit.
    TypeError           bad argument types.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        size: int | Sequence[int] = 224,
        *,
        channels: int = 3,
        train_transform: ImageTransform | str | None = "default",
        num_workers: int | None = None,
        prefetch: int = 2,
        skip_bad: bool = False,
    ) -> None:
        super().__init__(size, channels, train_transform, num_workers, prefetch)
        if isinstance(root, (bytes, bool)) or not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"root must be a path (str or os.PathLike), got {type(root).__name__}")
        root = os.fspath(root)
        if not os.path.exists(root):
            raise FileNotFoundError(f"ImageFolder root {root!r} does not exist")
        if not os.path.isdir(root):
            raise NotADirectoryError(f"ImageFolder root {root!r} is not a folder")
        root = os.path.abspath(root)  # the paths stay valid after a chdir
        self.root = root
        classes = sorted(e.name for e in os.scandir(root) if e.is_dir() and not e.name.startswith("."))
        if not classes:
            raise ValueError(
                f"ImageFolder root {root!r} has no class sub-folders (expected root/<class>/<image>)"
            )
        exts = image_extensions()
        loose = [
            e.name for e in os.scandir(root) if e.is_file() and os.path.splitext(e.name)[1].lower() in exts
        ]
        if loose:
            warnings.warn(
                f"ImageFolder: {len(loose)} image file(s) directly in {root!r} (e.g. {loose[0]!r}) are not "
                "in a class folder and are ignored (the layout is root/<class>/<image>)",
                RuntimeWarning,
                stacklevel=2,
            )
        paths, labels, empty = [], [], []
        for c, name in enumerate(classes):
            files, seen = [], set()
            for dirpath, dirnames, filenames in os.walk(os.path.join(root, name), followlinks=True):
                real = os.path.realpath(dirpath)
                if real in seen:  # a folder reached again through a symbolic link (a loop): listed once
                    dirnames[:] = []
                    continue
                seen.add(real)
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                files += [
                    os.path.join(dirpath, f)
                    for f in filenames
                    if not f.startswith(".") and os.path.splitext(f)[1].lower() in exts
                ]
            if not files:
                empty.append(name)
            files.sort()
            paths += files
            labels += [c] * len(files)
        if not paths:
            raise ValueError(
                f"ImageFolder root {root!r} holds no image files (extensions Pillow opens, e.g. "
                f".jpg, .png, .pgm) in its {len(classes)} class folders"
            )
        if empty and not skip_bad:
            raise ValueError(
                f"ImageFolder: class folder(s) without image files: "
                f"{', '.join(repr(os.path.join(root, e)) for e in empty[:5])}"
                + (f" and {len(empty) - 5} more" if len(empty) > 5 else "")
                + " (remove them, or pass skip_bad=True)"
            )
        for e in empty:  # skip_bad: reported like a bad file; the class keeps its label
            self._skip(ImageFileError(os.path.join(root, e), "class folder without image files"))
        self._set_items(paths, np.asarray(labels, dtype=np.int64), classes, skip_bad=skip_bad)
        if not len(self):
            raise ValueError(f"ImageFolder root {root!r}: every image file was bad (see skipped)")
