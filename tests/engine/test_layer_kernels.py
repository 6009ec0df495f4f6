"""Layer kernels of the C engine (conv, pool, relu, dense, optimizer steps) against their numpy
twins (hypothesis, random shapes) and against finite differences in float64."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from mantissa_embed import _reference as ref, engine
from mantissa_embed._reference import _conv as lref

BACKENDS = [pytest.param(engine, id="engine"), pytest.param(ref, id="numpy")]
FAST = settings(max_examples=40, deadline=None)


def _rand(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


def _close(a, b, rtol=2e-5):
    b = np.asarray(b)
    scale = float(np.abs(b).max()) if b.size else 0.0
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * (1.0 + scale))


conv_case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 5),
        "C": st.integers(1, 3),
        "F": st.integers(1, 4),
        "H": st.integers(1, 9),
        "W": st.integers(1, 9),
        "KH": st.integers(1, 4),
        "KW": st.integers(1, 4),
        "stride": st.integers(1, 3),
        "pad": st.integers(0, 2),
        "bias": st.booleans(),
        "seed": st.integers(0, 2**31 - 1),
    }
)


def _conv_data(c):
    assume(c["H"] + 2 * c["pad"] >= c["KH"] and c["W"] + 2 * c["pad"] >= c["KW"])
    rng = np.random.default_rng(c["seed"])
    x = _rand(rng, (c["N"], c["C"], c["H"], c["W"]))
    w = _rand(rng, (c["F"], c["C"], c["KH"], c["KW"]))
    b = _rand(rng, (c["F"],)) if c["bias"] else None
    return rng, x, w, b


# ------------------------------------------------------------------------------------ conv2d


@FAST
@given(conv_case)
def test_conv2d_forward_matches_twin(c):
    _, x, w, b = _conv_data(c)
    y = engine.conv2d_forward(x, w, b, c["stride"], c["pad"])
    y_ref = ref.conv2d_forward(x, w, b, c["stride"], c["pad"])
    assert y.shape == y_ref.shape and y.dtype == np.float32
    _close(y, y_ref)


@FAST
@given(conv_case, st.booleans())
def test_conv2d_backward_matches_twin(c, need_dx):
    rng, x, w, b = _conv_data(c)
    y = ref.conv2d_forward(x, w, b, c["stride"], c["pad"])
    dy = _rand(rng, y.shape)
    dx, dw, db = engine.conv2d_backward(x, w, dy, c["stride"], c["pad"], need_dx=need_dx)
    rdx, rdw, rdb = ref.conv2d_backward(x, w, dy, c["stride"], c["pad"], need_dx=need_dx)
    _close(dw, rdw)
    _close(db, rdb)
    if need_dx:
        _close(dx, rdx)
    else:
        assert dx is None and rdx is None


@pytest.mark.parametrize("N", [1, 15, 16, 17, 37])
def test_conv2d_batch_groups(N):
    """Batches smaller, equal and larger than the 16 image groups, uneven splits."""
    rng = np.random.default_rng(N)
    x, w, b = _rand(rng, (N, 3, 6, 5)), _rand(rng, (4, 3, 3, 3)), _rand(rng, (4,))
    y = engine.conv2d_forward(x, w, b, 1, 1)
    _close(y, ref.conv2d_forward(x, w, b, 1, 1))
    dy = _rand(rng, y.shape)
    for a, r in zip(engine.conv2d_backward(x, w, dy, 1, 1), ref.conv2d_backward(x, w, dy, 1, 1)):
        _close(a, r)


@pytest.mark.parametrize("stride,pad", [(1, 0), (1, 1), (2, 1), (3, 2)])
def test_conv2d_gradients_finite_differences(stride, pad):
    """dL/dx, dL/dw, dL/db of L = sum(conv2d(x, w, b) * R) against central differences in float64."""
    rng = np.random.default_rng(7)
    x, w, b = _rand(rng, (2, 2, 5, 6)), _rand(rng, (3, 2, 3, 2)), _rand(rng, (3,))
    y = ref.conv2d_forward(x, w, b, stride, pad)
    R = rng.standard_normal(y.shape)

    def loss(x64, w64, b64):
        return float((lref._conv2d(x64, w64, b64, stride, pad) * R).sum())

    x64, w64, b64 = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
    num = []
    for arr in (x64, w64, b64):
        g = np.zeros_like(arr)
        it = np.nditer(arr, flags=["multi_index"])
        for _ in it:
            i = it.multi_index
            old = arr[i]
            arr[i] = old + 1e-6
            lp = loss(x64, w64, b64)
            arr[i] = old - 1e-6
            lm = loss(x64, w64, b64)
            arr[i] = old
            g[i] = (lp - lm) / 2e-6
        num.append(g)
    # the float64 twin is exact up to rounding
    for a, n in zip(lref._conv2d_grads(x64, w64, R, stride, pad)[:2] + (R.sum(axis=(0, 2, 3)),), num):
        np.testing.assert_allclose(a, n, rtol=1e-6, atol=1e-6)
    # the C kernel in float32
    dx, dw, db = engine.conv2d_backward(x, w, R.astype(np.float32), stride, pad)
    for a, n in zip((dx, dw, db), num):
        np.testing.assert_allclose(a, n, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("be", BACKENDS)
def test_conv2d_buffers_and_accumulate(be):
    rng = np.random.default_rng(3)
    x, w, b = _rand(rng, (4, 2, 7, 7)), _rand(rng, (5, 2, 3, 3)), _rand(rng, (5,))
    ws = np.empty(be.conv2d_workspace_size(x.shape, w.shape, 2, 1), dtype=np.float32)
    out = np.full((4, 5, 4, 4), np.nan, dtype=np.float32)
    y = be.conv2d_forward(x, w, b, 2, 1, out=out, workspace=ws)
    assert y is out
    _close(out, ref.conv2d_forward(x, w, b, 2, 1))
    dy = _rand(rng, out.shape)
    rdx, rdw, rdb = ref.conv2d_backward(x, w, dy, 2, 1)
    dx = np.full(x.shape, np.nan, dtype=np.float32)
    dw = np.ones(w.shape, dtype=np.float32)
    db = np.ones((5,), dtype=np.float32)
    got = be.conv2d_backward(x, w, dy, 2, 1, dx=dx, dw=dw, db=db, accumulate=True, workspace=ws)
    assert got[0] is dx and got[1] is dw and got[2] is db
    _close(dx, rdx)
    _close(dw, rdw + 1)
    _close(db, rdb + 1)
    be.conv2d_backward(x, w, dy, 2, 1, dx=dx, dw=dw, db=db, accumulate=False, workspace=ws)
    _close(dw, rdw)
    _close(db, rdb)
    # fresh buffers with accumulate=True start from zero
    _, dw2, db2 = be.conv2d_backward(x, w, dy, 2, 1, need_dx=False, accumulate=True)
    _close(dw2, rdw)
    _close(db2, rdb)


def test_conv2d_workspace_size_agrees():
    for xs, ws_, s, p in [
        ((64, 1, 28, 28), (8, 1, 3, 3), 1, 1),
        ((3, 2, 5, 7), (4, 2, 2, 3), 2, 0),
        ((40, 8, 14, 14), (16, 8, 3, 3), 1, 1),
        ((0, 2, 5, 5), (3, 2, 3, 3), 1, 0),
    ]:
        assert engine.conv2d_workspace_size(xs, ws_, s, p) == ref.conv2d_workspace_size(xs, ws_, s, p)


def test_conv2d_bitwise_reproducible_across_thread_counts():
    rng = np.random.default_rng(11)
    x, w, b = _rand(rng, (33, 3, 12, 12)), _rand(rng, (6, 3, 3, 3)), _rand(rng, (6,))
    dy = _rand(rng, (33, 6, 12, 12))
    saved = engine.get_num_threads()
    try:
        res = []
        for t in (1, 2, 3):
            engine.set_num_threads(t)
            y = engine.conv2d_forward(x, w, b, 1, 1)
            res.append((y,) + engine.conv2d_backward(x, w, dy, 1, 1))
        for other in res[1:]:
            for a, o in zip(res[0], other):
                assert np.array_equal(a, o)
    finally:
        engine.set_num_threads(saved)


@pytest.mark.parametrize("be", BACKENDS)
def test_conv2d_empty_batch(be):
    x = np.zeros((0, 2, 5, 5), np.float32)
    w = np.ones((3, 2, 3, 3), np.float32)
    b = np.ones(3, np.float32)
    y = be.conv2d_forward(x, w, b, 1, 0)
    assert y.shape == (0, 3, 3, 3)
    dx, dw, db = be.conv2d_backward(x, w, np.zeros((0, 3, 3, 3), np.float32), 1, 0)
    assert dx.shape == x.shape and not dw.any() and not db.any()


# ----------------------------------------------------------------------------------- maxpool

pool_case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 4),
        "C": st.integers(1, 3),
        "H": st.integers(1, 10),
        "W": st.integers(1, 10),
        "size": st.integers(1, 4),
        "stride": st.integers(1, 4),
        "seed": st.integers(0, 2**31 - 1),
        "ties": st.booleans(),
    }
)


@FAST
@given(pool_case)
def test_maxpool2d_matches_twin(c):
    assume(c["H"] >= c["size"] and c["W"] >= c["size"])
    rng = np.random.default_rng(c["seed"])
    shape = (c["N"], c["C"], c["H"], c["W"])
    # with ties: few distinct values, so the first-maximum rule is exercised
    x = (rng.integers(0, 3, shape) if c["ties"] else rng.standard_normal(shape)).astype(np.float32)
    y, a = engine.maxpool2d_forward(x, c["size"], c["stride"])
    ry, ra = ref.maxpool2d_forward(x, c["size"], c["stride"])
    assert a.dtype == np.int32
    np.testing.assert_array_equal(y, ry)
    np.testing.assert_array_equal(a, ra)
    dy = _rand(rng, y.shape)
    _close(engine.maxpool2d_backward(dy, a, x.shape), ref.maxpool2d_backward(dy, ra, x.shape), rtol=1e-6)


@pytest.mark.parametrize("W", [2, 3, 14, 15, 16, 17, 30, 34, 35])
def test_maxpool2d_2x2_rows_every_kernel(kernel, W):
    """2x2 / 2 windows (the SIMD rows: 8 outputs per step, the last WO mod 8 masked) with ties
    and NaN, on every SGEMM kernel path: values and argmax equal the twin's."""
    rng = np.random.default_rng(W)
    x = rng.integers(0, 3, (3, 2, 5, W)).astype(np.float32)
    x[1, 0, 2, W - 1] = np.nan
    x[2, 1, 0, 0] = np.nan
    y, a = engine.maxpool2d_forward(x, 2, 2)
    ry, ra = ref.maxpool2d_forward(x, 2, 2)
    np.testing.assert_array_equal(y, ry)
    np.testing.assert_array_equal(a, ra)


