"""RandomAffine's random parameters: within their ranges, reproducible from a seeded
generator, different per image, and the ones the call applies."""

import numpy as np
import pytest

from mantissa_embed import engine, transforms as T

N, H, W = 4000, 28, 20


def _params(t, seed=0):
    return t.sample_params(N, (H, W), np.random.default_rng(seed))


def test_ranges_are_respected_and_filled():
    angle, translate, scale = _params(T.RandomAffine(12, translate=(0.1, 0.25), scale=(0.9, 1.2)))
    for v, lo, hi in (
        (angle, -12, 12),
        (translate[:, 0], -0.1 * W, 0.1 * W),
        (translate[:, 1], -0.25 * H, 0.25 * H),
        (scale, 0.9, 1.2),
    ):
        assert v.min() >= lo and v.max() <= hi
        span = hi - lo
        assert v.min() < lo + 0.01 * span and v.max() > hi - 0.01 * span  # the whole range is used
        assert abs(v.mean() - (lo + hi) / 2) < 0.03 * span  # uniform: centred


def test_pair_of_degrees_and_defaults():
    angle, translate, scale = _params(T.RandomAffine((5, 30)))
    assert angle.min() >= 5 and angle.max() <= 30 and angle.min() < 6
    np.testing.assert_array_equal(translate, 0)
    np.testing.assert_array_equal(scale, 1)


def test_seeded_reproducibility_and_independence():
    t = T.RandomAffine(20, translate=(0.1, 0.1), scale=(0.8, 1.2))
    x = np.random.default_rng(9).standard_normal((16, 1, 12, 12)).astype(np.float32)
    a = t(x, np.random.default_rng(5)).copy()
    np.testing.assert_array_equal(t(x, np.random.default_rng(5)), a)
    assert not np.array_equal(t(x, np.random.default_rng(6)), a)
    rng = np.random.default_rng(5)
    first = t(x, rng).copy()
    assert not np.array_equal(t(x, rng), first)  # the generator moves on between batches


def test_images_get_different_parameters():
    angle, translate, scale = _params(T.RandomAffine(10, translate=(0.1, 0.1), scale=(0.9, 1.1)))
    for v in (angle, translate[:, 0], translate[:, 1], scale):
        assert len(np.unique(v)) == N
    x = np.broadcast_to(np.random.default_rng(1).standard_normal((1, 1, 9, 9)), (8, 1, 9, 9))
    y = T.RandomAffine(30)(x.astype(np.float32), np.random.default_rng(2))
    assert len({y[i].tobytes() for i in range(8)}) == 8  # the same image, transformed 8 ways


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_call_applies_the_sampled_parameters(backend):
    t = T.RandomAffine(15, translate=(0.2, 0.1), scale=(0.7, 1.3), backend=backend)
    x = np.random.default_rng(3).standard_normal((6, 2, 11, 13)).astype(np.float32)
    params = t.sample_params(6, (11, 13), np.random.default_rng(4))
    want = engine.affine_resample_forward(x, T.affine_theta(*params, (11, 13)))
    np.testing.assert_allclose(t(x, np.random.default_rng(4)), want, rtol=1e-5, atol=1e-5)


def test_flip_and_crop_draws():
    rng = np.random.default_rng(0)
    x = np.stack([np.arange(1, 2001), -np.arange(1, 2001)], axis=1).astype(np.float32).reshape(2000, 1, 1, 2)
    flipped = T.RandomHorizontalFlip(0.3)(x, rng)[:, 0, 0, 0] < 0
    assert 0.26 < flipped.mean() < 0.34
    kept = T.RandomCrop(4, padding=2)(np.ones((3000, 1, 4, 4), np.float32), rng).reshape(3000, -1).sum(axis=1)
    # 16 image pixels kept only at the centred position (1 of 25), 4 at the corners
    assert (kept == 16).mean() < 0.1 and kept.min() == 4
