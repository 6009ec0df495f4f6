"""Batch-norm kernels of the C engine (forward, backward, fold) against their numpy twins
(hypothesis, random shapes: (N, C), (N, C, L), (N, C, H, W), batch 1, odd sizes, both modes,
the fused ReLU) on every kernel path of this CPU (portable and AVX2 + FMA bodies), their
bad-input errors, and thread-count invariance."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from mantissa_embed import _reference as ref, engine

BACKENDS = [pytest.param(engine, id="engine"), pytest.param(ref, id="numpy")]
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _close(a, b, rtol=2e-5):
    b = np.asarray(b)
    scale = float(np.abs(b).max()) if b.size else 0.0
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * (1.0 + scale))


bn_case = st.fixed_dictionaries(
    {
        "N": st.integers(1, 5),
        "C": st.integers(1, 7),
        "rest": st.sampled_from([(), (1,), (5,), (1, 1), (3, 5), (7, 9)]),
        "training": st.booleans(),
        "relu": st.booleans(),
        "momentum": st.sampled_from([0.0, 0.1, 0.5, 1.0]),
        "offset": st.sampled_from([0.0, 3.0, 100.0]),
        "seed": st.integers(0, 2**31 - 1),
    }
)


def _data(c):
    N, C, rest = c["N"], c["C"], c["rest"]
    S = int(np.prod(rest)) if rest else 1
    assume(not c["training"] or N * S >= 2)
    rng = np.random.default_rng(c["seed"])
    x = (
        rng.standard_normal((N, C) + rest) * rng.uniform(0.5, 2.0, (1, C) + (1,) * len(rest)) + c["offset"]
    ).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, C).astype(np.float32)
    beta = rng.standard_normal(C).astype(np.float32)
    rm = (rng.standard_normal(C) + c["offset"]).astype(np.float32)
    rv = rng.uniform(0.5, 2.0, C).astype(np.float32)
    return rng, x, gamma, beta, rm, rv


def _forward(be, c, x, gamma, beta, rm, rv):
    rm, rv = rm.copy(), rv.copy()
    out, sm, si = be.batchnorm_forward(
        x, gamma, beta, rm, rv, c["training"], c["momentum"], 1e-5, act="relu" if c["relu"] else None
    )
    return out, sm, si, rm, rv


@FAST
@given(bn_case)
def test_batchnorm_forward_matches_twin(kernel, c):
    _, x, gamma, beta, rm, rv = _data(c)
    got = _forward(engine, c, x, gamma, beta, rm, rv)
    want = _forward(ref, c, x, gamma, beta, rm, rv)
    assert got[0].shape == x.shape and got[0].dtype == np.float32
    for a, b in zip(got, want):
        _close(a, b)
    if not c["training"]:  # eval: the running statistics are read, never written
        np.testing.assert_array_equal(got[3], rm)
        np.testing.assert_array_equal(got[4], rv)


@FAST
@given(bn_case, st.booleans(), st.booleans())
def test_batchnorm_backward_matches_twin(kernel, c, need_dx, accumulate):
    rng, x, gamma, beta, rm, rv = _data(c)
    act = "relu" if c["relu"] else None
    y, sm, si, _, _ = _forward(ref, c, x, gamma, beta, rm, rv)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    res = []
    for be in (engine, ref):
        dg, db = np.full(x.shape[1], 0.5, np.float32), np.full(x.shape[1], -0.25, np.float32)
        res.append(
            be.batchnorm_backward(
                dy,
                x,
                gamma,
                sm,
                si,
                training=c["training"],
                act=act,
                y=y,
                dgamma=dg,
                dbeta=db,
                need_dx=need_dx,
                accumulate=accumulate,
            )
        )
    for a, b in zip(*res):
        if b is None:
            assert a is None
        else:
            _close(a, b, rtol=1e-4 if c["offset"] == 100.0 else 2e-5)  # x - mean cancels at |x| ~ 100


@pytest.mark.parametrize("shape", [(64, 32, 28, 28), (3, 130), (2, 70, 600), (64, 128, 7, 7)])
def test_large_shapes_match_twin(kernel, shape):
    """The chunked lane sums (S > 512), the channel blocks of (N, C) input (C > 64) and the
    trunk's shapes."""
    c = {"training": True, "relu": True, "momentum": 0.1}
    rng = np.random.default_rng(len(shape))
    x = (rng.standard_normal(shape) * 2 + 5).astype(np.float32)
    C = shape[1]
    gamma, beta = rng.uniform(0.5, 1.5, C).astype(np.float32), rng.standard_normal(C).astype(np.float32)
    rm, rv = np.zeros(C, np.float32), np.ones(C, np.float32)
    got = _forward(engine, c, x, gamma, beta, rm, rv)
    want = _forward(ref, c, x, gamma, beta, rm, rv)
    for a, b in zip(got, want):
        _close(a, b)
    dy = rng.standard_normal(shape).astype(np.float32)
    args = (dy, x, gamma, want[1], want[2])
    for a, b in zip(
        engine.batchnorm_backward(*args, act="relu", y=want[0]),
        ref.batchnorm_backward(*args, act="relu", y=want[0]),
    ):
        _close(a, b)


