"""conv2d_pool2_chain_forward (two conv + bias + act + 2x2 max pool stages in one call): bitwise
the two conv2d_pool2_forward calls it replaces, close to the numpy twin, the workspace size the
twin computes, and the same errors on both backends."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from _helpers import close_scaled as _close
from mantissa_embed import _reference as ref, engine


def _stages(rng, N, C, H, W, F1, F2, K1=3, K2=3, bias=True):
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w1 = rng.standard_normal((F1, C, K1, K1)).astype(np.float32)
    w2 = (rng.standard_normal((F2, F1, K2, K2)) / 3).astype(np.float32)
    b1 = rng.standard_normal(F1).astype(np.float32) if bias else None
    b2 = rng.standard_normal(F2).astype(np.float32) if bias else None
    return x, w1, b1, w2, b2


chain_case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 21),
        "C": st.sampled_from([1, 1, 2, 3, 4]),
        "F1": st.sampled_from([3, 4, 8, 9, 12]),
        "F2": st.sampled_from([5, 9, 16, 17]),
        "H": st.integers(4, 20),
        "W": st.integers(4, 34),
        "pad1": st.integers(0, 2),
        "pad2": st.integers(0, 1),
        "bias": st.booleans(),
        "act1": st.sampled_from([None, "relu"]),
        "act2": st.sampled_from([None, "relu"]),
        "seed": st.integers(0, 2**31 - 1),
    }
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c=chain_case)
def test_chain_is_the_two_calls(kernel, c):
    """3x3 stride 1 stages (the one-pass kernel where it applies, two calls elsewhere): odd and
    even sizes, partial blocks of 8 images, filters across the 16-filter blocks."""
    HO1, WO1 = c["H"] + 2 * c["pad1"] - 2, c["W"] + 2 * c["pad1"] - 2
    assume(HO1 >= 2 and WO1 >= 2 and HO1 // 2 + 2 * c["pad2"] >= 4 and WO1 // 2 + 2 * c["pad2"] >= 4)
    rng = np.random.default_rng(c["seed"])
    x, w1, b1, w2, b2 = _stages(rng, c["N"], c["C"], c["H"], c["W"], c["F1"], c["F2"], bias=c["bias"])
    p1, p2, a1, a2 = c["pad1"], c["pad2"], c["act1"], c["act2"]
    y = engine.conv2d_pool2_chain_forward(x, w1, b1, 1, p1, w2, b2, 1, p2, act1=a1, act2=a2)
    z = engine.conv2d_pool2_forward(x, w1, b1, 1, p1, act=a1)
    np.testing.assert_array_equal(y, engine.conv2d_pool2_forward(z, w2, b2, 1, p2, act=a2))
    _close(y, ref.conv2d_pool2_chain_forward(x, w1, b1, 1, p1, w2, b2, 1, p2, act1=a1, act2=a2))


@pytest.mark.parametrize("N", [1, 8, 37, 256])
def test_small_cnn_trunk(kernel, N):
    """small_cnn_embedder's two stages (1 -> 8 -> 16 on 28x28), the case the chain is for, with
    the caller's workspace and output buffers."""
    x, w1, b1, w2, b2 = _stages(np.random.default_rng(N), N, 1, 28, 28, 8, 16)
    ws = np.empty(
        engine.conv2d_pool2_chain_workspace_size(x.shape, w1.shape, 1, 1, w2.shape, 1, 1), np.float32
    )
    out = np.full((N, 16, 7, 7), np.nan, np.float32)
    y = engine.conv2d_pool2_chain_forward(
        x, w1, b1, 1, 1, w2, b2, 1, 1, act1="relu", act2="relu", out=out, workspace=ws
    )
    assert y is out
    z = engine.conv2d_pool2_forward(x, w1, b1, 1, 1, act="relu")
    np.testing.assert_array_equal(y, engine.conv2d_pool2_forward(z, w2, b2, 1, 1, act="relu"))
    zr = ref.conv2d_pool2_forward(x, w1, b1, 1, 1, act="relu")
    _close(y, ref.conv2d_pool2_forward(zr, w2, b2, 1, 1, act="relu"))


