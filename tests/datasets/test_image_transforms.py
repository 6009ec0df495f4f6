"""``image_transforms``: parameter draws are deterministic for a seeded generator (and drawn
in the main thread, so independent of the decode threads); output sizes; ``RandomResizedCrop``
against an independent Pillow crop-then-resize.

What the comparison found: ``RandomResizedCrop.apply`` resizes with
``Image.resize(size, box=...)``, whose bilinear filter reads source pixels *outside* the box
(up to its support: one source pixel when upscaling, one output pixel's footprint when
downscaling), while torchvision's crop-then-resize clamps at the crop's edge. The two are
within 1/255 (the 8-bit rounding between Pillow's horizontal and vertical passes) except on a
border of output pixels within the filter support, where they differ by up to ~90/255 on noise
images; a crop covering the whole image is bitwise identical."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from PIL import Image

from mantissa_embed.datasets import ImageFolder
from mantissa_embed.datasets.image_transforms import (
    CenterCrop,
    Compose,
    RandomHorizontalFlip,
    RandomResizedCrop,
    Resize,
    default_train_transform,
    eval_transform,
)


def _noise(w, h, seed=0, mode="L"):
    a = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    return Image.fromarray(a, "RGB").convert(mode)


@given(
    w=st.integers(1, 300),
    h=st.integers(1, 300),
    seed=st.integers(0, 2**32 - 1),
    lo=st.floats(0.01, 1.0),
    out=st.integers(1, 64),
)
@settings(max_examples=200, deadline=None)
def test_random_resized_crop_draw_is_deterministic_and_inside(w, h, seed, lo, out):
    t = RandomResizedCrop(out, scale=(lo, 1.0))
    p1 = [t.draw(np.random.default_rng(seed), (w, h)) for _ in range(2)]
    assert p1[0] == p1[1]
    left, top, cw, ch = p1[0]
    assert all(isinstance(v, int) for v in p1[0])
    assert 0 <= left and 0 <= top and 1 <= cw and 1 <= ch and left + cw <= w and top + ch <= h
    assert t.output_size((w, h)) == (out, out)


def test_random_resized_crop_draw_follows_torchvision():
    """Ten tries of (area fraction, log-ratio), then a uniform position; recomputed here."""
    t = RandomResizedCrop(10, scale=(0.2, 0.9), ratio=(0.5, 2.0))
    rng, ref = np.random.default_rng(5), np.random.default_rng(5)
    W, H = 64, 48
    for _ in range(50):
        got = t.draw(rng, (W, H))
        for _ in range(10):
            area = W * H * ref.uniform(0.2, 0.9)
            ar = math.exp(ref.uniform(math.log(0.5), math.log(2.0)))
            cw, ch = round(math.sqrt(area * ar)), round(math.sqrt(area / ar))
            if 0 < cw <= W and 0 < ch <= H:
                top = int(ref.integers(0, H - ch + 1))
                left = int(ref.integers(0, W - cw + 1))
                break
        assert got == (left, top, cw, ch)


def test_random_resized_crop_fallback_is_central():
    t = RandomResizedCrop(
        8, scale=(1.0, 1.0), ratio=(1.0, 1.0)
    )  # a square of the whole area never fits 40x10
    assert t.draw(np.random.default_rng(0), (40, 10)) == (15, 0, 10, 10)
    assert t.draw(np.random.default_rng(0), (10, 40)) == (0, 15, 10, 10)


def test_flip_draw_and_apply():
    f = RandomHorizontalFlip(0.5)
    draws = [f.draw(np.random.default_rng(3), (5, 5)) for _ in range(2)]
    assert draws[0] == draws[1]
    rng = np.random.default_rng(0)
    flips = [f.draw(rng, (5, 5)) for _ in range(400)]
    assert 150 < sum(flips) < 250
    assert RandomHorizontalFlip(0.0).draw(rng, (5, 5)) is False
    assert RandomHorizontalFlip(1.0).draw(rng, (5, 5)) is True
    im = _noise(7, 4)
    np.testing.assert_array_equal(np.asarray(f.apply(im, True)), np.asarray(im)[:, ::-1])
    assert f.apply(im, False) is im
    with pytest.raises(ValueError):
        RandomHorizontalFlip(1.5)


@pytest.mark.parametrize("src", [(64, 48), (17, 90), (30, 30), (5, 3)])
@pytest.mark.parametrize("size", [16, (12, 20)])
def test_random_resized_crop_against_crop_then_resize(src, size):
    H, W = (size, size) if isinstance(size, int) else size
    t = RandomResizedCrop(size, scale=(0.1, 1.0))
    rng = np.random.default_rng(7)
    for mode in ("L", "RGB"):
        im = _noise(*src, seed=1, mode=mode)
        for _ in range(20):
            left, top, cw, ch = p = t.draw(rng, src)
            out = t.apply(im, p)
            assert out.size == (W, H) and out.mode == mode
            ref = im.crop((left, top, left + cw, top + ch)).resize((W, H), Image.BILINEAR)
            a, b = np.asarray(out, np.int16), np.asarray(ref, np.int16)
            # inside the border the filter reaches from the box edge, they agree to 1/255
            by = math.ceil(max(1.0, H / ch)) + 1
            bx = math.ceil(max(1.0, W / cw)) + 1
            if H > 2 * by and W > 2 * bx:
                assert np.abs(a - b)[by:-by, bx:-bx].max() <= 1
            assert np.abs(a - b).mean() < 40
        full = t.apply(im, (0, 0) + src)
        np.testing.assert_array_equal(np.asarray(full), np.asarray(im.resize((W, H), Image.BILINEAR)))


@pytest.mark.parametrize(
    "size, src, expect",
    [
        (8, (40, 10), (32, 8)),
        (8, (10, 40), (8, 32)),
        (8, (10, 10), (8, 8)),
        (7, (10, 15), (7, 10)),
        ((5, 9), (40, 10), (9, 5)),
    ],
)
def test_resize_output_sizes(size, src, expect):
    r = Resize(size)
    assert r.output_size(src) == expect
    assert r.apply(_noise(*src), None).size == expect


def test_center_crop_and_eval_transform():
    im = _noise(11, 8)
    c = CenterCrop(4).apply(im, None)
    np.testing.assert_array_equal(
        np.asarray(c), np.asarray(im)[2:6, 4:8]
    )  # top round(2.0), left round(3.5)=4
    big = CenterCrop((10, 13)).apply(im, None)  # larger than the image: zero padding around it
    assert big.size == (13, 10) and np.asarray(big)[0].sum() == 0
    assert eval_transform(6).apply(_noise(30, 9), None).size == (6, 6)
    assert eval_transform((6, 4)).apply(_noise(30, 9), None).size == (4, 6)
    assert default_train_transform((6, 4)).output_size((30, 9)) == (4, 6)


def test_compose_draws_in_order_and_rejects_non_transforms():
    c = Compose([RandomResizedCrop(8), RandomHorizontalFlip()])
    p = c.draw(np.random.default_rng(1), (30, 20))
    rng = np.random.default_rng(1)
    assert p == [RandomResizedCrop(8).draw(rng, (30, 20)), RandomHorizontalFlip().draw(rng, (8, 8))]
    assert c.apply(_noise(30, 20), p).size == (8, 8)
    with pytest.raises(TypeError):
        Compose([lambda im: im])
    with pytest.raises(ValueError):
        RandomResizedCrop(8, scale=(0.0, 1.0))
    with pytest.raises(TypeError):
        Resize(2.5)


def test_train_batches_are_independent_of_the_thread_count(image_tree):
    """The parameters are drawn in the main thread: a seeded stream of train batches has the
    same bytes with 1 and 4 decode threads (and prefetch 1 or 3)."""
    from mantissa_embed.datasets._stream import stream_batches

    def batches(num_workers, prefetch):
        ds = ImageFolder(image_tree, size=10, num_workers=num_workers, prefetch=prefetch)
        rng, t = np.random.default_rng(11), ds.train_transform

        def draws():
            for s in range(0, 12, 5):
                idx = rng.permutation(12)[:5] if s < 10 else np.arange(10, 12)
                yield idx, [t.draw(rng, ds.source_size(int(i))) for i in idx]

        return [(idx.copy(), xb.copy()) for idx, xb in stream_batches(ds, draws(), 5)]

    ref = batches(1, 1)
    assert len(ref) == 3 and ref[-1][1].shape == (2, 3, 10, 10)
    for nw, pf in ((4, 1), (4, 3), (2, 2)):
        got = batches(nw, pf)
        for (i0, x0), (i1, x1) in zip(ref, got):
            np.testing.assert_array_equal(i0, i1)
            np.testing.assert_array_equal(x0, x1)