def test_statistics_survive_a_large_offset():
    """A mean 1e4 times the standard deviation: the variance stays accurate (shifted sums)."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((8, 2, 9, 9)) + 1e4).astype(np.float32)
    rm, rv = np.zeros(2, np.float32), np.ones(2, np.float32)
    _, sm, si = engine.batchnorm_forward(
        x, np.ones(2, np.float32), np.zeros(2, np.float32), rm, rv, True, 1.0
    )
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(sm, x64.mean(axis=(0, 2, 3)), rtol=1e-7)
    np.testing.assert_allclose(si, 1 / np.sqrt(x64.var(axis=(0, 2, 3)) + 1e-5), rtol=1e-5)
    np.testing.assert_allclose(rv, x64.var(axis=(0, 2, 3), ddof=1), rtol=1e-5)


def test_forward_in_place_and_backward_into_dy():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3, 5, 5)).astype(np.float32)
    g, b = np.ones(3, np.float32), np.zeros(3, np.float32)
    want, sm, si = engine.batchnorm_forward(x, g, b, np.zeros(3, np.float32), np.ones(3, np.float32), True)
    xc = x.copy()
    out, _, _ = engine.batchnorm_forward(
        xc, g, b, np.zeros(3, np.float32), np.ones(3, np.float32), True, out=xc
    )
    assert out is xc
    np.testing.assert_array_equal(out, want)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    dx_want, _, _ = engine.batchnorm_backward(dy, x, g, sm, si)
    dx, _, _ = engine.batchnorm_backward(dy, x, g, sm, si, dx=dy)
    assert dx is dy
    np.testing.assert_array_equal(dx, dx_want)


@pytest.mark.parametrize("be", BACKENDS)
def test_empty_batch_in_eval(be):
    x = np.zeros((0, 3, 4, 4), np.float32)
    rm, rv = np.arange(3, dtype=np.float32), np.full(3, 4.0, np.float32)
    out, sm, si = be.batchnorm_forward(
        x, np.ones(3, np.float32), np.zeros(3, np.float32), rm, rv, False, eps=0.0 + 1e-5
    )
    assert out.shape == x.shape
    np.testing.assert_allclose(sm, rm)
    np.testing.assert_allclose(si, 1 / np.sqrt(4.0 + 1e-5), rtol=1e-6)
    dx, dg, db = be.batchnorm_backward(x, x, np.ones(3, np.float32), sm, si, training=False)
    assert dx.shape == x.shape and not dg.any() and not db.any()


@pytest.mark.parametrize(
    "F,w_shape,bias", [(4, (4, 3, 3, 3), True), (5, (5, 7), False), (1, (1, 1, 1, 1), True)]
)
def test_fold_matches_twin_and_the_layer_pair(F, w_shape, bias):
    rng = np.random.default_rng(F)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(F).astype(np.float32) if bias else None
    gamma, beta = rng.uniform(0.5, 2, F).astype(np.float32), rng.standard_normal(F).astype(np.float32)
    rm, rv = rng.standard_normal(F).astype(np.float32), rng.uniform(0.1, 3, F).astype(np.float32)
    wf, bf = engine.batchnorm_fold(w, b, gamma, beta, rm, rv, 1e-3)
    rwf, rbf = ref.batchnorm_fold(w, b, gamma, beta, rm, rv, 1e-3)
    _close(wf, rwf, 1e-6)
    _close(bf, rbf, 1e-6)
    if len(w_shape) == 2:  # a dense layer then the batch norm, in float64
        x = rng.standard_normal((6, w_shape[1]))
        z = x @ w.T.astype(np.float64) + (0 if b is None else b)
        want = (z - rm) / np.sqrt(rv.astype(np.float64) + 1e-3) * gamma + beta
        _close(x @ wf.T.astype(np.float64) + bf, want, 1e-5)


def test_results_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 8, 20, 20)).astype(np.float32)
    g, b = np.ones(8, np.float32), np.zeros(8, np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    prev = engine.get_num_threads()
    outs = []
    try:
        for t in (1, 2, 3):
            engine.set_num_threads(t)
            y, sm, si = engine.batchnorm_forward(
                x, g, b, np.zeros(8, np.float32), np.ones(8, np.float32), True
            )
            outs.append((y, sm, si) + engine.batchnorm_backward(dy, x, g, sm, si, act="relu", y=y))
    finally:
        engine.set_num_threads(prev)
    for other in outs[1:]:
        for a, o in zip(outs[0], other):
            np.testing.assert_array_equal(a, o)


# ------------------------------------------------------------------------------- bad input


def _args(C=3):
    x = np.ones((2, C, 3, 3), np.float32)
    x[0] = 2
    return x, np.ones(C, np.float32), np.zeros(C, np.float32), np.zeros(C, np.float32), np.ones(C, np.float32)


@pytest.mark.parametrize("be", BACKENDS)
@pytest.mark.parametrize(
    "change,exc,match",
    [
        ({"x": np.ones((1, 3, 1, 1), np.float32)}, ValueError, "Expected more than 1 value per channel"),
        ({"x": np.ones((1, 3), np.float32)}, ValueError, "Expected more than 1 value per channel"),
        ({"x": np.ones(6, np.float32)}, ValueError, "x must be 2-D"),
        ({"gamma": np.ones(4, np.float32)}, ValueError, "gamma must have shape"),
        ({"beta": np.ones((3, 1), np.float32)}, ValueError, "beta must be 1-D"),
        ({"running_var": np.ones(3, np.float64)}, TypeError, "running_var must have dtype float32"),
        ({"momentum": -0.1}, ValueError, "momentum must be in"),
        ({"momentum": 1.5}, ValueError, "momentum must be in"),
        ({"momentum": "0.1"}, TypeError, "momentum must be a number"),
        ({"eps": 0.0}, ValueError, "eps must be >"),
        ({"eps": float("nan")}, ValueError, "eps must be finite"),
        ({"act": "tanh"}, ValueError, "act must be"),
        ({"act": "leaky_relu"}, ValueError, "act must be None, 'identity' or 'relu' for a batch norm"),
        ({"training": 1}, TypeError, "training must be a bool"),
        ({"out": np.ones((2, 3, 3, 3), np.float64)}, TypeError, "out must have dtype"),
        ({"save_mean": np.ones(2, np.float32)}, ValueError, "save_mean must have shape"),
    ],
)
def test_forward_bad_input(be, change, exc, match):
    x, g, b, rm, rv = _args()
    kw = dict(x=x, gamma=g, beta=b, running_mean=rm, running_var=rv, training=True)
    kw.update(change)
    with pytest.raises(exc, match=match):
        be.batchnorm_forward(**kw)


@pytest.mark.parametrize("be", BACKENDS)
def test_forward_rejects_overlapping_outputs(be):
    x, g, b, rm, rv = _args()
    with pytest.raises(ValueError, match="must not share memory"):
        be.batchnorm_forward(x, g, b, rm, rv, True, save_mean=rm)
    with pytest.raises(ValueError, match="must not share memory"):
        be.batchnorm_forward(x, g, b, rm, rm, True)


@pytest.mark.parametrize("be", BACKENDS)
def test_backward_bad_input(be):
    x, g, b, rm, rv = _args()
    y, sm, si = be.batchnorm_forward(x, g, b, rm, rv, True)
    with pytest.raises(ValueError, match="y .the forward output. is required"):
        be.batchnorm_backward(x, x, g, sm, si, act="relu")
    with pytest.raises(ValueError, match="dy must have the shape of x"):
        be.batchnorm_backward(x[:1], x, g, sm, si)
    with pytest.raises(ValueError, match="save_invstd must have shape"):
        be.batchnorm_backward(x, x, g, sm, si[:2])
    with pytest.raises(TypeError, match="need_dx must be a bool"):
        be.batchnorm_backward(x, x, g, sm, si, need_dx=None)
    with pytest.raises(ValueError, match="dgamma must have shape"):
        be.batchnorm_backward(x, x, g, sm, si, dgamma=np.zeros(4, np.float32))


@pytest.mark.parametrize("be", BACKENDS)
def test_fold_bad_input(be):
    w = np.ones((3, 2, 3, 3), np.float32)
    v = np.ones(3, np.float32)
    with pytest.raises(ValueError, match="running_var must have shape"):
        be.batchnorm_fold(w, v, v, v, v, np.ones(2, np.float32))
    with pytest.raises(ValueError, match="eps must be >"):
        be.batchnorm_fold(w, None, v, v, v, v, eps=-1.0)
    with pytest.raises(ValueError, match="w_out must have shape"):
        be.batchnorm_fold(w, None, v, v, v, v, w_out=np.ones((3, 18), np.float32))


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # the twin's Inf - Inf
@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("training", [True, False])
def test_nonfinite_input_matches_twin(kernel, bad, training):
    """A NaN or Inf in a channel makes that channel's training statistics NaN (never a clamped
    variance of 0, i.e. a finite 1/sqrt(eps)), as in the twin and torch; in eval mode the
    input gradient does not read x, so it stays finite."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3, 5, 5)).astype(np.float32)
    x[2, 1, 3, 4] = bad
    gamma, beta = np.ones(3, np.float32), np.zeros(3, np.float32)
    rm, rv = np.zeros(3, np.float32), np.ones(3, np.float32)
    c = {"training": training, "relu": False, "momentum": 0.1}
    got = _forward(engine, c, x, gamma, beta, rm, rv)
    want = _forward(ref, c, x, gamma, beta, rm, rv)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        fin = np.isfinite(b)
        _close(a[fin], b[fin])
    if training:
        assert np.isnan(got[0][:, 1]).all() and np.isnan(got[4][1]) and np.isfinite(got[0][:, [0, 2]]).all()
    dy = rng.standard_normal(x.shape).astype(np.float32)
    args = (dy, x, gamma, want[1], want[2])
    for a, b in zip(
        engine.batchnorm_backward(*args, training=training), ref.batchnorm_backward(*args, training=training)
    ):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        fin = np.isfinite(b)
        _close(a[fin], b[fin])
    if not training:
        assert np.isfinite(engine.batchnorm_backward(*args, training=False)[0]).all()


