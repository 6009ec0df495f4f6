"""Fixtures for the image-file dataset tests: image files written into ``tmp_path`` (synthetic,
seeded numpy + Pillow; or copies of ORL faces), and the ORL folder, skipped when absent.
No image file is part of the repository."""

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

REPO = Path(__file__).resolve().parents[2]
ORL_DIR = REPO.parent / "shared" / "data" / "orl_faces"


def _write_image(path, size=(20, 16), mode="RGB", seed=0, fmt=None):
    """A seeded random image of ``size`` (width, height) saved at ``path`` in ``mode`` (folders
    made); returns the path as str. Smooth (a blurred-looking gradient plus noise) so that
    resampling comparisons are not dominated by pixel noise."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack(
        [(xx * 255.0 / max(w - 1, 1)), (yy * 255.0 / max(h - 1, 1)), np.full((h, w), 128.0)], axis=-1
    )
    a = np.clip(base + rng.normal(0, 30, (h, w, 3)), 0, 255).astype(np.uint8)
    Image.fromarray(a, "RGB").convert(mode).save(path, fmt)
    return str(path)


@pytest.fixture
def write_image():
    """``write_image(path, size=(w, h), mode="RGB", seed=0, fmt=None) -> str``."""
    return _write_image


@pytest.fixture
def image_tree(tmp_path):
    """``root/<class>/<i>.png``: 3 classes (b, a, c written in that order) of 4 RGB images of
    different sizes each. Returns the root."""
    root = tmp_path / "tree"
    for c, name in enumerate(("b", "a", "c")):
        for i in range(4):
            _write_image(root / name / f"{i}.png", size=(18 + 3 * i, 14 + 2 * c), seed=10 * c + i)
    return root


@pytest.fixture(scope="session")
def orl_dir():
    """The ORL faces folder (s1 .. s40 of PGM files), or a skip saying where it was looked for."""
    if not (ORL_DIR / "s1").is_dir():
        pytest.skip(
            f"ORL faces not found: checked {ORL_DIR} (expected s1/ ... s40/ there, i.e. the repository "
            "cloned next to shared/); the synthetic-image tests cover the same code"
        )
    return ORL_DIR
