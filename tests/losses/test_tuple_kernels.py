"""engine.angular_loss_forward / angular_loss_backward (C) against their numpy twins
(mantissa_embed._reference), on hypothesis shapes; bitwise reproducibility across thread counts;
argument checks shared by both backends."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import _reference as ref, engine

BACKENDS = [engine, ref]


def _args(seed, n, m, p, k, scale=1.0):
    rng = np.random.default_rng(seed)
    A = (scale * rng.standard_normal((n, m))).astype(np.float32)
    B = (scale * rng.standard_normal((m, m))).astype(np.float32)
    c = (scale * rng.standard_normal(p)).astype(np.float32)
    a = rng.integers(0, n, p) if n else np.zeros(0, np.int64)
    pp = rng.integers(0, m, p) if m else np.zeros(0, np.int64)
    return A, B, c, a, pp, rng.integers(0, k, n), rng.integers(0, k, m)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 12),
    m=st.integers(1, 12),
    p=st.integers(0, 40),
    k=st.integers(1, 4),
    scale=st.sampled_from([0.1, 1.0, 30.0]),
)
def test_engine_matches_twin(seed, n, m, p, k, scale):
    args = _args(seed, n, m, p, k, scale)
    le, lr = engine.angular_loss_forward(*args), ref.angular_loss_forward(*args)
    assert le.dtype == np.float32 and le.shape == (p,) and np.isfinite(le).all()
    np.testing.assert_allclose(le, lr, rtol=1e-5, atol=1e-5)
    # the loss is log(1 + sum exp) over the anchor's negatives, in float64
    A, B, c, a, pp, lab, rlab = args
    for i in range(p):
        x = [A[a[i], j] + float(B[pp[i], j]) - c[i] for j in range(m) if rlab[j] != lab[a[i]]]
        want = np.logaddexp.reduce(np.array([0.0] + x, dtype=np.float64))
        assert le[i] == pytest.approx(want, rel=1e-5, abs=1e-5)
    dl = np.random.default_rng(seed + 1).random(p).astype(np.float32)
    ge = engine.angular_loss_backward(*args, le, dl)
    gr = ref.angular_loss_backward(*args, le, dl)
    for x, y in zip(ge, gr):
        assert x.dtype == np.float32
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(y).max(initial=0)))


@pytest.mark.parametrize("mod", BACKENDS)
def test_backward_is_the_gradient(mod):
    """Finite differences (float64 twin formula) of sum(dl * losses) w.r.t. A, B and c."""
    A, B, c, a, p, lab, rlab = _args(3, 4, 5, 9, 2)
    dl = np.random.default_rng(9).random(9)

    def f(A_, B_, c_):
        tot = 0.0
        for i in range(len(c_)):
            x = [A_[a[i], j] + B_[p[i], j] - c_[i] for j in range(5) if rlab[j] != lab[a[i]]]
            tot += dl[i] * np.logaddexp.reduce(np.array([0.0] + x))
        return tot

    losses = mod.angular_loss_forward(A, B, c, a, p, lab, rlab)
    dA, dB, dc = mod.angular_loss_backward(A, B, c, a, p, lab, rlab, losses, dl.astype(np.float32))
    base = [A.astype(np.float64), B.astype(np.float64), c.astype(np.float64)]
    for which, got in enumerate((dA, dB, dc)):
        fd = np.zeros(base[which].shape)
        for idx in np.ndindex(fd.shape):
            plus = [b.copy() for b in base]
            minus = [b.copy() for b in base]
            plus[which][idx] += 1e-6
            minus[which][idx] -= 1e-6
            fd[idx] = (f(*plus) - f(*minus)) / 2e-6
        np.testing.assert_allclose(got, fd, rtol=1e-3, atol=1e-5)


def test_bitwise_identical_for_any_thread_count():
    args = _args(0, 300, 300, 3000, 20)
    dl = np.random.default_rng(1).random(3000).astype(np.float32)
    old = engine.get_num_threads()
    outs = []
    try:
        for t in (1, 2, 3):
            engine.set_num_threads(t)
            losses = engine.angular_loss_forward(*args)
            outs.append((losses,) + engine.angular_loss_backward(*args, losses, dl))
    finally:
        engine.set_num_threads(old)
    for o in outs[1:]:
        for x, y in zip(o, outs[0]):
            assert np.array_equal(x, y)


@pytest.mark.parametrize("mod", BACKENDS)
def test_argument_checks(mod):
    A, B, c, a, p, lab, rlab = _args(0, 4, 5, 6, 2)
    with pytest.raises(ValueError, match="B"):
        mod.angular_loss_forward(A, B[:4], c, a, p, lab, rlab)
    with pytest.raises(ValueError, match="a"):
        mod.angular_loss_forward(A, B, c, a + 10, p, lab, rlab)
    with pytest.raises(ValueError, match="p"):
        mod.angular_loss_forward(A, B, c, a, p[:3], lab, rlab)
    with pytest.raises(TypeError, match="labels"):
        mod.angular_loss_forward(A, B, c, a, p, lab.astype(np.float32), rlab)
    with pytest.raises(ValueError, match="ref_labels"):
        mod.angular_loss_forward(A, B, c, a, p, lab, rlab[:2])
    with pytest.raises(ValueError, match="dlosses"):
        mod.angular_loss_backward(A, B, c, a, p, lab, rlab, c, c[:2])
    # empty inputs are fine
    e = np.zeros(0, np.int64)
    assert mod.angular_loss_forward(A, B, c[:0], e, e, lab, rlab).shape == (0,)
    dA, dB, dc = mod.angular_loss_backward(A, B, c[:0], e, e, lab, rlab, c[:0], c[:0])
    assert not dA.any() and not dB.any() and dc.shape == (0,)
