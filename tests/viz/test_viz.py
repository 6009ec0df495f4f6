"""viz: PNG files of the expected size, exact border colours, atomic writes, lazy matplotlib."""

import struct
import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")
from matplotlib.image import imread  # noqa: E402

from mantissa_embed import viz  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path):
    """(width, height) from the IHDR chunk, checking the PNG signature and chunk layout."""
    data = open(path, "rb").read()
    assert data[:8] == PNG_SIGNATURE
    length, ctype = struct.unpack(">I4s", data[8:16])
    assert ctype == b"IHDR" and length == 13
    w, h = struct.unpack(">II", data[16:24])
    assert data[-12:] == b"\x00\x00\x00\x00IEND\xaeB`\x82"  # complete file: ends with IEND
    return w, h


def rgb_at(img, y, x):
    px = img[y, x, :3]
    if img.dtype != np.uint8:
        px = np.round(px * 255).astype(int)
    return tuple(int(v) for v in px)


@pytest.fixture
def toy():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(4), 10)
    Z = (rng.standard_normal((40, 5)) + 4 * np.eye(5)[y]).astype(np.float32)
    images = rng.random((40, 1, 8, 6), dtype=np.float32)
    return Z, y, images


def test_manifold_png_size_and_no_leftovers(toy, tmp_path):
    Z, y, _ = toy
    out = viz.plot_embedding_manifold(Z, y, tmp_path / "m.png", title="toy")
    assert out == tmp_path / "m.png"
    assert png_size(out) == (640, 560)
    assert imread(out).shape[:2] == (560, 640)
    out2 = viz.plot_embedding_manifold(Z[:, :1], y, str(tmp_path / "m1.png"), figsize=(3, 2), dpi=50)
    assert png_size(out2) == (150, 100)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.png", "m1.png"]  # temp files renamed away


def test_manifold_draws_class_colours(toy, tmp_path):
    import matplotlib

    Z, y, _ = toy
    img = imread(viz.plot_embedding_manifold(Z, y, tmp_path / "m.png"))
    pixels = {rgb_at(img, i, j) for i in range(0, img.shape[0], 2) for j in range(0, img.shape[1], 2)}
    # markers are drawn with alpha 0.75 over white
    tab10 = [
        tuple(0.75 * c * 255 + 0.25 * 255 for c in matplotlib.colormaps["tab10"](i)[:3]) for i in range(4)
    ]

    def near(c):
        return any(sum(abs(a - b) for a, b in zip(c, p)) < 12 for p in pixels)

    assert all(near(c) for c in tab10)
    assert not near(tuple(0.75 * c * 255 + 0.25 * 255 for c in matplotlib.colormaps["tab10"](6)[:3]))


