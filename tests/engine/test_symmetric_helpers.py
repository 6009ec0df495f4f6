"""engine.add_transpose_forward / gram_forward (distance.c: the same-set helpers of the similarity
matrices) against their numpy twins, exact symmetry, bitwise reproducibility for a fixed thread
count, the argument checks; and DotProductSimilarity / CosineSimilarity's same-set paths (one Gram,
one backward product of dS + dS^T) against the separate-reference computation."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mantissa_embed
from mantissa_embed import _reference as R, engine as E
from mantissa_embed.distances import CosineSimilarity, DotProductSimilarity


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(0, 400))
def test_add_transpose_matches_twin(seed, n):
    a = np.random.default_rng(seed).standard_normal((n, n)).astype(np.float32)
    out = E.add_transpose_forward(a)
    assert out.dtype == np.float32 and out.shape == (n, n)
    assert np.array_equal(out, R.add_transpose_forward(a))  # one float add per entry: exact
    assert np.array_equal(out, out.T)
    buf = np.full((n, n), np.nan, np.float32)
    assert E.add_transpose_forward(a, out=buf) is buf and np.array_equal(buf, out)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(0, 600), d=st.integers(0, 70))
def test_gram_matches_twin(seed, n, d):
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    g = E.gram_forward(x)
    assert g.dtype == np.float32 and g.shape == (n, n)
    assert np.array_equal(g, g.T)
    ref = R.gram_forward(x)
    # float32 accumulation over d terms of size ~1
    np.testing.assert_allclose(g, ref, rtol=1e-5, atol=1e-5 * max(1, d))
    np.testing.assert_allclose(
        g, x.astype(np.float64) @ x.T.astype(np.float64), rtol=1e-5, atol=1e-5 * max(1, d)
    )


@pytest.mark.parametrize("n", [255, 256, 700, 1024])
def test_symmetric_helpers_bitwise_for_fixed_threads(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 128)).astype(np.float32)
    a = rng.standard_normal((n, n)).astype(np.float32)
    old = mantissa_embed.get_num_threads()
    try:
        res = {}
        for nt in (1, 2, 3):
            mantissa_embed.set_num_threads(nt)
            g1, g2 = E.gram_forward(x), E.gram_forward(x)
            assert np.array_equal(g1, g2)
            res[nt] = (g1, E.add_transpose_forward(a))
        for nt in (2, 3):  # me_sgemm and the tile copies do not depend on the thread count
            assert np.array_equal(res[1][0], res[nt][0]) and np.array_equal(res[1][1], res[nt][1])
    finally:
        mantissa_embed.set_num_threads(old)


@pytest.mark.parametrize("mod", [E, R], ids=["engine", "numpy"])
def test_symmetric_helpers_checks(mod):
    with pytest.raises(ValueError, match="a must be square"):
        mod.add_transpose_forward(np.zeros((3, 4), np.float32))
    a = np.zeros((4, 4), np.float32)
    with pytest.raises(ValueError, match="share memory|overlap"):
        mod.add_transpose_forward(a, out=a)
    with pytest.raises(ValueError, match="out must have shape"):
        mod.add_transpose_forward(a, out=np.zeros((3, 3), np.float32))
    with pytest.raises(ValueError, match="x must be 2-D"):
        mod.gram_forward(np.zeros(4, np.float32))
    with pytest.raises(TypeError):
        mod.gram_forward(np.zeros((3, 2), np.float32), out=np.zeros((3, 3), np.float64))


@pytest.mark.parametrize("cls", [CosineSimilarity, DotProductSimilarity])
@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("power", [1, 2])
@pytest.mark.parametrize("n", [9, 300])
def test_same_set_paths_match_separate_reference(cls, backend, power, n):
    """ref_emb=None (Gram forward, one (dS + dS^T) x backward) equals the same batch passed as a
    separate reference (one SGEMM forward, two backward products) with dq + dr."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 16)).astype(np.float32)
    dmat = rng.standard_normal((n, n)).astype(np.float32)
    dist = cls(power=power, backend=backend)
    m_same, ctx_same = dist.forward_ctx(x)
    m_sep, ctx_sep = dist.forward_ctx(x, x.copy())
    np.testing.assert_allclose(m_same, m_sep, rtol=1e-5, atol=1e-5 * (1 if cls is CosineSimilarity else 16))
    assert np.array_equal(m_same, m_same.T)
    dq, dr = dist.backward(dmat, ctx_same)
    assert dr is None
    dq2, dr2 = dist.backward(dmat, ctx_sep)
    exp = dq2.astype(np.float64) + dr2
    np.testing.assert_allclose(dq, exp, rtol=1e-4, atol=1e-4 * float(np.abs(exp).max()))
    # and the cached call path
    dist(x)
    dq3, dr3 = dist.backward(dmat)
    assert dr3 is None and np.array_equal(dq3, dq)
