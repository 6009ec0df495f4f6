"""An identity transform returns its input exactly (the kernel samples pixel centres)."""

import numpy as np
import pytest

from mantissa_embed import transforms as T


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize(
    "t",
    [lambda b: T.RandomAffine(0, backend=b), lambda b: T.RandomAffine((0, 0), backend=b)],
    ids=["0", "(0,0)"],
)
def test_identity_affine_returns_input_exactly(t, backend):
    x = np.random.default_rng(0).standard_normal((4, 3, 9, 7)).astype(np.float32)
    np.testing.assert_array_equal(t(backend)(x, np.random.default_rng(1)), x)


def test_other_identities():
    x = np.random.default_rng(2).standard_normal((3, 1, 5, 5)).astype(np.float32)
    rng = np.random.default_rng(3)
    np.testing.assert_array_equal(T.RandomHorizontalFlip(0.0)(x, rng), x)
    np.testing.assert_array_equal(T.RandomCrop(5)(x, rng), x)
    np.testing.assert_array_equal(T.Compose([])(x, rng), x)
    np.testing.assert_array_equal(T.RandomAffine(0, translate=(0, 0), scale=(1, 1))(x, rng), x)
