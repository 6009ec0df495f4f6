"""RandomCrop: zero padding, then a crop at a random position per image."""

from __future__ import annotations

import numbers

from .base import Transform, check_size_pair


def _padding(padding):
    """torchvision's padding forms -> (left, top, right, bottom)."""
    if padding is None:
        return (0, 0, 0, 0)
    if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
        padding = (padding,)
    if isinstance(padding, (str, bytes)) or not hasattr(padding, "__len__"):
        raise TypeError(f"padding must be an int or a sequence of 2 or 4 ints, got {type(padding).__name__}")
    if len(padding) not in (1, 2, 4):
        raise ValueError(f"padding must have 1, 2 or 4 entries, got {tuple(padding)}")
    for i, p in enumerate(padding):
        if isinstance(p, bool) or not isinstance(p, numbers.Integral):
            raise TypeError(f"padding[{i}] must be an int, got {type(p).__name__}")
        if p < 0:
            raise ValueError(f"padding entries must be >= 0, got {tuple(padding)}")
    p = tuple(int(v) for v in padding)
    return p * 4 if len(p) == 1 else (p * 2 if len(p) == 2 else p)


class RandomCrop(Transform):
    """Zero-pad each image, then crop it at a random position (torchvision's ``RandomCrop``
    with ``fill=0``, ``padding_mode="constant"``, batched: one position per image).

    Parameters
    ----------
    size : int or (h, w)
        Output size; an int gives a square crop.
    padding : int, (left/right, top/bottom) or (left, top, right, bottom), optional
        Zeros added on each border before cropping.

    Per call the N top offsets, then the N left offsets, are drawn from ``rng`` (uniform
    integers over every position of the crop in the padded image). Output (N, C, h, w).
    Raises ValueError / TypeError naming the argument; ValueError naming ``size`` when the
    crop is larger than the padded image.
    """

    def __init__(self, size: int | tuple[int, int], padding: int | tuple[int, ...] | None = None) -> None:
        self.size = check_size_pair(size, "size", 1)
        self.padding = _padding(padding)
        self._padding_arg = (
            padding if padding is None or isinstance(padding, (int, numbers.Integral)) else list(padding)
        )

    def output_shape(self, input_shape):
        N, C, H, W = input_shape
        left, top, right, bottom = self.padding
        Hp, Wp = H + top + bottom, W + left + right
        h, w = self.size
        if h > Hp or w > Wp:
            raise ValueError(
                f"size {self.size} is larger than the padded image {Hp}x{Wp} "
                f"(X {tuple(input_shape)}, padding {self.padding})"
            )
        return (N, C, h, w)

    def _apply(self, X, rng, out):
        N, _, H, W = X.shape
        left, top, right, bottom = self.padding
        h, w = self.size
        tops = rng.integers(0, H + top + bottom - h + 1, N)
        lefts = rng.integers(0, W + left + right - w + 1, N)
        out.fill(0)
        for n in range(N):
            # the crop in padded coordinates, shifted into X's, clipped to it
            r0, c0 = int(tops[n]) - top, int(lefts[n]) - left
            a, b = max(r0, 0), min(r0 + h, H)
            c, d = max(c0, 0), min(c0 + w, W)
            if a < b and c < d:
                out[n, :, a - r0 : b - r0, c - c0 : d - c0] = X[n, :, a:b, c:d]
        return out

    def _config(self):
        return {"size": list(self.size), "padding": self._padding_arg}