@pytest.mark.parametrize(
    "shapes",
    [
        ((2, 3, 12, 12), (4, 3, 2, 2), 2, 0, (5, 4, 3, 3), 1, 1),
        ((3, 1, 10, 9), (8, 1, 3, 3), 1, 1, (16, 8, 3, 3), 2, 1),
        ((4, 2, 16, 16), (6, 2, 5, 5), 1, 2, (3, 6, 3, 3), 1, 0),
    ],
)
def test_other_stages_take_two_calls(shapes):
    """Kernel sizes or strides the one-pass kernel does not take: no workspace, two calls."""
    xs, w1s, s1, p1, w2s, s2, p2 = shapes
    rng = np.random.default_rng(3)
    x = rng.standard_normal(xs).astype(np.float32)
    w1, w2 = rng.standard_normal(w1s).astype(np.float32), rng.standard_normal(w2s).astype(np.float32)
    assert engine.conv2d_pool2_chain_workspace_size(xs, w1s, s1, p1, w2s, s2, p2) == 0
    y = engine.conv2d_pool2_chain_forward(x, w1, None, s1, p1, w2, None, s2, p2, act1="relu")
    z = engine.conv2d_pool2_forward(x, w1, None, s1, p1, act="relu")
    np.testing.assert_array_equal(y, engine.conv2d_pool2_forward(z, w2, None, s2, p2))
    _close(y, ref.conv2d_pool2_chain_forward(x, w1, None, s1, p1, w2, None, s2, p2, act1="relu"))


@settings(max_examples=60, deadline=None)
@given(
    N=st.integers(1, 300),
    C=st.integers(1, 6),
    H=st.integers(2, 40),
    W=st.integers(2, 40),
    F1=st.integers(1, 20),
    F2=st.integers(1, 40),
    p1=st.integers(0, 2),
    p2=st.integers(0, 2),
    k1=st.sampled_from([3, 3, 2]),
    s2=st.sampled_from([1, 1, 2]),
)
def test_workspace_size_agrees_with_twin(N, C, H, W, F1, F2, p1, p2, k1, s2):
    HO1, WO1 = H + 2 * p1 - k1 + 1, W + 2 * p1 - k1 + 1
    assume(HO1 >= 2 and WO1 >= 2)
    H2, W2 = HO1 // 2, WO1 // 2
    assume(
        H2 + 2 * p2 >= 3
        and W2 + 2 * p2 >= 3
        and (H2 + 2 * p2 - 3) // s2 + 1 >= 2
        and (W2 + 2 * p2 - 3) // s2 + 1 >= 2
    )
    args = ((N, C, H, W), (F1, C, k1, k1), 1, p1, (F2, F1, 3, 3), s2, p2)
    assert engine.conv2d_pool2_chain_workspace_size(*args) == ref.conv2d_pool2_chain_workspace_size(*args)


@pytest.mark.parametrize("pos", [(0, 0), (13, 5), (27, 27)])
def test_nan_propagates(kernel, pos):
    x, w1, b1, w2, b2 = _stages(np.random.default_rng(2), 9, 1, 28, 28, 8, 16)
    x[4, 0, pos[0], pos[1]] = np.nan
    y = engine.conv2d_pool2_chain_forward(x, w1, b1, 1, 1, w2, b2, 1, 1, act1="relu", act2="relu")
    z = ref.conv2d_pool2_forward(x, w1, b1, 1, 1, act="relu")
    y_ref = ref.conv2d_pool2_forward(z, w2, b2, 1, 1, act="relu")
    np.testing.assert_array_equal(np.isnan(y), np.isnan(y_ref))
    assert np.isnan(y[4]).any() and not np.isnan(np.delete(y, 4, axis=0)).any()


