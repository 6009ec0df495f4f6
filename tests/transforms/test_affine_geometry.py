"""affine_theta's convention (torchvision's: counter-clockwise degrees, translations in pixels
right and down, scale about the centre) against transformations numpy does exactly."""

import numpy as np
import pytest

from mantissa_embed import engine, transforms as T


def _img(seed, shape=(1, 2, 6, 6)):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _apply(x, angle, translate, scale):
    theta = T.affine_theta([angle] * x.shape[0], [translate] * x.shape[0], [scale] * x.shape[0], x.shape[2:])
    return engine.affine_resample_forward(x, theta)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_rotation_by_quarter_turns_is_rot90(k):
    x = _img(k)
    np.testing.assert_allclose(_apply(x, 90.0 * k, (0, 0), 1.0), np.rot90(x, k, axes=(2, 3)), atol=1e-6)


@pytest.mark.parametrize("tx,ty", [(2, 0), (0, 1), (-1, 3), (3, -2)])
def test_translation_shifts_right_and_down_with_zero_fill(tx, ty):
    x = _img(4, (2, 1, 7, 6))
    want = np.zeros_like(x)
    H, W = x.shape[2:]
    want[:, :, max(ty, 0) : H + min(ty, 0), max(tx, 0) : W + min(tx, 0)] = x[
        :, :, max(-ty, 0) : H - max(ty, 0), max(-tx, 0) : W - max(tx, 0)
    ]
    np.testing.assert_allclose(_apply(x, 0.0, (tx, ty), 1.0), want, atol=1e-5)


def test_scale_about_the_centre():
    """Scale 2 on a 4x4 image: output column j samples input column (j + 0.5 - 2) / 2 + 2 - 0.5
    (pixel centres about the centre, halved), the same for rows."""
    x = _img(5, (1, 1, 4, 4))
    got = _apply(x, 0.0, (0, 0), 2.0)
    pos = np.array([0.75, 1.25, 1.75, 2.25])  # input coordinates of the output columns
    rows = []
    for iy in pos:
        y0, fy = int(np.floor(iy)), iy - np.floor(iy)
        row = []
        for ix in pos:
            x0, fx = int(np.floor(ix)), ix - np.floor(ix)
            p = x[0, 0]
            row.append(
                (1 - fy) * ((1 - fx) * p[y0, x0] + fx * p[y0, x0 + 1])
                + fy * ((1 - fx) * p[y0 + 1, x0] + fx * p[y0 + 1, x0 + 1])
            )
        rows.append(row)
    np.testing.assert_allclose(got[0, 0], np.array(rows), atol=1e-6)


def test_rotation_of_a_non_square_image_keeps_pixel_distances():
    """A rotation about the centre of a 5x9 image by 180 degrees is the flip of both axes."""
    x = _img(6, (1, 1, 5, 9))
    np.testing.assert_allclose(_apply(x, 180.0, (0, 0), 1.0), x[:, :, ::-1, ::-1], atol=1e-5)


def test_identity_theta():
    theta = T.affine_theta([0.0, 0.0], np.zeros((2, 2)), [1.0, 1.0], (5, 7))
    np.testing.assert_array_equal(theta, np.broadcast_to(np.eye(2, 3, dtype=np.float32), (2, 2, 3)))