def test_gallery_size_and_border_colours(toy, tmp_path):
    _, _, images = toy
    labels = np.array([0, 0, 1, 1, 2, 2] + [3] * 34)
    q = np.array([0, 2, 4])
    nb = np.array([[1, 2, 3], [3, 0, 5], [5, 4, 1]])
    out = viz.plot_retrieval_gallery(images, labels, q, nb, tmp_path / "g.png", scale=4, border=3, gap=2)
    H, W = 8, 6
    ch, cw = H * 4 + 6, W * 4 + 6
    exp_h = 3 * ch + 4 * 2
    exp_w = 4 * cw + 5 * 2 + 4
    assert viz.gallery_layout(3, 3, H, W, 4, 3, 2) == (exp_h, exp_w, ch, cw)
    assert png_size(out) == (exp_w, exp_h)
    img = imread(out)
    assert img.shape[:2] == (exp_h, exp_w)
    expect = [["q", "g", "r", "r"], ["q", "g", "r", "r"], ["q", "g", "g", "r"]]
    colours = {"q": viz.QUERY_COLOR, "g": viz.GREEN, "r": viz.RED}
    for row in range(3):
        top = 2 + row * (ch + 2)
        for col in range(4):
            left = 2 + col * (cw + 2) + (4 if col else 0)
            want = colours[expect[row][col]]
            for yy, xx in [
                (top, left),
                (top + 1, left + cw // 2),
                (top + ch - 1, left + cw - 1),
                (top + ch // 2, left + 1),
            ]:
                assert rgb_at(img, yy, xx) == want, (row, col, yy, xx)
            # the image itself sits inside the frame
            pix = rgb_at(img, top + 3, left + 3)
            idx = q[row] if col == 0 else nb[row, col - 1]
            g = int(round(images[idx, 0, 0, 0] * 255))
            assert pix == (g, g, g)
    # background between cells is white
    assert rgb_at(img, 0, 0) == (255, 255, 255)


def test_gallery_accepts_nhw_and_rescales(toy, tmp_path):
    _, y, images = toy
    imgs = images[:, 0] * 10 - 3  # outside [0, 1]: min-max scaled per image
    out = viz.plot_retrieval_gallery(imgs, y, [0], [[1, 2]], tmp_path / "g.png")
    img = imread(out)
    # default scale for 8x6 images: ceil(64 / 8) = 8; default border: max(2, round(0.06*8*8)) = 4
    h, w, ch, cw = viz.gallery_layout(1, 2, 8, 6, 8, 4, 4)
    assert png_size(out) == (w, h) and img.shape[:2] == (h, w)
    assert rgb_at(img, 4, 4) == viz.QUERY_COLOR
    assert rgb_at(img, 4, 4 + cw + 4 + 8) == viz.GREEN  # label 0 == label 0


def test_gallery_rgb_images(tmp_path):
    rng = np.random.default_rng(1)
    images = rng.random((5, 3, 4, 4), dtype=np.float32)
    out = viz.plot_retrieval_gallery(
        images, np.array([0, 1, 0, 1, 0]), [0], [[1]], tmp_path / "c.png", scale=1, border=1, gap=0
    )
    img = imread(out)
    assert img.shape[:2] == (6, 12)
    assert rgb_at(img, 1, 1) == tuple(int(round(v * 255)) for v in images[0, :, 0, 0])
    assert rgb_at(img, 0, 6) == viz.RED


def test_overwrite_is_atomic_replace(toy, tmp_path):
    _, y, images = toy
    p = tmp_path / "g.png"
    p.write_bytes(b"old")
    viz.plot_retrieval_gallery(images, y, [0], [[1]], p)
    assert p.read_bytes()[:8] == PNG_SIGNATURE
    assert [x.name for x in tmp_path.iterdir()] == ["g.png"]


def test_failed_write_leaves_no_temp_file(toy, tmp_path, monkeypatch):
    import matplotlib.image

    _, y, images = toy

    def broken(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(matplotlib.image, "imsave", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        viz.plot_retrieval_gallery(images, y, [0], [[1]], tmp_path / "g.png")
    assert list(tmp_path.iterdir()) == []


def test_errors(toy, tmp_path):
    Z, y, images = toy
    with pytest.raises(ValueError, match=".png"):
        viz.plot_embedding_manifold(Z, y, tmp_path / "m.jpg")
    with pytest.raises(FileNotFoundError, match="directory"):
        viz.plot_embedding_manifold(Z, y, tmp_path / "nope" / "m.png")
    with pytest.raises(ValueError, match="y must have length"):
        viz.plot_embedding_manifold(Z, y[:-1], tmp_path / "m.png")
    with pytest.raises(ValueError, match="at least 2 rows"):
        viz.plot_embedding_manifold(Z[:1], y[:1], tmp_path / "m.png")
    with pytest.raises(ValueError, match="Z contains NaN"):
        viz.plot_embedding_manifold(np.full_like(Z, np.nan), y, tmp_path / "m.png")
    with pytest.raises(ValueError, match="neighbor_idx must index"):
        viz.plot_retrieval_gallery(images, y, [0], [[40]], tmp_path / "g.png")
    with pytest.raises(ValueError, match="query_idx must index"):
        viz.plot_retrieval_gallery(images, y, [-1], [[1]], tmp_path / "g.png")
    with pytest.raises(ValueError, match="neighbor_idx must have shape"):
        viz.plot_retrieval_gallery(images, y, [0, 1], [[1]], tmp_path / "g.png")
    with pytest.raises(TypeError, match="neighbor_idx"):
        viz.plot_retrieval_gallery(images, y, [0], [[1.0]], tmp_path / "g.png")
    with pytest.raises(ValueError, match="channels"):
        viz.plot_retrieval_gallery(np.zeros((40, 2, 4, 4)), y, [0], [[1]], tmp_path / "g.png")
    assert list(tmp_path.iterdir()) == []


def test_missing_matplotlib_names_the_extra(toy, tmp_path, monkeypatch):
    Z, y, images = toy
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r'pip install "mantissa-embed\[viz\]"'):
        viz.plot_embedding_manifold(Z, y, tmp_path / "m.png")
    with pytest.raises(ImportError, match=r'pip install "mantissa-embed\[viz\]"'):
        viz.plot_retrieval_gallery(images, y, [0], [[1]], tmp_path / "g.png")