@pytest.mark.skipif(
    not (engine.cpu_features()["avx2"] and engine.cpu_features()["fma"]), reason="CPU lacks AVX2 + FMA"
)
@pytest.mark.parametrize("shape", [(3, 4, 23, 29), (2, 3, 28, 28), (5, 2, 1100), (4, 3, 16), (2, 2, 7)])
@pytest.mark.parametrize("relu", [False, True])
def test_avx2_sums_bitwise_equal_to_portable(shape, relu):
    """The AVX2 bodies' intrinsic sums keep the portable loops' lanes and order (chunks of 512
    values, 16 float lanes, tails in double): bitwise the same statistics and gradients."""
    rng = np.random.default_rng(len(shape) + shape[-1])
    x = (rng.standard_normal(shape) * 3 + 2).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    C = shape[1]
    gamma, beta = rng.random(C).astype(np.float32) + 0.5, rng.standard_normal(C).astype(np.float32)
    outs = {}
    for kern in ("generic", "avx2"):
        prev = engine._set_gemm_kernel(kern)
        try:
            rm, rv = np.zeros(C, np.float32), np.ones(C, np.float32)
            y, sm, si = engine.batchnorm_forward(
                x, gamma, beta, rm, rv, True, 0.1, 1e-5, act="relu" if relu else None
            )
            g = engine.batchnorm_backward(
                dy, x, gamma, sm, si, training=True, act="relu" if relu else None, y=y if relu else None
            )
            outs[kern] = (y, sm, si, rm, rv) + tuple(g)
        finally:
            engine._set_gemm_kernel(prev)
    for a, b in zip(outs["generic"], outs["avx2"]):
        np.testing.assert_array_equal(a, b)
