"""check_array on finite float64 values beyond float32's range: a ValueError that names the
range, not the NaN / Inf message (the values the caller passed are finite); real NaN / Inf keep
that message."""

import warnings

import numpy as np
import pytest

from mantissa_embed._validation import check_array
from mantissa_embed.index import Index


@pytest.mark.parametrize("big", [1e300, -1e39, 3.5e38])
def test_finite_values_beyond_float32_name_the_range(big):
    x = np.zeros((3, 4))
    x[1, 2] = big
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's overflow in the cast
        with pytest.raises(
            ValueError, match=r"^X has finite values beyond the float32 range \(\|x\| <= 3\.402823e\+38\)$"
        ):
            check_array(x, "X")
        with pytest.raises(ValueError, match="^embeddings has finite values beyond the float32 range"):
            Index(4).add(x)
        with pytest.raises(ValueError, match="^embeddings has finite values beyond the float32 range"):
            Index(4).add(x.tolist())


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_keep_their_message(bad):
    x = np.zeros((3, 4))
    x[0, 0] = bad
    x[2, 2] = 1e300  # beside a real NaN / Inf, the NaN message wins
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(ValueError, match="^X contains NaN or Inf$"):
            check_array(x, "X")


def test_the_largest_float32_passes():
    x = np.array([[3.4028234663852886e38, -3.4028234663852886e38]])
    assert np.array_equal(check_array(x, "X"), x.astype(np.float32))
