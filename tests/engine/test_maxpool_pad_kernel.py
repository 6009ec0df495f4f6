"""The padded max-pooling kernel (taps outside the plane skipped, no padded copy) against the
numpy twin (which pools a -inf-padded copy and maps the offsets back): values and argmax equal,
with ties, -inf windows and NaN, on every SGEMM kernel (pooling follows it)."""

import numpy as np

from mantissa_embed import _reference as ref, engine


def test_padded_max_pool_equals_the_twin_on_ties_inf_and_nan(kernel):
    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(300):
        H, W = (int(v) for v in rng.integers(1, 9, 2))
        size = int(rng.integers(1, 5))
        pad, stride = int(rng.integers(0, size // 2 + 1)), int(rng.integers(1, 4))
        if H + 2 * pad < size or W + 2 * pad < size:
            continue
        x = rng.choice([-np.inf, np.nan, 0.0, 1.0, -1.0, 2.0], size=(2, 3, H, W)).astype(np.float32)
        y, a = engine.maxpool2d_forward(x, size, stride, pad=pad)
        ry, ra = ref.maxpool2d_forward(x, size, stride, pad=pad)
        assert np.array_equal(y, ry, equal_nan=True), (H, W, size, stride, pad)
        np.testing.assert_array_equal(a, ra)
        checked += 1
    assert checked > 100