def test_maxpool2d_semantics():
    x = np.array([[[[1, 5, 5, 0], [2, 3, 1, 9], [0, 0, 0, 0], [7, 7, 7, 7]]]], dtype=np.float32)
    for be in (engine, ref):
        y, a = be.maxpool2d_forward(x, 2, 2)
        np.testing.assert_array_equal(y[0, 0], [[5, 9], [7, 7]])
        np.testing.assert_array_equal(a[0, 0], [[1, 7], [12, 14]])  # ties: first in row-major order
        # overlapping windows (stride < size) add their gradients
        y, a = be.maxpool2d_forward(x, 2, 1)
        dx = be.maxpool2d_backward(np.ones_like(y), a, x.shape)
        assert dx.sum() == y.size
        assert dx[0, 0, 0, 1] == 2.0  # the 5 at (0, 1) wins two windows


def test_maxpool2d_gradient_finite_differences():
    rng = np.random.default_rng(5)
    x = rng.permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6).astype(np.float64) / 10  # distinct values
    R = rng.standard_normal((2, 3, 3, 2))

    def loss(v):
        return float((lref._maxpool2d(v, 3, 2)[0] * R).sum())

    num = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + 1e-6
        lp = loss(x)
        x[i] = old - 1e-6
        lm = loss(x)
        x[i] = old
        num[i] = (lp - lm) / 2e-6
    _, a = engine.maxpool2d_forward(x.astype(np.float32), 3, 2)
    dx = engine.maxpool2d_backward(R.astype(np.float32), a, x.shape)
    np.testing.assert_allclose(dx, num, rtol=1e-5, atol=1e-5)


