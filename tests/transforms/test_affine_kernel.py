"""affine_resample_forward / _backward: the engine against its numpy twin on random shapes
(hypothesis: any N, C, odd H and W, batch 1, random matrices), and thread-count independence."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _helpers import close_scaled
from mantissa_embed import _reference as ref, engine

FAST = settings(max_examples=40, deadline=None)

case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 5),
        "C": st.integers(1, 3),
        "H": st.integers(0, 6).map(lambda k: 2 * k + 1),
        "W": st.integers(0, 6).map(lambda k: 2 * k + 1),
        "spread": st.sampled_from([0.0, 0.1, 0.5, 2.0]),
        "seed": st.integers(0, 2**31 - 1),
    }
)


def _data(c):
    rng = np.random.default_rng(c["seed"])
    x = rng.standard_normal((c["N"], c["C"], c["H"], c["W"])).astype(np.float32)
    theta = (np.eye(2, 3)[None] + c["spread"] * rng.standard_normal((c["N"], 2, 3))).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    return x, theta, dy


_close = close_scaled


@FAST
@given(case)
def test_forward_matches_twin(c):
    x, theta, _ = _data(c)
    y = engine.affine_resample_forward(x, theta)
    assert y.shape == x.shape and y.dtype == np.float32
    _close(y, ref.affine_resample_forward(x, theta))


@FAST
@given(case, st.booleans(), st.booleans())
def test_backward_matches_twin(c, need_dx, need_dtheta):
    x, theta, dy = _data(c)
    dx, dt = engine.affine_resample_backward(x, theta, dy, need_dx=need_dx, need_dtheta=need_dtheta)
    rdx, rdt = ref.affine_resample_backward(x, theta, dy, need_dx=need_dx, need_dtheta=need_dtheta)
    for got, want, needed in ((dx, rdx, need_dx), (dt, rdt, need_dtheta)):
        if needed:
            _close(got, want, rtol=1e-4)  # dtheta sums over every pixel
        else:
            assert got is None and want is None


@pytest.mark.parametrize("be", [engine, ref], ids=["engine", "numpy"])
def test_out_buffers_are_overwritten(be):
    x, theta, dy = _data({"N": 2, "C": 2, "H": 5, "W": 7, "spread": 0.3, "seed": 1})
    out = np.full(x.shape, np.nan, np.float32)
    assert be.affine_resample_forward(x, theta, out=out) is out
    np.testing.assert_array_equal(out, be.affine_resample_forward(x, theta))
    dx, dt = np.full(x.shape, np.nan, np.float32), np.full(theta.shape, np.nan, np.float32)
    got = be.affine_resample_backward(x, theta, dy, dx=dx, dtheta=dt)
    assert got[0] is dx and got[1] is dt
    for a, b in zip(got, be.affine_resample_backward(x, theta, dy)):
        np.testing.assert_array_equal(a, b)


def test_empty_batch():
    x = np.zeros((0, 1, 3, 3), np.float32)
    theta = np.zeros((0, 2, 3), np.float32)
    assert engine.affine_resample_forward(x, theta).shape == (0, 1, 3, 3)
    dx, dt = engine.affine_resample_backward(x, theta, x)
    assert dx.shape == x.shape and dt.shape == theta.shape


def test_bitwise_equal_for_any_thread_count():
    x, theta, dy = _data({"N": 9, "C": 3, "H": 33, "W": 31, "spread": 0.3, "seed": 2})
    prev = engine.get_num_threads()
    try:
        runs = []
        for n in (1, 2, 3):
            engine.set_num_threads(n)
            runs.append(
                (engine.affine_resample_forward(x, theta), *engine.affine_resample_backward(x, theta, dy))
            )
    finally:
        engine.set_num_threads(prev)
    for run in runs[1:]:
        for a, b in zip(run, runs[0]):
            np.testing.assert_array_equal(a, b)
