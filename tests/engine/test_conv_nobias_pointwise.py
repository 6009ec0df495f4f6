"""conv2d without bias (b=None forward, need_db=False backward) and the 1x1 / stride-2 paths:
engine against the numpy twin (hypothesis: odd sizes, batch 1, stride 2), on every SGEMM kernel
of this CPU; bad input."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import _reference as ref, engine

FAST = settings(max_examples=30, deadline=None)

case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 5),
        "C": st.integers(1, 20),
        "F": st.integers(1, 20),
        "H": st.integers(1, 9),
        "W": st.integers(1, 9),
        "stride": st.integers(1, 3),
        "act": st.sampled_from([None, "relu", "leaky_relu"]),
        "seed": st.integers(0, 2**31 - 1),
    }
)


def _close(a, b, rtol=2e-5):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * (1 + float(np.abs(b).max(initial=0))))


def _check(c, k, pad):
    rng = np.random.default_rng(c["seed"])
    x = rng.standard_normal((c["N"], c["C"], c["H"] + k - 1, c["W"] + k - 1)).astype(np.float32)
    w = rng.standard_normal((c["F"], c["C"], k, k)).astype(np.float32)
    y = engine.conv2d_forward(x, w, None, c["stride"], pad, act=c["act"])
    _close(y, ref.conv2d_forward(x, w, None, c["stride"], pad, act=c["act"]))
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx, dw, db = engine.conv2d_backward(x, w, dy, c["stride"], pad, need_db=False)
    rdx, rdw, rdb = ref.conv2d_backward(x, w, dy, c["stride"], pad, need_db=False)
    assert db is None and rdb is None
    _close(dx, rdx)
    _close(dw, rdw)
    # the same gradients as with the bias gradient computed
    dx2, dw2, _ = engine.conv2d_backward(x, w, dy, c["stride"], pad)
    np.testing.assert_array_equal(dw, dw2)
    np.testing.assert_array_equal(dx, dx2)


@pytest.mark.parametrize(
    "kname",
    [
        k
        for k in ("generic", "avx2", "avx512")
        if k == "generic" or engine.cpu_features()[k if k == "avx2" else "avx512f"]
    ],
)
def test_pointwise_and_strided_match_twin(kname):
    prev = engine._set_gemm_kernel(kname)
    try:

        @FAST
        @given(case)
        def run(c):
            _check(c, 1, 0)  # 1x1: stride 1 is the one-GEMM path, stride 2/3 the im2col one
            _check(c, 3, 1)  # 3x3 pad 1, stride 1 (wide rows) and 2 (im2col)

        run()
    finally:
        engine._set_gemm_kernel(prev)


def test_need_db_accumulate_leaves_nothing_else():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    w = rng.standard_normal((4, 3, 1, 1)).astype(np.float32)
    dy = rng.standard_normal((2, 4, 5, 5)).astype(np.float32)
    dw = np.ones(w.shape, np.float32)
    for be in (engine, ref):
        got = dw.copy()
        _, out, db = be.conv2d_backward(x, w, dy, 1, 0, dw=got, accumulate=True, need_db=False)
        assert out is got and db is None
        _close(got - 1, np.einsum("nfhw,nchw->fc", dy, x)[:, :, None, None])
        with pytest.raises(TypeError, match="need_db"):
            be.conv2d_backward(x, w, dy, 1, 0, need_db=1)
