"""What a newcomer meets: a train transform of the wrong size is refused at build, images
loose in the root are reported, the first bad file points to skip_bad, a subset's repr counts
the classes it holds, and the folder demo's unseen classes are the last in natural order."""

import numpy as np
import pytest

from mantissa_embed._demo_folder import split_folder
from mantissa_embed.datasets import ImageFileError, ImageFolder, image_transforms as T


def test_a_train_transform_of_another_size_is_refused_at_build(image_tree):
    with pytest.raises(ValueError, match=r"train_transform .* into \d+x8, not the 8x8 of size=8"):
        ImageFolder(image_tree, size=8, train_transform=T.Resize(8))
    ok = ImageFolder(image_tree, size=8, train_transform=T.eval_transform(8))
    assert ok.image_shape == (3, 8, 8)


def test_images_loose_in_the_root_are_reported(image_tree, write_image):
    write_image(image_tree / "loose.png")
    with pytest.warns(RuntimeWarning, match=r"1 image file\(s\) directly in .* are ignored"):
        ds = ImageFolder(image_tree, size=8)
    assert len(ds) == 12


def test_the_first_bad_file_points_to_skip_bad(image_tree):
    (image_tree / "a" / "zero.png").write_bytes(b"")
    with pytest.raises(ImageFileError, match=r"zero\.png.*empty file.*skip_bad=True"):
        ImageFolder(image_tree, size=8)


def test_a_subset_counts_the_classes_it_holds(image_tree):
    ds = ImageFolder(image_tree, size=8)
    assert "3 classes," in repr(ds)
    assert "1 classes (of 3)" in repr(ds.subset(ds.labels == 0))


def test_the_demo_holds_out_the_last_classes_in_natural_order(tmp_path, write_image):
    for k in range(1, 13):
        for i in range(5):
            write_image(tmp_path / f"s{k}" / f"{i}.png", size=(8, 8), seed=10 * k + i)
    ds = ImageFolder(tmp_path, size=8)
    fit, held, unseen = split_folder(ds, seed=0, held_out=0.2)
    names = lambda part: sorted({part.classes[c] for c in np.unique(part.labels)})  # noqa: E731
    assert names(unseen) == ["s10", "s11", "s12"]
    assert names(fit) == names(held) == sorted(f"s{k}" for k in range(1, 10))
