"""Ranking C kernels (PNP ranks, DynamicSoftMargin all-triplets passes) against their numpy twins
in mantissa_embed._reference, on hypothesis shapes; bitwise identical for 1 and 2 threads; same
argument errors."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import _reference as R, engine as E


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 40),
    k=st.integers(1, 5),
    anneal=st.sampled_from([0.01, 0.1, 1.0]),
)
def test_pnp_twin(seed, n, k, anneal):
    rng = np.random.default_rng(seed)
    s = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    y = rng.integers(0, k, n)
    _close(E.pnp_rank_forward(s, y, anneal), R.pnp_rank_forward(s, y, anneal))
    g = rng.standard_normal((n, n))
    _close(E.pnp_rank_backward(g, s, y, anneal), R.pnp_rank_backward(g, s, y, anneal))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 30),
    m=st.one_of(st.none(), st.integers(0, 30)),
    k=st.integers(1, 5),
    nb=st.sampled_from([10, 3]),
    mom=st.sampled_from([1.0, 0.01]),
)
def test_dsm_twin(seed, n, m, k, nb, mom):
    rng = np.random.default_rng(seed)
    same = m is None
    M = n if same else m
    mat = rng.uniform(0, 2.2, (n, M)).astype(np.float32)
    y = rng.integers(0, k, n)
    ry = y if same else rng.integers(0, k, M)
    args = (mat, y, ry, same, -2.0, 4.0 / nb)
    ue, ce = E.dsm_triplet_hist(*args, nb, mom)
    ur, cr = R.dsm_triplet_hist(*args, nb, mom)
    assert ce == cr
    _close(ue, ur)
    cdf = np.cumsum(rng.uniform(0, 1, nb))
    te, be = E.dsm_triplet_loss(*args, cdf)
    tr, br = R.dsm_triplet_loss(*args, cdf)
    assert te == pytest.approx(tr, rel=1e-12, abs=1e-12)
    _close(be, br)
    gu = rng.standard_normal(nb)
    np.testing.assert_allclose(
        E.dsm_triplet_backward(*args, cdf, gu, 0.3, mom),
        R.dsm_triplet_backward(*args, cdf, gu, 0.3, mom),
        rtol=1e-5,
        atol=1e-6,
    )


def test_thread_count_invariance():
    rng = np.random.default_rng(0)
    n = 150
    s = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    y = rng.integers(0, 4, n)
    cdf = np.cumsum(np.full(10, 0.1))
    gu = rng.standard_normal(10)
    d = rng.uniform(0, 2, (n, n)).astype(np.float32)
    old = E.get_num_threads()
    outs = []
    try:
        for t in (1, 2):
            E.set_num_threads(t)
            args = (d, y, y, True, -2.0, 0.4)
            outs.append(
                (
                    E.pnp_rank_forward(s, y, 0.05),
                    E.pnp_rank_backward(s.astype(np.float64), s, y, 0.05),
                    E.dsm_triplet_hist(*args, 10, 0.5)[0],
                    E.dsm_triplet_loss(*args, cdf)[1],
                    E.dsm_triplet_backward(*args, cdf, gu, 0.1, 0.5),
                )
            )
    finally:
        E.set_num_threads(old)
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mod", [E, R], ids=["engine", "numpy"])
def test_kernel_argument_errors(mod):
    s = np.zeros((3, 3), np.float32)
    y = np.zeros(3, np.int64)
    with pytest.raises(ValueError, match="sim"):
        mod.pnp_rank_forward(np.zeros((3, 4), np.float32), y, 0.1)
    with pytest.raises(ValueError, match="labels"):
        mod.pnp_rank_forward(s, y[:2], 0.1)
    with pytest.raises(TypeError, match="labels"):
        mod.pnp_rank_forward(s, y.astype(float), 0.1)
    with pytest.raises(ValueError, match="anneal"):
        mod.pnp_rank_forward(s, y, 0.0)
    with pytest.raises(ValueError, match="drk"):
        mod.pnp_rank_backward(np.zeros((2, 2)), s, y, 0.1)
    with pytest.raises(ValueError, match="ref_labels"):
        mod.dsm_triplet_hist(s, y, y[:2], False, -2.0, 0.4, 10, 0.5)
    with pytest.raises(ValueError, match="delta"):
        mod.dsm_triplet_hist(s, y, y, True, -2.0, -0.4, 10, 0.5)
    with pytest.raises(ValueError, match="num_bins"):
        mod.dsm_triplet_hist(s, y, y, True, -2.0, 0.4, 0, 0.5)
    with pytest.raises(ValueError, match="g_u"):
        mod.dsm_triplet_backward(s, y, y, True, -2.0, 0.4, np.ones(10), np.ones(3), 1.0, 0.5)
    with pytest.raises(ValueError, match="exclude_self"):
        mod.dsm_triplet_hist(np.zeros((3, 2), np.float32), y, y[:2], True, -2.0, 0.4, 10, 0.5)
