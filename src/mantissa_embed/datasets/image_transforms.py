"""Transforms of decoded image files (Pillow images), for ``ImageFolder`` / ``ImageCSV``.

Names and arguments are torchvision's (``Resize``, ``CenterCrop``, ``RandomResizedCrop``,
``RandomHorizontalFlip``, ``Compose``). Unlike torchvision's, each transform is split in two:

- ``draw(rng, size) -> params`` draws the random parameters from a ``numpy.random.Generator``
  for a source image of ``size = (width, height)``, known from the file's header; a dataset
  draws them in the main thread, image after image, from ``fit``'s seeded generator;
- ``apply(image, params) -> image`` runs in a decode thread.

So a seed gives the same batches for any number of decode threads. Resampling is Pillow's
bilinear filter with antialiasing (its filter support widens with the downscaling factor), as
torchvision's ``Resize`` on Pillow images; ``RandomResizedCrop`` crops and resizes in one
``Image.resize(size, box=...)`` call.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from ..transforms.base import check_pair, check_size_pair

__all__ = [
    "ImageTransform",
    "Resize",
    "CenterCrop",
    "RandomResizedCrop",
    "RandomHorizontalFlip",
    "Compose",
    "ResizeCenterCrop",
    "eval_transform",
    "default_train_transform",
]


def _size_hw(size, name="size") -> tuple[int, int] | int:
    """An int (kept) or a pair ``(H, W)`` of ints >= 1 (a tuple)."""
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        if size < 1:
            raise ValueError(f"{name} must be >= 1, got {size}")
        return int(size)
    h, w = check_size_pair(size, name, 1)
    return (h, w)


def _square(size):
    return (size, size) if isinstance(size, int) else size


class ImageTransform:
    """Base class: ``draw(rng, size)`` (main thread), ``apply(image, params)`` (any thread) and
    ``output_size(size)`` ((width, height) after the transform, or None when it depends on the
    random parameters and on nothing else)."""

    def draw(self, rng: np.random.Generator, size: tuple[int, int]) -> Any:
        return None

    def apply(self, image: Image.Image, params: Any) -> Image.Image:
        raise NotImplementedError

    def output_size(self, size: tuple[int, int]) -> tuple[int, int]:
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class Resize(ImageTransform):
    """Resize with Pillow's antialiased bilinear filter.

    ``size``: an int resizes the shorter side to ``size`` keeping the aspect ratio (the longer
    side becomes ``int(size * long / short)``, as torchvision); a pair ``(H, W)`` resizes to
    exactly that. Raises TypeError / ValueError for a bad ``size``."""

    def __init__(self, size: int | Sequence[int]) -> None:
        self.size = _size_hw(size)

    def output_size(self, size):
        w, h = size
        if isinstance(self.size, tuple):
            return (self.size[1], self.size[0])
        if w <= h:
            return (self.size, int(self.size * h / w))
        return (int(self.size * w / h), self.size)

    def apply(self, image, params):
        out = self.output_size(image.size)
        return image if out == image.size else image.resize(out, Image.BILINEAR)


class CenterCrop(ImageTransform):
    """The central ``size`` (int: a square; pair: ``(H, W)``) crop: top ``round((h - H) / 2)``,
    left ``round((w - W) / 2)`` as torchvision; an image smaller than the crop is padded with
    zeros around it."""

    def __init__(self, size: int | Sequence[int]) -> None:
        self.size = _size_hw(size)

    def output_size(self, size):
        H, W = _square(self.size)
        return (W, H)

    def apply(self, image, params):
        H, W = _square(self.size)
        w, h = image.size
        if (w, h) == (W, H):
            return image
        top, left = int(round((h - H) / 2.0)), int(round((w - W) / 2.0))
        return image.crop((left, top, left + W, top + H))


class RandomResizedCrop(ImageTransform):
    """A random crop of area ``scale`` times the image's and aspect ratio (w/h) drawn
    log-uniformly in ``ratio``, resized to ``size`` (int: a square; pair ``(H, W)``).

    The draw is torchvision's: up to 10 tries of a uniform area fraction and a log-uniform
    ratio, a uniform position when the crop fits; otherwise the central crop of the whole
    image with the ratio clamped to ``ratio``. Defaults ``scale=(0.08, 1.0)``,
    ``ratio=(3/4, 4/3)``. Source: Szegedy et al. 2015, "Going deeper with convolutions"."""

    def __init__(
        self,
        size: int | Sequence[int],
        scale: Sequence[float] = (0.08, 1.0),
        ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
    ) -> None:
        self.size = _size_hw(size)
        self.scale = check_pair(scale, "scale", 0.0, 1.0, strict=True)
        self.ratio = check_pair(ratio, "ratio", 0.0, strict=True)

    def output_size(self, size):
        H, W = _square(self.size)
        return (W, H)

    def draw(self, rng, size):
        width, height = size
        area = width * height
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            target_area = area * rng.uniform(self.scale[0], self.scale[1])
            aspect = math.exp(rng.uniform(log_ratio[0], log_ratio[1]))
            w = int(round(math.sqrt(target_area * aspect)))
            h = int(round(math.sqrt(target_area / aspect)))
            if 0 < w <= width and 0 < h <= height:
                top = int(rng.integers(0, height - h + 1))
                left = int(rng.integers(0, width - w + 1))
                return (left, top, w, h)
        in_ratio = width / height
        if in_ratio < min(self.ratio):
            w, h = width, int(round(width / min(self.ratio)))
        elif in_ratio > max(self.ratio):
            w, h = int(round(height * max(self.ratio))), height
        else:
            w, h = width, height
        return ((width - w) // 2, (height - h) // 2, w, h)

    def apply(self, image, params):
        left, top, w, h = params
        H, W = _square(self.size)
        return image.resize((W, H), Image.BILINEAR, box=(left, top, left + w, top + h))


class RandomHorizontalFlip(ImageTransform):
    """Mirror left-right with probability ``p`` (default 0.5)."""

    def __init__(self, p: float = 0.5) -> None:
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be in [0, 1], got {p}")
        self.p = p

    def output_size(self, size):
        return size

    def draw(self, rng, size):
        return bool(rng.random() < self.p)

    def apply(self, image, params):
        return image.transpose(Image.FLIP_LEFT_RIGHT) if params else image


class Compose(ImageTransform):
    """The transforms in order; ``draw`` draws each one's parameters in that order."""

    def __init__(self, transforms: Sequence[ImageTransform]) -> None:
        transforms = list(transforms)
        for i, t in enumerate(transforms):
            if not isinstance(t, ImageTransform):
                raise TypeError(f"transforms[{i}] must be an ImageTransform, got {type(t).__name__}")
        self.transforms = transforms

    def output_size(self, size):
        for t in self.transforms:
            size = t.output_size(size)
        return size

    def draw(self, rng, size):
        params = []
        for t in self.transforms:
            params.append(t.draw(rng, size))
            size = t.output_size(size)
        return params

    def apply(self, image, params):
        if params is None:  # deterministic transforms only (eval mode)
            params = [None] * len(self.transforms)
        for t, p in zip(self.transforms, params):
            image = t.apply(image, p)
        return image


