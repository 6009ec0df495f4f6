"""The training Winograd F(2x2, 3x3) kernels of the AVX2 path (3x3, stride 1, pad 1, at least 8
input and 8 output channels: forward, input gradient, weight gradient) against the numpy twin on
every SGEMM kernel of this CPU (the shapes take Winograd on avx2, the direct or im2col kernels on
the others): hypothesis over odd planes (rows and pairs lane layouts, one tile, many tile rows),
batch 1, channel counts that are not multiples of the register blocks; accumulation into dw; and
images with a NaN, Inf or huge value, which take the direct path and so keep its non-finite
pattern exactly. With the AVX-512 kernel the same kernels train planes of at least 196 pixels
with at least 32 input and output channels, the forward when the channels are too many for the
direct kernel (9 * C > 288)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mantissa_embed import _reference as ref, engine

case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 4),
        "C": st.integers(8, 19),
        "F": st.integers(8, 21),
        "H": st.integers(1, 23),
        "W": st.integers(1, 37),
        "bias": st.booleans(),
        "act": st.sampled_from([None, "relu", "leaky_relu"]),
        "seed": st.integers(0, 2**31 - 1),
    }
)


def _close(a, b, rtol=3e-5):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * (1 + float(np.abs(b).max(initial=0))))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c=case)
def test_winograd_shapes_match_twin(kernel, c):
    rng = np.random.default_rng(c["seed"])
    x = rng.standard_normal((c["N"], c["C"], c["H"], c["W"])).astype(np.float32)
    w = (rng.standard_normal((c["F"], c["C"], 3, 3)) / np.sqrt(9 * c["C"])).astype(np.float32)
    b = rng.standard_normal(c["F"]).astype(np.float32) if c["bias"] else None
    y = engine.conv2d_forward(x, w, b, 1, 1, act=c["act"])
    _close(y, ref.conv2d_forward(x, w, b, 1, 1, act=c["act"]))
    dy = rng.standard_normal(y.shape).astype(np.float32)
    for a, r in zip(
        engine.conv2d_backward(x, w, dy, 1, 1, need_db=c["bias"]),
        ref.conv2d_backward(x, w, dy, 1, 1, need_db=c["bias"]),
    ):
        if r is None:
            assert a is None
        else:
            _close(a, r)


wide = st.fixed_dictionaries(
    {
        "N": st.integers(1, 3),
        "C": st.integers(33, 48),
        "F": st.integers(32, 40),
        "H": st.integers(14, 18),
        "W": st.integers(11, 21),
        "bias": st.booleans(),
        "act": st.sampled_from([None, "relu"]),
        "bad": st.sampled_from([None, np.nan, np.inf, 3e36]),
        "seed": st.integers(0, 2**31 - 1),
    }
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c=wide)
def test_wide_channels_on_large_planes_match_twin(kernel, c):
    """Forward, dx and dw on planes of 154-378 pixels with 33-48 input and 32-40 output
    channels, one image holding a NaN, Inf or huge value (that image takes the direct path):
    non-finite exactly where the twin's are, the finite entries close."""
    rng = np.random.default_rng(c["seed"])
    x = rng.standard_normal((c["N"], c["C"], c["H"], c["W"])).astype(np.float32)
    if c["bad"] is not None:
        x[-1, c["C"] // 2, c["H"] // 3, c["W"] - 1] = c["bad"]
    w = (rng.standard_normal((c["F"], c["C"], 3, 3)) / np.sqrt(9 * c["C"])).astype(np.float32)
    b = rng.standard_normal(c["F"]).astype(np.float32) if c["bias"] else None
    with np.errstate(all="ignore"):
        want = [ref.conv2d_forward(x, w, b, 1, 1, act=c["act"])]
        dy = rng.standard_normal(want[0].shape).astype(np.float32)
        want += list(ref.conv2d_backward(x, w, dy, 1, 1, need_db=c["bias"]))
    got = [engine.conv2d_forward(x, w, b, 1, 1, act=c["act"])] + list(
        engine.conv2d_backward(x, w, dy, 1, 1, need_db=c["bias"])
    )
    for name, a, r in zip(("y", "dx", "dw", "db"), got, want):
        if r is None:
            assert a is None
            continue
        assert np.array_equal(np.isfinite(a), np.isfinite(r)), name
        fin = np.isfinite(r)
        np.testing.assert_allclose(
            a[fin], r[fin], rtol=1e-4, atol=1e-4 * (1 + float(np.abs(r[fin]).max(initial=0))), err_msg=name
        )


def test_weight_gradient_accumulates(kernel):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 16, 14, 14)).astype(np.float32)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    dy = rng.standard_normal((5, 32, 14, 14)).astype(np.float32)
    dw0 = rng.standard_normal(w.shape).astype(np.float32)
    dw, db = dw0.copy(), np.ones(32, np.float32)
    engine.conv2d_backward(x, w, dy, 1, 1, dw=dw, db=db, need_dx=False, accumulate=True)
    _, rdw, rdb = ref.conv2d_backward(x, w, dy, 1, 1)
    _close(dw, dw0 + rdw)
    _close(db, 1 + rdb)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 3e36])