def test_maxpool2d_nan_propagates_like_torch():
    x = np.array([[[[1, np.nan], [3, 2]]]], dtype=np.float32)
    for be in (engine, ref):
        y, a = be.maxpool2d_forward(x, 2, 2)
        assert np.isnan(y[0, 0, 0, 0]) and a[0, 0, 0, 0] == 1


# -------------------------------------------------------------------------------------- relu


@FAST
@given(st.lists(st.integers(0, 6), min_size=1, max_size=4), st.integers(0, 2**31 - 1))
def test_relu_matches_twin(shape, seed):
    rng = np.random.default_rng(seed)
    x = _rand(rng, shape)
    y = engine.relu_forward(x)
    np.testing.assert_array_equal(y, ref.relu_forward(x))
    dy = _rand(rng, shape)
    np.testing.assert_array_equal(engine.relu_backward(dy, y), ref.relu_backward(dy, y))


def test_relu_large_and_in_place():
    rng = np.random.default_rng(0)
    x = _rand(rng, (300_001,))  # above the OpenMP threshold
    expect = np.maximum(x, 0)
    dy = _rand(rng, x.shape)
    for be in (engine, ref):
        xc = x.copy()
        assert be.relu_forward(xc, out=xc) is xc
        np.testing.assert_array_equal(xc, expect)
        dyc = dy.copy()
        assert be.relu_backward(dyc, xc, dx=dyc) is dyc
        np.testing.assert_array_equal(dyc, np.where(expect > 0, dy, 0))


