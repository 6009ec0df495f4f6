"""engine.softmax_nll_fast_forward / softmax_nll_fast_backward (softmax_losses_fast.c: one vectorized float
exp per entry) against their numpy twins (mantissa_embed._reference, float64) and against the
double-exp kernels they replace in NCALoss / InstanceLoss / NPairsLoss; bitwise reproducibility
for a fixed thread count; the fallbacks for positives far below the row maximum and large losses."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mantissa_embed
from _helpers import similarity_batch
from mantissa_embed import _reference as R, engine as E


def _close(a, b, rtol=2e-5):
    b = np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.abs(b).max(initial=0))))


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 40),
    m=st.integers(0, 300),
    k=st.integers(1, 6),
    square=st.booleans(),
    inverted=st.booleans(),
    scale=st.sampled_from([1.0, 4.0, 64.0, 500.0]),
    max_loss=st.sampled_from([np.inf, 104.0, 3.0]),
    spread=st.sampled_from([1.0, 4.0]),
)
def test_fast_softmax_nll_matches_twin(seed, n, m, k, square, inverted, scale, max_loss, spread):
    sim, lab, rlab = similarity_batch(seed, n, m, k, square, spread)
    kw = dict(exclude_self=square, inverted=inverted)
    la, ea, va = E.softmax_nll_fast_forward(sim, lab, rlab, scale, max_loss=max_loss, **kw)
    lb, eb, vb = R.softmax_nll_fast_forward(sim, lab, rlab, scale, max_loss=max_loss, **kw)
    assert la.dtype == np.float32 and ea.dtype == np.float64 and va.dtype == bool
    # rows at the validity threshold may decide differently by rounding: compare the others
    with np.errstate(invalid="ignore"):
        near = np.isfinite(eb[:, 1]) & (
            np.abs(eb[:, 0] - eb[:, 1] - max_loss) < 1e-3 * max(1, scale * spread)
        )
    assert np.array_equal(va[~near], vb[~near])
    _close(la[~near], lb[~near])
    tol = 1e-6 * max(1.0, scale * spread)
    np.testing.assert_allclose(ea, eb, rtol=1e-6, atol=tol)
    w = np.random.default_rng(seed).uniform(0, 1, sim.shape[0]).astype(np.float32) * vb
    _close(
        E.softmax_nll_fast_backward(sim, lab, rlab, eb, w, scale, **kw),
        R.softmax_nll_fast_backward(sim, lab, rlab, eb, w, scale, **kw),
    )
    # and against the double-exp C kernel with the same lse
    _close(
        E.softmax_nll_fast_backward(sim, lab, rlab, eb, w, scale, **kw),
        E.softmax_nll_backward(sim, lab, rlab, eb, w, scale, **kw),
    )


@pytest.mark.parametrize("inverted", [True, False])
def test_positives_far_below_the_maximum_and_large_losses(inverted):
    """Rows whose positives sit 100s of logits below the maximum (the second shifted pass, the
    two-exp gradient) agree with the float64 twin."""
    rng = np.random.default_rng(3)
    n, m = 12, 70
    sim = rng.uniform(-1, 1, (n, m)).astype(np.float32)
    lab = rng.integers(0, 3, n)
    rlab = rng.integers(0, 3, m)
    sgn = 1.0 if inverted else -1.0
    for i in range(0, n, 2):  # positives pushed far away from the query
        sim[i, rlab == lab[i]] -= sgn * 3.0
    for scale in (30.0, 100.0):
        a = E.softmax_nll_fast_forward(sim, lab, rlab, scale, inverted=inverted)
        b = R.softmax_nll_fast_forward(sim, lab, rlab, scale, inverted=inverted)
        assert np.array_equal(a[2], b[2])
        _close(a[0], b[0])
        np.testing.assert_allclose(a[1], b[1], rtol=1e-6, atol=1e-6 * scale)
        w = np.ones(n, np.float32)
        _close(
            E.softmax_nll_fast_backward(sim, lab, rlab, b[1], w, scale, inverted=inverted),
            R.softmax_nll_fast_backward(sim, lab, rlab, b[1], w, scale, inverted=inverted),
        )


def test_bitwise_reproducible_for_a_thread_count():
    sim, lab, rlab = similarity_batch(7, 300, 300, 5, True)
    old = mantissa_embed.get_num_threads()
    try:
        outs = []
        for _ in range(2):
            mantissa_embed.set_num_threads(2)
            la, ea, va = E.softmax_nll_fast_forward(sim, lab, rlab, 64.0, exclude_self=True)
            g = E.softmax_nll_fast_backward(
                sim, lab, rlab, ea, np.ones(300, np.float32), 64.0, exclude_self=True
            )
            outs.append((la, ea, va, g))
        mantissa_embed.set_num_threads(1)
        la1, ea1, va1 = E.softmax_nll_fast_forward(sim, lab, rlab, 64.0, exclude_self=True)
        g1 = E.softmax_nll_fast_backward(
            sim, lab, rlab, ea1, np.ones(300, np.float32), 64.0, exclude_self=True
        )
    finally:
        mantissa_embed.set_num_threads(old)
    for x, y in zip(outs[0], outs[1]):
        assert np.array_equal(x, y)
    # rows are independent: the thread count does not change any value
    for x, y in zip(outs[0], (la1, ea1, va1, g1)):
        assert np.array_equal(x, y)


def test_argument_errors_match_the_twin():
    sim, lab, rlab = similarity_batch(0, 4, 5, 2, False)
    for mod in (E, R):
        with pytest.raises(ValueError, match="sim"):
            mod.softmax_nll_fast_forward(sim[None], lab, rlab)
        with pytest.raises(ValueError, match="labels"):
            mod.softmax_nll_fast_forward(sim, lab[:3], rlab)
        with pytest.raises(ValueError, match="weights"):
            mod.softmax_nll_fast_backward(sim, lab, rlab, np.zeros((4, 2)), np.ones(3, np.float32))