@pytest.mark.parametrize("where", [(0, 0, 0, 0), (1, 3, 13, 13), (1, 9, 0, 7), (2, 2, 6, 13)])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_out_of_range_values_keep_the_direct_pattern(kernel, bad, where):
    """An image with a non-finite (or huge) value takes the direct kernels; the others of its
    batch stay on Winograd: each output and gradient entry is non-finite exactly where the
    twin's is, and the finite ones agree."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 10, 14, 14)).astype(np.float32)
    w = rng.standard_normal((12, 10, 3, 3)).astype(np.float32)
    xb = x.copy()
    xb[where] = bad
    y, ry = engine.conv2d_forward(xb, w, None, 1, 1), ref.conv2d_forward(xb, w, None, 1, 1)
    dy = rng.standard_normal(ry.shape).astype(np.float32)
    dyb = dy.copy()
    dyb[where[0], where[1] % 12, where[2], where[3]] = bad
    got = [y] + list(engine.conv2d_backward(xb, w, dyb, 1, 1))
    want = [ry] + list(ref.conv2d_backward(xb, w, dyb, 1, 1))
    for name, a, r in zip(("y", "dx", "dw", "db"), got, want):
        assert np.array_equal(np.isfinite(a), np.isfinite(r)), name
        fin = np.isfinite(r)
        scale = float(np.abs(r[fin]).max(initial=0))
        np.testing.assert_allclose(a[fin], r[fin], rtol=1e-4, atol=1e-4 * (1 + scale), err_msg=name)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, 3e36])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_pooled_inference_out_of_range_keeps_the_direct_pattern(kernel, bad):
    """conv2d_pool2_forward's AVX2 Winograd path (pooling on the tiles) sends an image with an
    Inf or huge value to im2col + SGEMM: non-finite exactly where conv-then-pool's are."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 8, 13, 14)).astype(np.float32)
    x[2, 5, 12, 0] = bad
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    y = engine.conv2d_pool2_forward(x, w, b, 1, 1, act="relu")
    r, _ = ref.maxpool2d_forward(ref.conv2d_forward(x, w, b, 1, 1, act="relu"), 2, 2)
    assert np.array_equal(np.isfinite(y), np.isfinite(r))
    fin = np.isfinite(r)
    _close(y[fin], r[fin])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the twin's own float32 overflow
def test_large_operands_do_not_overflow_in_the_transforms(kernel):
    """Values far below float32's maximum whose products do not overflow the direct sums must
    not overflow in Winograd's transforms (its growth is up to 16x): such images take the direct
    path. Found by a review: x = dy = 5e18 gave an all-Inf dw; one 1e30 pixel and one 1e30
    gradient spread NaN over all 9 taps; a 1e9 weight spread an overflow to a second tile."""
    x = np.full((1, 8, 2, 2), 5e18, np.float32)
    w = np.ones((8, 8, 3, 3), np.float32)
    _, dw, _ = engine.conv2d_backward(x, w, x.copy(), 1, 1)
    _, rdw, _ = ref.conv2d_backward(x, w, x.copy(), 1, 1)
    assert np.isfinite(dw).all()
    _close(dw, rdw)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 8, 2, 2)).astype(np.float32)
    dy = rng.standard_normal((1, 8, 2, 2)).astype(np.float32)
    x[0, 0, 0, 0], dy[0, 0, 1, 1] = 1e30, 1e30
    _, dw, _ = engine.conv2d_backward(x, w, dy, 1, 1)
    _, rdw, _ = ref.conv2d_backward(x, w, dy, 1, 1)
    assert np.array_equal(np.isfinite(dw), np.isfinite(rdw))
    x = np.full((1, 8, 4, 4), 0.5, np.float32)
    x[0, 0, 1, 1] = 1e30
    w = np.full((8, 8, 3, 3), 0.1, np.float32)
    w[0, 0, 1, 1] = 1e9
    y, ry = engine.conv2d_forward(x, w, None, 1, 1), ref.conv2d_forward(x, w, None, 1, 1)
    assert np.array_equal(np.isfinite(y), np.isfinite(ry))
    dx, _, _ = engine.conv2d_backward(np.full_like(x, 0.5), w, x, 1, 1)
    rdx, _, _ = ref.conv2d_backward(np.full_like(x, 0.5), w, x, 1, 1)
    assert np.array_equal(np.isfinite(dx), np.isfinite(rdx))