# ------------------------------------------------------------------------------------- dense

dense_case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 70),
        "I": st.integers(1, 40),
        "O": st.integers(1, 40),
        "bias": st.booleans(),
        "seed": st.integers(0, 2**31 - 1),
    }
)


@FAST
@given(dense_case, st.booleans(), st.booleans())
def test_dense_matches_twin(c, need_dx, accumulate):
    rng = np.random.default_rng(c["seed"])
    x, w = _rand(rng, (c["N"], c["I"])), _rand(rng, (c["O"], c["I"]))
    b = _rand(rng, (c["O"],)) if c["bias"] else None
    _close(engine.dense_forward(x, w, b), ref.dense_forward(x, w, b))
    lin = ref.dense_forward(x, w, b)
    for be in (engine, ref):  # the fused ReLU against max(linear, 0)
        y = be.dense_forward(x, w, b, act="relu")
        assert (y >= 0).all()
        _close(y, np.maximum(lin, 0))
    dy = _rand(rng, (c["N"], c["O"]))
    dw0, db0 = _rand(rng, w.shape), _rand(rng, (c["O"],))
    got = engine.dense_backward(
        x, w, dy, dw=dw0.copy(), db=db0.copy(), need_dx=need_dx, accumulate=accumulate
    )
    exp = ref.dense_backward(x, w, dy, dw=dw0.copy(), db=db0.copy(), need_dx=need_dx, accumulate=accumulate)
    for a, e in zip(got, exp):
        if e is None:
            assert a is None
        else:
            _close(a, e)


