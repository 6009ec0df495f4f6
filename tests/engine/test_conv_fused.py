"""conv2d_forward with the fused ReLU (``act="relu"``) and the direct stride-1 path (shallow
C*KH*KW <= 288, AVX-512) against the numpy twin, on both SGEMM kernels (the direct path is used
only with the avx512 kernel, the im2col path otherwise)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from _helpers import close_scaled as _close
from mantissa_embed import _reference as ref, engine

case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 4),
        "C": st.integers(1, 9),
        "F": st.sampled_from([1, 3, 8, 9, 16, 17, 33]),
        "H": st.integers(1, 20),
        "W": st.integers(1, 37),
        "KH": st.integers(1, 4),
        "KW": st.integers(1, 4),
        "stride": st.sampled_from([1, 1, 2]),
        "pad": st.integers(0, 2),
        "bias": st.booleans(),
        "act": st.sampled_from([None, "identity", "relu"]),
        "seed": st.integers(0, 2**31 - 1),
    }
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c=case)
def test_conv2d_forward_act_matches_twin(kernel, c):
    assume(c["H"] + 2 * c["pad"] >= c["KH"] and c["W"] + 2 * c["pad"] >= c["KW"])
    rng = np.random.default_rng(c["seed"])
    x = rng.standard_normal((c["N"], c["C"], c["H"], c["W"])).astype(np.float32)
    w = rng.standard_normal((c["F"], c["C"], c["KH"], c["KW"])).astype(np.float32)
    b = rng.standard_normal(c["F"]).astype(np.float32) if c["bias"] else None
    y = engine.conv2d_forward(x, w, b, c["stride"], c["pad"], act=c["act"])
    y_ref = ref.conv2d_forward(x, w, b, c["stride"], c["pad"], act=c["act"])
    _close(y, y_ref)
    if c["act"] == "relu":
        assert (y >= 0).all()
        lin = ref.conv2d_forward(x, w, b, c["stride"], c["pad"])
        _close(y, np.maximum(lin, 0))


@pytest.mark.parametrize("shape", [(3, 1, 28, 28, 8), (2, 8, 14, 14, 16), (2, 32, 7, 9, 20)])
def test_small_cnn_layer_shapes(kernel, shape):
    """The layers of small_cnn_embedder (direct path on avx512; K = 288 is the direct limit)."""
    N, C, H, W, F = shape
    rng = np.random.default_rng(7)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((F, C, 3, 3)).astype(np.float32)
    b = rng.standard_normal(F).astype(np.float32)
    for act in (None, "relu"):
        ws = np.empty(engine.conv2d_workspace_size(x.shape, w.shape, 1, 1), np.float32)
        out = np.full((N, F, H, W), np.nan, np.float32)
        engine.conv2d_forward(x, w, b, 1, 1, out=out, workspace=ws, act=act)
        _close(out, ref.conv2d_forward(x, w, b, 1, 1, act=act))


def test_relu_keeps_nan(kernel):
    x = np.ones((1, 1, 5, 5), np.float32)
    x[0, 0, 2, 2] = np.nan
    w = np.ones((2, 1, 3, 3), np.float32)
    w[1] *= -1.0
    y = engine.conv2d_forward(x, w, None, 1, 1, act="relu")
    y_ref = ref.conv2d_forward(x, w, None, 1, 1, act="relu")
    np.testing.assert_array_equal(np.isnan(y), np.isnan(y_ref))
    assert np.isnan(y).sum() == 18
    np.testing.assert_array_equal(np.nan_to_num(y), np.nan_to_num(y_ref))


@pytest.mark.parametrize("be", [engine, ref], ids=["engine", "numpy"])
def test_bad_act(be):
    x = np.ones((1, 1, 4, 4), np.float32)
    w = np.ones((1, 1, 3, 3), np.float32)
    with pytest.raises(ValueError, match="act"):
        be.conv2d_forward(x, w, None, 1, 1, act="tanh")
    with pytest.raises(TypeError, match="act"):
        be.conv2d_forward(x, w, None, 1, 1, act=1)


pool_case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 3),
        "C": st.integers(1, 8),
        "F": st.sampled_from([1, 5, 8, 16, 19]),
        "H": st.integers(2, 19),
        "W": st.integers(2, 37),
        "K": st.integers(1, 3),
        "stride": st.sampled_from([1, 1, 2]),
        "pad": st.integers(0, 1),
        "bias": st.booleans(),
        "act": st.sampled_from([None, "relu"]),
        "seed": st.integers(0, 2**31 - 1),
    }
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c=pool_case)
def test_conv2d_pool2_forward_matches_twin(kernel, c):
    """Fused conv + bias + ReLU + 2x2 max pooling (inference) against conv then pool (twins)."""
    HO = (c["H"] + 2 * c["pad"] - c["K"]) // c["stride"] + 1
    WO = (c["W"] + 2 * c["pad"] - c["K"]) // c["stride"] + 1
    assume(HO >= 2 and WO >= 2)
    rng = np.random.default_rng(c["seed"])
    x = rng.standard_normal((c["N"], c["C"], c["H"], c["W"])).astype(np.float32)
    w = rng.standard_normal((c["F"], c["C"], c["K"], c["K"])).astype(np.float32)
    b = rng.standard_normal(c["F"]).astype(np.float32) if c["bias"] else None
    y = engine.conv2d_pool2_forward(x, w, b, c["stride"], c["pad"], act=c["act"])
    conv = ref.conv2d_forward(x, w, b, c["stride"], c["pad"], act=c["act"])
    y_ref, _ = ref.maxpool2d_forward(conv, 2, 2)
    _close(y, y_ref)
    _close(ref.conv2d_pool2_forward(x, w, b, c["stride"], c["pad"], act=c["act"]), y_ref)


def test_conv2d_pool2_nan_propagates(kernel):
    x = np.zeros((1, 1, 6, 6), np.float32)
    x[0, 0, 3, 4] = np.nan
    w = np.ones((1, 1, 1, 1), np.float32)
    y = engine.conv2d_pool2_forward(x, w, None, 1, 0, act="relu")
    assert np.isnan(y[0, 0, 1, 2]) and np.isnan(y).sum() == 1


@pytest.mark.parametrize("be", [engine, ref], ids=["engine", "numpy"])
def test_conv2d_pool2_too_small(be):
    with pytest.raises(ValueError, match="2x2"):
        be.conv2d_pool2_forward(
            np.ones((1, 1, 3, 1), np.float32), np.ones((1, 1, 1, 1), np.float32), None, 1, 0
        )


wino_case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 3),
        "C": st.sampled_from([1, 1, 3, 4, 8, 12]),
        "F": st.sampled_from([1, 7, 9, 16, 17, 33]),
        "H": st.integers(2, 30),
        "W": st.integers(2, 34),
        "pad": st.integers(0, 2),
        "bias": st.booleans(),
        "act": st.sampled_from([None, "relu"]),
        "seed": st.integers(0, 2**31 - 1),
    }
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c=wino_case)
def test_conv2d_pool2_winograd_shapes_match_twin(kernel, c):
    """3x3 stride 1 with C == 1 or C >= 3 and F > 8 (the Winograd F(2x2,3x3) paths on AVX-512VL;
    the other cases take the direct kernel): odd and even sizes, rows wider than 32 (strided
    deinterleave), filter counts across the 16-filter blocks."""
    assume(c["H"] + 2 * c["pad"] >= 4 and c["W"] + 2 * c["pad"] >= 4)
    rng = np.random.default_rng(c["seed"])
    x = rng.standard_normal((c["N"], c["C"], c["H"], c["W"])).astype(np.float32)
    w = rng.standard_normal((c["F"], c["C"], 3, 3)).astype(np.float32)
    b = rng.standard_normal(c["F"]).astype(np.float32) if c["bias"] else None
    y = engine.conv2d_pool2_forward(x, w, b, 1, c["pad"], act=c["act"])
    y_ref, _ = ref.maxpool2d_forward(ref.conv2d_forward(x, w, b, 1, c["pad"], act=c["act"]), 2, 2)
    _close(y, y_ref)


@pytest.mark.parametrize("C", [1, 8])
@pytest.mark.parametrize("pos", [(0, 0), (3, 3), (6, 9), (13, 13)])
def test_conv2d_pool2_winograd_nan_propagates(kernel, pos, C):
    """A NaN input makes NaN exactly the pooled outputs whose window sees it (as conv then pool)."""
    x = np.random.default_rng(0).standard_normal((2, C, 14, 14)).astype(np.float32)
    x[1, C // 2, pos[0], pos[1]] = np.nan
    w = np.random.default_rng(1).standard_normal((16, C, 3, 3)).astype(np.float32)
    y = engine.conv2d_pool2_forward(x, w, None, 1, 1, act="relu")
    y_ref, _ = ref.maxpool2d_forward(ref.conv2d_forward(x, w, None, 1, 1, act="relu"), 2, 2)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(y_ref))
    assert np.isnan(y).any() and not np.isnan(y[0]).any()
    _close(np.nan_to_num(y), np.nan_to_num(y_ref))


@pytest.mark.parametrize("shape", [(40, 8, 14, 14, 16, 1), (40, 1, 28, 28, 8, 1), (40, 4, 9, 40, 17, 2)])
def test_conv2d_pool2_winograd_several_images_per_group(kernel, shape):
    """Groups of several images reuse one deinterleaved plane, zeroed once per group: the padding
    must stay zero from image to image (register and strided-copy deinterleaves)."""
    N, C, H, W, F, pad = shape
    rng = np.random.default_rng(11)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((F, C, 3, 3)).astype(np.float32)
    b = rng.standard_normal(F).astype(np.float32)
    y = engine.conv2d_pool2_forward(x, w, b, 1, pad)
    y_ref, _ = ref.maxpool2d_forward(ref.conv2d_forward(x, w, b, 1, pad), 2, 2)
    _close(y, y_ref)


@pytest.mark.parametrize("shape", [(8, 14, 14, 16, 1), (3, 9, 40, 17, 2), (12, 7, 7, 33, 0), (4, 5, 4, 9, 1)])
@pytest.mark.parametrize("N", [8, 21, 150])
def test_conv2d_pool2_winograd_result_independent_of_batch(kernel, shape, N):
    """Whole blocks of 8 images run in the images layout (lanes = images), the last N mod 8
    images one by one in the tiles layout (lanes = tiles): the per-lane arithmetic is the same,
    so every image's output is bitwise the one it gets alone; 150 images make 18 blocks over
    16 scratch slots."""
    C, H, W, F, pad = shape
    rng = np.random.default_rng(N)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((F, C, 3, 3)).astype(np.float32)
    b = rng.standard_normal(F).astype(np.float32)
    y = engine.conv2d_pool2_forward(x, w, b, 1, pad, act="relu")
    alone = np.concatenate(
        [engine.conv2d_pool2_forward(x[i : i + 1], w, b, 1, pad, act="relu") for i in range(N)]
    )
    np.testing.assert_array_equal(y, alone)
    y_ref, _ = ref.maxpool2d_forward(ref.conv2d_forward(x, w, b, 1, pad, act="relu"), 2, 2)
    _close(y, y_ref)


@pytest.mark.parametrize(
    "shape",
    [(256, 8, 14, 14, 16), (19, 8, 14, 14, 16), (16, 3, 9, 11, 17), (21, 1, 28, 28, 8), (10, 2, 14, 14, 16)],
)
def test_conv2d_pool2_bitwise_across_thread_counts(shape):
    """Winograd images layout (one scratch slot per thread, fewer threads than slots and more),
    tiles layout and the direct kernel: the same bits for 1, 2 and 3 threads."""
    N, C, H, W, F = shape
    rng = np.random.default_rng(5)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((F, C, 3, 3)).astype(np.float32)
    b = rng.standard_normal(F).astype(np.float32)
    before = engine.get_num_threads()
    try:
        outs = []
        for n in (1, 2, 3):
            engine.set_num_threads(n)
            outs.append(engine.conv2d_pool2_forward(x, w, b, 1, 1, act="relu"))
    finally:
        engine.set_num_threads(before)
    for y in outs[1:]:
        np.testing.assert_array_equal(y, outs[0])


@pytest.mark.parametrize("C, F", [(1, 8), (3, 9), (8, 16)])
@pytest.mark.parametrize("n", [0, 7, 19])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, 3e36])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_conv2d_pool2_winograd_out_of_range_keeps_the_direct_pattern(kernel, C, F, n, bad):
    """An image with an Inf or a huge value, in a block of 8 images (images layout) or among the
    last N mod 8 (tiles layout): the AVX2 build leaves the call to paths that give the direct
    sums' pattern (conv then pool), as its training kernels do."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal((20, C, 10, 9)).astype(np.float32)
    x[n, C - 1, 4, 0] = bad
    w = rng.standard_normal((F, C, 3, 3)).astype(np.float32)
    b = rng.standard_normal(F).astype(np.float32)
    y = engine.conv2d_pool2_forward(x, w, b, 1, 1, act="relu")
    r, _ = ref.maxpool2d_forward(ref.conv2d_forward(x, w, b, 1, 1, act="relu"), 2, 2)
    assert np.array_equal(np.isfinite(y), np.isfinite(r))
    fin = np.isfinite(r)
    _close(y[fin], r[fin])