class ResizeCenterCrop(Compose):
    """``Resize(size)`` then ``CenterCrop(size)`` (``size`` an int): the same pixels, except
    that an image whose resized long side would exceed ``MAX_STRIP`` times ``size`` (a 1 x 4000
    strip would become 224 x 896,000) is resized from the preimage of the central crop only
    (``Image.resize(box=...)``), so memory stays bounded by the crop."""

    MAX_STRIP = 4

    def __init__(self, size: int) -> None:
        checked = _size_hw(size)
        if not isinstance(checked, int):
            raise TypeError(f"size must be an int, got {size!r}")
        super().__init__([Resize(checked), CenterCrop(checked)])
        size = checked
        self.size = size

    def apply(self, image, params):
        w, h = image.size
        rw, rh = self.transforms[0].output_size((w, h))
        s = self.size
        if max(rw, rh) <= self.MAX_STRIP * s:
            return super().apply(image, params)
        top, left = int(round((rh - s) / 2.0)), int(round((rw - s) / 2.0))
        sx, sy = w / rw, h / rh  # source pixels per resized pixel
        box = (left * sx, top * sy, (left + s) * sx, (top + s) * sy)
        return image.resize((s, s), Image.BILINEAR, box=box)

    def __repr__(self) -> str:
        return f"Compose(transforms=[Resize(size={self.size}), CenterCrop(size={self.size})])"


def eval_transform(size) -> ImageTransform:
    """The eval-mode transform of a dataset's ``size``: an int ``s`` is ``Resize(s)`` then
    ``CenterCrop(s)`` (``ResizeCenterCrop``); a pair ``(H, W)`` is ``Resize((H, W))``."""
    size = _size_hw(size)
    return ResizeCenterCrop(size) if isinstance(size, int) else Resize(size)


def default_train_transform(size) -> ImageTransform:
    """``RandomResizedCrop(size, scale=(0.16, 1))`` then ``RandomHorizontalFlip()``."""
    return Compose([RandomResizedCrop(size, scale=(0.16, 1.0)), RandomHorizontalFlip()])
