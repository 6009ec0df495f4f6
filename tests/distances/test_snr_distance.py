"""SNRDistance: values vs an independent float64 formula (numpy's var), gradients vs central
finite differences in float64 (kernel and class, through normalization and power), errors."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from _helpers import central_diff
from mantissa_embed.distances import SNRDistance, _numpy_ops as O


def _fd(f, x, h=1e-6):
    return central_diff(f, x, h)


def _emb(seed, n, d):
    return np.random.default_rng(seed).standard_normal((n, d))


def _snr64(q, r):
    """Independent: torch.var semantics (unbiased) with numpy's var on the (N, M, D) differences."""
    return np.var(q[:, None, :] - r[None, :, :], axis=2, ddof=1) / np.var(q, axis=1, ddof=1)[:, None]


def _indep(q, r, power, normalize, p=2):
    if normalize:
        q = q / np.linalg.norm(q, ord=p, axis=1, keepdims=True)
        r = r / np.linalg.norm(r, ord=p, axis=1, keepdims=True)
    return _snr64(q, r) ** power


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 6), m=st.integers(1, 6), d=st.integers(2, 6))
def test_snr_kernel_float64(seed, n, m, d):
    q, r, w = _emb(seed, n, d), _emb(seed + 1, m, d), _emb(seed + 2, n, m)
    # SNR divides by var(q): with d=2 that is (q0 - q1)^2 / 2, and near 0 the gradient (~1/var^2)
    # is too large for central differences to resolve
    assume(np.var(q, axis=1, ddof=1).min() > 1e-2)
    mat, a = O.snr_forward(q, r, dtype=np.float64)
    np.testing.assert_allclose(mat, _snr64(q, r), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(a, np.var(q, axis=1, ddof=1), rtol=1e-12)
    gq, gr = O.snr_backward(q, r, w, dtype=np.float64)
    np.testing.assert_allclose(gq, _fd(lambda z: np.sum(w * _snr64(z, r)), q), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gr, _fd(lambda z: np.sum(w * _snr64(q, z)), r), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 5),
    m=st.one_of(st.none(), st.integers(1, 5)),
    d=st.integers(2, 5),
    power=st.sampled_from([1, 2, 0.5]),
    normalize=st.booleans(),
    p=st.sampled_from([2, 1]),
)
def test_class_values_and_grad_vs_fd(backend, seed, n, m, d, power, normalize, p):
    q = _emb(seed, n, d).astype(np.float32).astype(np.float64)
    r = None if m is None else _emb(seed + 1, m, d).astype(np.float32).astype(np.float64)
    rr = q if r is None else r
    if power < 1:  # sqrt is not differentiable at 0 (the diagonal of the batch)
        assume(r is not None)
    if p == 1 and normalize:  # the L1 norm has a kink at a zero coordinate
        assume(np.abs(q).min() > 1e-3 and np.abs(rr).min() > 1e-3)
    w = _emb(seed + 2, n, rr.shape[0])
    snr = SNRDistance(power=power, normalize_embeddings=normalize, p=p, backend=backend)
    mat = snr(q.astype(np.float32), None if r is None else r.astype(np.float32))
    want = _indep(q, rr, power, normalize, p)
    assert mat.dtype == np.float32 and mat.shape == want.shape
    np.testing.assert_allclose(mat, want, rtol=1e-4, atol=1e-5)
    dq, dr = snr.backward(w.astype(np.float32))
    if r is None:
        assert dr is None
        fd = _fd(lambda z: np.sum(w * _indep(z, z, power, normalize, p)), q)
    else:
        fd = _fd(lambda z: np.sum(w * _indep(z, r, power, normalize, p)), q)
        fdr = _fd(lambda z: np.sum(w * _indep(q, z, power, normalize, p)), r)
        np.testing.assert_allclose(dr, fdr, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(fdr).max()))
    np.testing.assert_allclose(dq, fd, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(fd).max()))


def test_not_symmetric_and_zero_diagonal():
    x = _emb(0, 4, 6).astype(np.float32)
    mat = SNRDistance()(x)
    assert np.all(np.diag(mat) == 0)
    assert not np.allclose(mat, mat.T)


def test_pairwise_distance():
    x, y = _emb(1, 5, 4), _emb(2, 5, 4)
    got = SNRDistance().pairwise_distance(x, y)
    np.testing.assert_allclose(got, np.var(x - y, axis=1, ddof=1) / np.var(x, axis=1, ddof=1), rtol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="is_inverted"):
        SNRDistance(is_inverted=True)
    with pytest.raises(ValueError, match="power"):
        SNRDistance(power=-1)
    with pytest.raises(ValueError, match="at least 2 columns"):
        SNRDistance()(np.ones((3, 1), np.float32))
    x = _emb(3, 3, 4).astype(np.float32)
    x[1] = 0.5  # constant row: zero variance
    with pytest.raises(ValueError, match="row 1 has zero variance"):
        SNRDistance(normalize_embeddings=False)(x)
    with pytest.raises(ValueError, match="query_emb"):
        SNRDistance()(np.full((2, 3), np.nan, np.float32))


def test_empty():
    snr = SNRDistance()
    mat = snr(np.zeros((0, 3), np.float32), _emb(0, 2, 3).astype(np.float32))
    assert mat.shape == (0, 2)
    dq, dr = snr.backward(mat)
    assert dq.shape == (0, 3) and not dr.any()
