"""The 1x1 stride-1 forward on planes of at least ME_POINTWISE_MIN_P (1024) pixels, which runs as
GEMMs over (image, panel of output pixels) on the NCHW plane: engine against the numpy twin
(hypothesis: channel counts around the panel width's steps, bias or none, each activation), on
every SGEMM kernel of this CPU, bitwise the same on 1 and 2 threads."""

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from mantissa_embed import _reference as ref, engine

case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 3),
        "C": st.integers(1, 40),
        "F": st.sampled_from([1, 7, 16, 100, 129, 513, 2100]),
        "H": st.integers(32, 41),
        "W": st.integers(32, 41),
        "bias": st.booleans(),
        "act": st.sampled_from([None, "relu", "leaky_relu"]),
        "seed": st.integers(0, 2**31 - 1),
    }
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c=case)
def test_pointwise_panels_match_twin(kernel, c):
    rng = np.random.default_rng(c["seed"])
    x = rng.standard_normal((c["N"], c["C"], c["H"], c["W"])).astype(np.float32)
    w = rng.standard_normal((c["F"], c["C"], 1, 1)).astype(np.float32)
    b = rng.standard_normal(c["F"]).astype(np.float32) if c["bias"] else None
    prev = engine.get_num_threads()
    try:
        engine.set_num_threads(1)
        y1 = engine.conv2d_forward(x, w, b, 1, 0, act=c["act"])
        engine.set_num_threads(2)
        y2 = engine.conv2d_forward(x, w, b, 1, 0, act=c["act"])
    finally:
        engine.set_num_threads(prev)
    np.testing.assert_array_equal(y1, y2)
    want = ref.conv2d_forward(x, w, b, 1, 0, act=c["act"])
    np.testing.assert_allclose(y1, want, rtol=2e-5, atol=2e-5 * (1 + float(np.abs(want).max())))