def test_dense_gradients_finite_differences():
    rng = np.random.default_rng(2)
    x, w, _ = _rand(rng, (5, 7)), _rand(rng, (4, 7)), _rand(rng, (4,))  # the bias draw keeps R's stream
    R = rng.standard_normal((5, 4))
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    # L = sum((x w^T + b) * R) is bilinear: its exact gradients, computed in float64
    num_dx = np.zeros_like(x64)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x64)
        e[i] = 1e-6
        num_dx[i] = (((x64 + e) @ w64.T * R).sum() - ((x64 - e) @ w64.T * R).sum()) / 2e-6
    dx, dw, db = engine.dense_backward(x, w, R.astype(np.float32))
    np.testing.assert_allclose(dx, num_dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dw, R.T @ x64, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(db, R.sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("be", BACKENDS)
def test_dense_degenerate_shapes(be):
    w = np.ones((3, 4), np.float32)
    assert be.dense_forward(np.zeros((0, 4), np.float32), w, None).shape == (0, 3)
    dx, dw, db = be.dense_backward(np.zeros((0, 4), np.float32), w, np.zeros((0, 3), np.float32))
    assert dx.shape == (0, 4) and not dw.any() and not db.any()
    y = be.dense_forward(np.zeros((2, 0), np.float32), np.zeros((3, 0), np.float32), np.ones(3, np.float32))
    np.testing.assert_array_equal(y, np.ones((2, 3)))


# ------------------------------------------------------------------------------------- optim


@FAST
@given(
    st.integers(1, 300),
    st.sampled_from([0.0, 0.9]),
    st.sampled_from([0.0, 0.3]),
    st.sampled_from([0.0, 1e-2]),
    st.booleans(),
    st.integers(0, 2**31 - 1),
)
def test_sgd_step_matches_twin(n, momentum, dampening, wd, nesterov, seed):
    assume(not nesterov or (momentum > 0 and dampening == 0))
    rng = np.random.default_rng(seed)
    p = _rand(rng, (n,))
    v = np.zeros(n, np.float32) if momentum else None
    p2, v2 = p.copy(), (None if v is None else v.copy())
    for t in range(4):
        g = _rand(rng, (n,))
        engine.sgd_step(p, g, v, 0.1, momentum, dampening, wd, nesterov, first=(t == 0))
        ref.sgd_step(p2, g, v2, 0.1, momentum, dampening, wd, nesterov, first=(t == 0))
    np.testing.assert_allclose(p, p2, rtol=1e-6, atol=1e-6)
    if v is not None:
        np.testing.assert_allclose(v, v2, rtol=1e-6, atol=1e-6)


@FAST
@given(
    st.integers(1, 300),
    st.sampled_from([0.0, 1e-2, 0.5]),
    st.sampled_from([(0.9, 0.999), (0.5, 0.9), (0.0, 0.0)]),
    st.booleans(),
    st.integers(0, 2**31 - 1),
)
def test_adam_step_matches_twin(n, wd, betas, decoupled, seed):
    rng = np.random.default_rng(seed)
    shape = (n,) if n % 2 else (n // 2 + 1, 2)
    p = _rand(rng, shape)
    m, v = np.zeros_like(p), np.zeros_like(p)
    p2, m2, v2 = p.copy(), m.copy(), v.copy()
    for t in range(1, 5):
        g = _rand(rng, shape)
        engine.adam_step(p, g, m, v, t, 1e-2, betas[0], betas[1], 1e-8, wd, decoupled)
        ref.adam_step(p2, g, m2, v2, t, 1e-2, betas[0], betas[1], 1e-8, wd, decoupled)
    for a, b in ((p, p2), (m, m2), (v, v2)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("be", [engine, ref], ids=["engine", "numpy"])
def test_adam_step_decoupled_decay_is_applied_before_the_update(be):
    """AdamW with a zero gradient: the moments stay 0, so p is only scaled by 1 - lr*wd
    (the Adam term is 0 / (0 + eps) = 0); with decoupled=False nothing moves."""
    p0 = np.array([1.0, -2.0, 0.5], np.float32)
    for decoupled, expect in ((True, p0 * np.float32(1 - 0.1 * 0.5)), (False, p0)):
        p, z = p0.copy(), np.zeros(3, np.float32)
        be.adam_step(
            p,
            np.zeros(3, np.float32),
            z,
            z.copy(),
            1,
            0.1,
            0.9,
            0.999,
            1e-8,
            0.5 if decoupled else 0.0,
            decoupled,
        )
        np.testing.assert_array_equal(p, expect)


def test_optim_large_arrays_threaded():
    rng = np.random.default_rng(1)
    p, g = _rand(rng, (200_003,)), _rand(rng, (200_003,))
    v = np.zeros_like(p)
    p2, v2 = p.copy(), v.copy()
    engine.sgd_step(p, g, v, 0.05, 0.9, 0.0, 1e-3, True, True)
    ref.sgd_step(p2, g, v2, 0.05, 0.9, 0.0, 1e-3, True, True)
    np.testing.assert_allclose(p, p2, rtol=1e-6, atol=1e-7)


# -------------------------------------------------------------------------------- bad inputs


def _err(be, fn, *args, **kw):
    with pytest.raises((TypeError, ValueError)) as ei:
        getattr(be, fn)(*args, **kw)
    return type(ei.value), str(ei.value)


def _bad_calls():
    f = np.float32
    x = np.zeros((2, 3, 5, 5), f)
    w = np.zeros((4, 3, 3, 3), f)
    return [
        ("conv2d_forward", (x, np.zeros((4, 2, 3, 3), f), None, 1, 0), {}, "channels"),
        ("conv2d_forward", (x, np.zeros((4, 3, 7, 7), f), None, 1, 0), {}, "larger"),
        ("conv2d_forward", (x, w, None, 0, 0), {}, "stride"),
        ("conv2d_forward", (x, w, None, 1.5, 0), {}, "stride"),
        ("conv2d_forward", (x, w, None, 1, -1), {}, "pad"),
        ("conv2d_forward", (x[0], w, None, 1, 0), {}, "x"),
        ("conv2d_forward", (x, w, np.zeros(3, f), 1, 0), {}, "b"),
        ("conv2d_forward", (x, w, None, 1, 0), {"out": np.zeros((2, 4, 3, 3), np.float64)}, "out"),
        ("conv2d_forward", (x, w, None, 1, 0), {"out": np.zeros((2, 4, 3, 4), f)}, "out"),
        ("conv2d_forward", (x, w, None, 1, 0), {"out": np.zeros((2, 4, 3, 6), f)[..., ::2]}, "out"),
        ("conv2d_forward", (x, w, None, 1, 0), {"workspace": np.zeros(3, f)}, "workspace"),
        ("conv2d_forward", ("abc", w, None, 1, 0), {}, "x"),
        ("conv2d_backward", (x, w, np.zeros((2, 4, 3, 2), f), 1, 0), {}, "dy"),
        ("conv2d_backward", (x, w, np.zeros((2, 4, 3, 3), f), 1, 0), {"dw": np.zeros((4, 3, 3), f)}, "dw"),
        ("conv2d_backward", (x, w, np.zeros((2, 4, 3, 3), f), 1, 0), {"need_dx": "yes"}, "need_dx"),
        ("maxpool2d_forward", (x, 6, 1), {}, "window"),
        ("maxpool2d_forward", (x, 0, 1), {}, "size"),
        ("maxpool2d_forward", (x, 2, 2), {"argmax": np.zeros((2, 3, 2, 2), np.int64)}, "argmax"),
        (
            "maxpool2d_backward",
            (np.zeros((2, 3, 2, 2), f), np.full((2, 3, 2, 2), 25, np.int32), x.shape),
            {},
            "argmax",
        ),
        (
            "maxpool2d_backward",
            (np.zeros((2, 3, 2, 2), f), np.zeros((2, 3, 2, 2), np.int64), x.shape),
            {},
            "argmax",
        ),
        (
            "maxpool2d_backward",
            (np.zeros((2, 3, 2, 2), f), np.zeros((2, 3, 2, 2), np.int32), (2, 5, 5)),
            {},
            "x_shape",
        ),
        ("relu_backward", (np.zeros(3, f), np.zeros(4, f)), {}, "y"),
        ("relu_forward", (np.zeros(3, f),), {"out": np.zeros(3, f)[::-1]}, "out"),
        ("relu_forward", (np.zeros(3, bool),), {}, "x"),
        ("dense_forward", (np.zeros((2, 3), f), np.zeros((4, 5), f), None), {}, "w"),
        ("dense_forward", (np.zeros((2, 3, 1), f), np.zeros((4, 3), f), None), {}, "x"),
        ("dense_backward", (np.zeros((2, 3), f), np.zeros((4, 3), f), np.zeros((2, 5), f)), {}, "dy"),
        ("sgd_step", (np.zeros(3, f), np.zeros(3, f), None, 0.1, 0.9), {}, "v"),
        ("sgd_step", (np.zeros(3, np.float64), np.zeros(3, f), None, 0.1), {}, "p"),
        ("sgd_step", (np.zeros(3, f), np.zeros(4, f), None, 0.1), {}, "g"),
        ("sgd_step", (np.zeros(3, f), np.zeros(3, f), None, float("nan")), {}, "lr"),
        (
            "adam_step",
            (np.zeros(3, f), np.zeros(3, f), np.zeros(3, f), np.zeros(3, f), 0, 1e-3, 0.9, 0.999, 1e-8, 0.0),
            {},
            "t",
        ),
        (
            "adam_step",
            (np.zeros(3, f), np.zeros(3, f), np.zeros(2, f), np.zeros(3, f), 1, 1e-3, 0.9, 0.999, 1e-8, 0.0),
            {},
            "m",
        ),
        (
            "adam_step",
            (np.zeros(3, f), np.zeros(3, f), np.zeros(3, f), np.zeros(3, f), 1, 1e-3, 0.9, 0.999, 1e-8, 0.0),
            {"decoupled": 1},
            "decoupled",
        ),
    ]


@pytest.mark.parametrize("fn,args,kw,word", _bad_calls())
def test_bad_inputs_raise_the_same_error_on_both_backends(fn, args, kw, word):
    e_type, e_msg = _err(engine, fn, *args, **kw)
    r_type, r_msg = _err(ref, fn, *args, **kw)
    assert (e_type, e_msg) == (r_type, r_msg)
    assert word in e_msg


def test_read_only_inputs_are_accepted_and_nothing_is_copied_needlessly():
    rng = np.random.default_rng(0)
    x, w = _rand(rng, (2, 1, 4, 4)), _rand(rng, (2, 1, 3, 3))
    x.setflags(write=False)
    w.setflags(write=False)
    y = engine.conv2d_forward(x, w, None, 1, 0)
    _close(y, ref.conv2d_forward(x, w, None, 1, 0))
    # float64 inputs are converted (a copy), results still float32
    y64 = engine.conv2d_forward(x.astype(np.float64), w, None, 1, 0)
    assert y64.dtype == np.float32
    _close(y64, y)


# ------------------------------------------------ every kernel path of the CPU (conftest.kernel)


@pytest.mark.parametrize(
    "shape,k,stride,pad",
    [
        ((3, 2, 9, 7), 3, 1, 1),
        ((2, 3, 14, 14), 3, 1, 1),
        ((1, 1, 28, 28), 3, 1, 1),
        ((2, 2, 8, 11), 2, 2, 0),
        ((5, 4, 6, 5), 5, 1, 2),
        ((2, 3, 10, 9), 3, 3, 1),
    ],
)
def test_conv2d_paths_match_twin(kernel, shape, k, stride, pad):
    rng = np.random.default_rng(sum(shape))
    x, w, b = _rand(rng, shape), _rand(rng, (6, shape[1], k, k)), _rand(rng, (6,))
    y = engine.conv2d_forward(x, w, b, stride, pad)
    _close(y, ref.conv2d_forward(x, w, b, stride, pad))
    dy = _rand(rng, y.shape)
    for a, r in zip(
        engine.conv2d_backward(x, w, dy, stride, pad), ref.conv2d_backward(x, w, dy, stride, pad)
    ):
        _close(a, r)


@pytest.mark.parametrize(
    "shape,size,stride",
    [
        ((2, 3, 5, 7), 2, 2),
        ((1, 2, 9, 45), 2, 2),
        ((3, 1, 2, 34), 2, 2),
        ((2, 2, 28, 28), 2, 2),
        ((1, 1, 33, 67), 2, 2),
        ((2, 1, 7, 9), 3, 2),
    ],
)
def test_maxpool2d_paths_match_twin(kernel, shape, size, stride):
    rng = np.random.default_rng(sum(shape))
    for x in (_rand(rng, shape), rng.integers(0, 2, shape).astype(np.float32)):  # distinct values, ties
        y, a = engine.maxpool2d_forward(x, size, stride)
        ry, ra = ref.maxpool2d_forward(x, size, stride)
        np.testing.assert_array_equal(y, ry)
        np.testing.assert_array_equal(a, ra)
    x = _rand(rng, shape)
    x.reshape(-1)[::5] = np.nan
    y, a = engine.maxpool2d_forward(x, size, stride)
    ry, ra = ref.maxpool2d_forward(x, size, stride)
    np.testing.assert_array_equal(y, ry)  # NaN positions compare equal in assert_array_equal
    np.testing.assert_array_equal(a, ra)


# ------------------------------------------------------- adversarial inputs (regressions)


@pytest.mark.parametrize("be", BACKENDS)
def test_conv_absurd_pad_stride_and_shapes_are_value_errors(be):
    x = np.ones((1, 1, 2, 2), np.float32)
    w = np.ones((1, 1, 3, 3), np.float32)
    for pad in (2**40, 2**62, 2**70):  # not numpy's "array is too big" nor an OverflowError
        with pytest.raises(ValueError, match=r"convolution is too large"):
            be.conv2d_forward(x, w, None, 1, pad)
    for stride in (2**63, 2**70):
        with pytest.raises(ValueError, match=r"stride must be <= 2\*\*56"):
            be.conv2d_forward(x, w, None, stride, 1)
    # the C workspace size must not overflow int64 silently (a wrapped size, e.g. 12)
    with pytest.raises(ValueError, match=r"convolution is too large"):
        be.conv2d_workspace_size((2**62,) * 4, (2**62, 2**62, 3, 3), 1, 0)


@pytest.mark.parametrize("be", BACKENDS)
def test_conv_zero_filters(be):
    x = np.ones((2, 1, 4, 4), np.float32)
    w = np.ones((0, 1, 3, 3), np.float32)
    assert be.conv2d_forward(x, w, None, 1, 0).shape == (2, 0, 2, 2)  # was "cannot reshape"
    dx, dw, db = be.conv2d_backward(x, w, np.ones((2, 0, 2, 2), np.float32), 1, 0)
    assert dx.shape == x.shape and not dx.any() and dw.shape == w.shape and db.shape == (0,)


@pytest.mark.parametrize("be", BACKENDS)
def test_pool_absurd_stride_and_plane(be):
    with pytest.raises(ValueError, match=r"stride must be <= 2\*\*56"):
        be.maxpool2d_forward(np.ones((1, 1, 4, 4), np.float32), 2, 2**63)
    dy = np.ones((1, 1, 2, 2), np.float32)
    a = np.zeros((1, 1, 2, 2), np.int32)
    for x_shape in ((1, 1, 1, 2**33), (1, 1, 2**40, 2**40)):  # was MemoryError / "array is too big"
        with pytest.raises(ValueError, match=r"x_shape .*int32"):
            be.maxpool2d_backward(dy, a, x_shape)


@pytest.mark.parametrize("be", BACKENDS)
def test_outputs_overlapping_inputs_are_rejected(be):
    rng = np.random.default_rng(0)
    x = _rand(rng, (64, 64))
    w = _rand(rng, (64, 64))
    with pytest.raises(ValueError, match=r"out must not share memory with x"):
        be.dense_forward(x, w, None, out=x)  # in place, the product would be wrong
    with pytest.raises(ValueError, match=r"dx must not share memory with w"):
        be.dense_backward(x, w, _rand(rng, (64, 64)), dx=w)
    with pytest.raises(ValueError, match=r"dw must not share memory with x"):
        be.dense_backward(x, w, _rand(rng, (64, 64)), dw=x)
    xc = _rand(rng, (2, 3, 6, 6))
    wc = _rand(rng, (3, 3, 1, 1))
    with pytest.raises(ValueError, match=r"out must not share memory with x"):
        be.conv2d_forward(xc, wc, None, 1, 0, out=xc)
    dy = np.ones((1, 1, 2, 2), np.float32)
    with pytest.raises(ValueError, match=r"dx must not share memory with dy"):  # gave zeros
        be.maxpool2d_backward(dy, np.arange(4, dtype=np.int32).reshape(1, 1, 2, 2), (1, 1, 2, 2), dx=dy)
    b = np.array([-1, 2, -3, 4, -5], np.float32)
    with pytest.raises(ValueError, match=r"out must not share memory with x"):  # shifted overlap
        be.relu_forward(b[:4], out=b[1:])
    p = np.ones(3, np.float32)
    with pytest.raises(ValueError, match=r"v must not share memory with p"):
        be.sgd_step(p, np.ones(3, np.float32), p, 0.1, momentum=0.9)
    m = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match=r"m must not share memory with v"):
        be.adam_step(p, np.ones(3, np.float32), m, m, 1, 0.1, 0.9, 0.999, 1e-8, 0.0)
    # the documented in-place forms still work
    y = np.array([-1, 2], np.float32)
    np.testing.assert_array_equal(be.relu_forward(y, out=y), [0, 2])
    d = np.array([3, 4], np.float32)
    np.testing.assert_array_equal(be.relu_backward(d, np.array([1, -1], np.float32), dx=d), [3, 0])


@pytest.mark.parametrize("be", BACKENDS)
def test_optimizer_kernel_scalars_that_made_nan_or_inf(be):
    def adam(**kw):
        args = dict(t=1, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0)
        args.update(kw)
        p = np.ones(3, np.float32)
        be.adam_step(p, np.ones(3, np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32), **args)
        return p

    for kw, pat in (
        (dict(beta1=1.0), r"beta1 must be in \[0, 1\)"),
        (dict(beta2=1.0), r"beta2"),
        (dict(beta1=-1.0), r"beta1"),
        (dict(beta2=1 - 1e-9), r"beta2"),
        (dict(eps=-1.0), r"eps must be >= 0"),
        (dict(t=2**63), r"t must be <= 2\*\*62"),
    ):
        with pytest.raises(ValueError, match=pat):
            adam(**kw)
    assert np.isfinite(adam()).all()
    with pytest.raises(ValueError, match=r"lr must be within the float32 range"):
        be.sgd_step(np.ones(3, np.float32), np.ones(3, np.float32), None, 1e39)  # was p = -inf


@pytest.mark.parametrize("be", [engine, ref], ids=["engine", "numpy"])
def test_dense_act_validated(be):
    x, w = np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)
    with pytest.raises(ValueError, match="act"):
        be.dense_forward(x, w, None, act="tanh")
    with pytest.raises(TypeError, match="act"):
        be.dense_forward(x, w, None, act=1)
    y = be.dense_forward(x, -w, None, act="relu")  # NaN-free, all clipped
    assert (y == 0).all()
    x[0, 0] = np.nan
    assert np.isnan(be.dense_forward(x, w, None, act="relu")[0]).all()  # NaN kept, as torch.relu
