"""RandomHorizontalFlip and RandomCrop against numpy (np.flip, np.pad and slicing) for the
same draws from the generator."""

import numpy as np
import pytest

from mantissa_embed import transforms as T


def _x(seed, shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0])
def test_flip_matches_numpy(p):
    x = _x(0, (9, 2, 5, 7))
    got = T.RandomHorizontalFlip(p)(x, np.random.default_rng(1))
    flip = np.random.default_rng(1).random(9) < p
    want = np.stack([np.flip(x[i], axis=-1) if flip[i] else x[i] for i in range(9)])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "size,padding,pad4",
    [
        (5, None, (0, 0, 0, 0)),
        (4, 2, (2, 2, 2, 2)),
        ((3, 6), (1, 3), (1, 3, 1, 3)),
        ((7, 5), (0, 1, 2, 3), (0, 1, 2, 3)),
        (1, 0, (0, 0, 0, 0)),
        ((9, 9), 2, (2, 2, 2, 2)),
    ],
)
def test_crop_matches_numpy(size, padding, pad4):
    x = _x(2, (6, 3, 5, 6))
    got = T.RandomCrop(size, padding)(x, np.random.default_rng(3))
    h, w = (size, size) if isinstance(size, int) else size
    left, top, right, bottom = pad4
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    rng = np.random.default_rng(3)
    tops = rng.integers(0, xp.shape[2] - h + 1, 6)
    lefts = rng.integers(0, xp.shape[3] - w + 1, 6)
    want = np.stack([xp[i, :, tops[i] : tops[i] + h, lefts[i] : lefts[i] + w] for i in range(6)])
    assert got.shape == (6, 3, h, w)
    np.testing.assert_array_equal(got, want)


def test_compose_applies_in_order():
    x = _x(4, (5, 1, 6, 6))
    aug = T.Compose([T.RandomCrop(4, padding=1), T.RandomHorizontalFlip(0.5)])
    got = aug(x, np.random.default_rng(5))
    rng = np.random.default_rng(5)
    want = T.RandomHorizontalFlip(0.5)(T.RandomCrop(4, padding=1)(x, rng), rng)
    np.testing.assert_array_equal(got, want)