@pytest.mark.parametrize("be", [engine, ref], ids=["engine", "numpy"])
def test_bad_arguments(be):
    x, w1, b1, w2, b2 = _stages(np.random.default_rng(0), 2, 1, 12, 12, 8, 16)
    with pytest.raises(ValueError, match="w2 must have 8 input channels"):
        be.conv2d_pool2_chain_forward(x, w1, b1, 1, 1, w2[:, :4].copy(), b2, 1, 1)
    with pytest.raises(ValueError, match="b2 must have shape"):
        be.conv2d_pool2_chain_forward(x, w1, b1, 1, 1, w2, b2[:3], 1, 1)
    with pytest.raises(ValueError, match="b1 must have shape"):
        be.conv2d_pool2_chain_forward(x, w1, b2, 1, 1, w2, b2, 1, 1)
    with pytest.raises(ValueError, match="act2 must be"):
        be.conv2d_pool2_chain_forward(x, w1, b1, 1, 1, w2, b2, 1, 1, act2="gelu")
    with pytest.raises(TypeError, match="act1 must be"):
        be.conv2d_pool2_chain_forward(x, w1, b1, 1, 1, w2, b2, 1, 1, act1=1)
    with pytest.raises(ValueError, match="stride1 must be"):
        be.conv2d_pool2_chain_forward(x, w1, b1, 0, 1, w2, b2, 1, 1)
    with pytest.raises(ValueError, match="pad2 must be"):
        be.conv2d_pool2_chain_forward(x, w1, b1, 1, 1, w2, b2, 1, -1)
    with pytest.raises(ValueError, match="w1 has 2 input channels"):
        be.conv2d_pool2_chain_forward(x, np.ones((8, 2, 3, 3), np.float32), b1, 1, 1, w2, b2, 1, 1)
    with pytest.raises(ValueError, match="second stage"):
        be.conv2d_pool2_chain_forward(x[:, :, :5, :5], w1, b1, 1, 0, w2, b2, 1, 0)
    with pytest.raises(ValueError, match="out"):
        be.conv2d_pool2_chain_forward(x, w1, b1, 1, 1, w2, b2, 1, 1, out=np.empty((2, 16, 4, 4), np.float32))
    x9 = np.zeros((9, 1, 12, 12), np.float32)  # the one-pass kernel needs a workspace from 8 images on
    with pytest.raises(ValueError, match=r"workspace must hold .* \(conv2d_pool2_chain_workspace_size\)"):
        be.conv2d_pool2_chain_forward(x9, w1, b1, 1, 1, w2, b2, 1, 1, workspace=np.empty(3, np.float32))
    with pytest.raises(ValueError, match="share memory"):
        be.conv2d_pool2_chain_forward(
            x, w1, b1, 1, 1, w2, b2, 1, 1, out=x.reshape(-1)[: 2 * 16 * 9].reshape(2, 16, 3, 3)
        )
    with pytest.raises(TypeError, match="w2"):
        be.conv2d_pool2_chain_forward(x, w1, b1, 1, 1, "w2", b2, 1, 1)


@pytest.mark.parametrize("where", ["input", "first stage"])
@pytest.mark.parametrize("n", [0, 11, 20])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the twin's own overflow
def test_out_of_range_is_still_the_two_calls(kernel, where, n):
    """An image with an Inf (or whose first-stage output leaves the AVX2 Winograd range, 2^40)
    makes the AVX2 chain hand the whole call to the two single-stage calls, which decide per
    image: the result stays bitwise theirs, non-finite exactly where the twin's is."""
    rng = np.random.default_rng(n)
    x, w1, b1, w2, b2 = _stages(rng, 21, 1, 12, 12, 8, 16)
    if where == "input":
        x[n, 0, 3, 3] = np.inf
    else:
        x[n] = 2.0**39  # in range; the first stage's outputs are ~2^41 and more
    y = engine.conv2d_pool2_chain_forward(x, w1, b1, 1, 1, w2, b2, 1, 1, act1="relu", act2="relu")
    z = engine.conv2d_pool2_forward(x, w1, b1, 1, 1, act="relu")
    np.testing.assert_array_equal(y, engine.conv2d_pool2_forward(z, w2, b2, 1, 1, act="relu"))
    r = ref.conv2d_pool2_forward(
        ref.conv2d_pool2_forward(x, w1, b1, 1, 1, act="relu"), w2, b2, 1, 1, act="relu"
    )
    assert np.array_equal(np.isfinite(y), np.isfinite(r))
    fin = np.isfinite(r)
    _close(y[fin], r[fin])


@pytest.mark.parametrize("C, F1, F2", [(1, 8, 16), (3, 9, 17), (8, 16, 33)])
def test_avx2_and_avx512_builds_give_the_same_bits(C, F1, F2):
    """conv_wino_pool.h is built for both ISAs with the same per-lane operations: the single-stage
    and chain outputs are bitwise equal (runs where the CPU has AVX-512, forcing AVX2 there)."""
    if not (engine.cpu_features()["avx512f"] and engine.cpu_features()["avx512vl"]):
        pytest.skip("needs AVX-512VL to compare its build with the AVX2 one")
    x, w1, b1, w2, b2 = _stages(np.random.default_rng(C), 21, C, 15, 14, F1, F2)
    out = {}
    for k in ("avx2", "avx512"):
        prev = engine._set_gemm_kernel(k)
        try:
            out[k] = (
                engine.conv2d_pool2_forward(x, w1, b1, 1, 1, act="relu"),
                engine.conv2d_pool2_chain_forward(x, w1, b1, 1, 1, w2, b2, 1, 1, act1="relu", act2="relu"),
            )
        finally:
            engine._set_gemm_kernel(prev)
    for a, b in zip(out["avx2"], out["avx512"]):
        np.testing.assert_array_equal(a, b)
