"""Small output planes (P = HO*WO <= 64: a ResNet's 7x7 and 4x4 stages) take the forward and the
backward as whole-batch GEMMs (im2row): y, dx, dw and db against the numpy twin on every SGEMM kernel, with
strides, paddings and kernel sizes of real backbones, accumulation, and bitwise thread-count
independence."""

import numpy as np
import pytest

from mantissa_embed import _reference as ref, engine


def _close(a, r):
    scale = float(np.abs(r).max(initial=0))
    np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4 * (1 + scale))


@pytest.mark.parametrize(
    "N, C, H, W, F, k, stride, pad",
    [
        (5, 16, 4, 4, 24, 3, 1, 1),  # layer4-like 3x3 at 4x4
        (3, 12, 7, 7, 8, 3, 2, 1),  # a stride-2 3x3 into 4x4
        (4, 32, 7, 7, 16, 1, 2, 0),  # a downsample 1x1 / 2
        (2, 20, 8, 8, 12, 1, 1, 0),  # a bottleneck 1x1 at 8x8
        (3, 8, 5, 6, 9, 3, 1, 0),  # no padding, non-square
        (1, 64, 2, 2, 8, 3, 1, 1),  # one image, 2x2
    ],
)
def test_small_plane_backward_matches_the_twin(kernel, N, C, H, W, F, k, stride, pad):
    rng = np.random.default_rng(N * 100 + C)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = (rng.standard_normal((F, C, k, k)) / np.sqrt(C * k * k)).astype(np.float32)
    y = ref.conv2d_forward(x, w, None, stride, pad)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    for a, r in zip(
        engine.conv2d_backward(x, w, dy, stride, pad), ref.conv2d_backward(x, w, dy, stride, pad)
    ):
        _close(a, r)
    dw0, db0 = rng.standard_normal(w.shape).astype(np.float32), rng.standard_normal(F).astype(np.float32)
    dw, db = dw0.copy(), db0.copy()
    engine.conv2d_backward(x, w, dy, stride, pad, dw=dw, db=db, need_dx=False, accumulate=True)
    _, rdw, rdb = ref.conv2d_backward(x, w, dy, stride, pad)
    _close(dw, dw0 + rdw)
    _close(db, db0 + rdb)


@pytest.mark.parametrize("act", ["identity", "relu", "leaky_relu"])
@pytest.mark.parametrize(
    "N, C, H, W, F, k, stride, pad",
    [
        (5, 16, 4, 4, 24, 3, 1, 1),
        (3, 12, 7, 7, 8, 3, 2, 1),
        (4, 32, 7, 7, 16, 1, 2, 0),
        (3, 8, 5, 6, 9, 3, 1, 0),
    ],
)
def test_small_plane_forward_matches_the_twin(kernel, act, N, C, H, W, F, k, stride, pad):
    rng = np.random.default_rng(N * 10 + F)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = (rng.standard_normal((F, C, k, k)) / np.sqrt(C * k * k)).astype(np.float32)
    b = rng.standard_normal(F).astype(np.float32)
    _close(
        engine.conv2d_forward(x, w, b, stride, pad, act=act),
        ref.conv2d_forward(x, w, b, stride, pad, act=act),
    )
    _close(engine.conv2d_forward(x, w, None, stride, pad), ref.conv2d_forward(x, w, None, stride, pad))


def test_small_plane_backward_is_bitwise_the_same_for_any_thread_count():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((9, 48, 4, 4)).astype(np.float32)
    w = rng.standard_normal((40, 48, 3, 3)).astype(np.float32)
    dy = rng.standard_normal((9, 40, 4, 4)).astype(np.float32)
    prev = engine.get_num_threads()
    try:
        outs = []
        for t in (1, 2, 3):
            engine.set_num_threads(t)
            outs.append(engine.conv2d_backward(x, w, dy, 1, 1))
    finally:
        engine.set_num_threads(prev)
    for o in outs[1:]:
        for a, b in zip(outs[0], o):
            np.testing.assert_array_equal(a, b)
