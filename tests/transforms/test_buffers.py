"""The call contract: X is never modified, the result is the transform's own float32 buffer,
reused by its next call (and never X itself)."""

import numpy as np
import pytest

from mantissa_embed import transforms as T

ALL = [
    T.RandomAffine(10, translate=(0.1, 0.1)),
    T.RandomCrop(6, padding=1),
    T.RandomHorizontalFlip(),
    T.Compose([T.RandomHorizontalFlip(), T.RandomAffine(5)]),
    T.Compose([]),
]


@pytest.mark.parametrize("t", ALL, ids=repr)
def test_input_untouched_and_buffer_reused(t):
    x = np.random.default_rng(0).standard_normal((8, 2, 6, 6)).astype(np.float32)
    x0 = x.copy()
    rng = np.random.default_rng(1)
    a = t(x, rng)
    np.testing.assert_array_equal(x, x0)
    assert a.dtype == np.float32 and a.flags.c_contiguous and not np.may_share_memory(a, x)
    b = t(x, rng)
    assert np.shares_memory(a, b)  # the same buffer, overwritten
    c = t(x[:5], rng)  # a smaller last batch reuses it too
    assert c.shape[0] == 5 and np.shares_memory(b, c)


def test_float64_and_non_contiguous_input():
    x = np.random.default_rng(2).standard_normal((4, 1, 7, 7))
    t = T.RandomAffine(10)
    want = t(x.astype(np.float32), np.random.default_rng(3)).copy()
    np.testing.assert_array_equal(t(x, np.random.default_rng(3)), want)
    xt = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    np.testing.assert_array_equal(t(xt, np.random.default_rng(3)), want)


def test_same_instance_twice_in_a_compose():
    flip = T.RandomHorizontalFlip(1.0)
    x = np.random.default_rng(4).standard_normal((3, 1, 4, 5)).astype(np.float32)
    np.testing.assert_array_equal(T.Compose([flip, flip])(x, np.random.default_rng(0)), x)
