"""LpDistance for p != 2 (1, 3, inf, fractional): values vs an independent float64 formula,
gradients vs central finite differences in float64 (kernels and the class, through the Lp
normalization and ``power``)."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from _helpers import central_diff
from mantissa_embed.distances import LpDistance, _numpy_ops as O

INF = float("inf")
PS = [1, 1.5, 3, INF]


def _fd(f, x, h=1e-6):
    return central_diff(f, x, h)


def _emb(seed, n, d):
    return np.random.default_rng(seed).standard_normal((n, d))


def _pnorm64(x, p):
    """Independent: numpy's vector norm."""
    return np.linalg.norm(x, ord=p, axis=-1)


def _indep(q, r, p, power, normalize):
    if normalize:
        q = q / _pnorm64(q, p)[:, None]
        r = r / _pnorm64(r, p)[:, None]
    return _pnorm64(q[:, None, :] - r[None, :, :], p) ** power


def _norm_ok(x, p):
    """No kink of the Lp norm of the rows: no ~0 coordinate, no near-tie of the max for p=inf."""
    a = np.sort(np.abs(x), axis=-1)
    if np.any(a < 1e-3):
        return False
    return not (p == INF and x.shape[-1] > 1 and np.any(a[..., -1] - a[..., -2] < 1e-3))


def _smooth(q, r, p, same=False):
    """True when no entry of the distance matrix sits at a kink (the diagonal of ``same`` is
    exactly 0 whatever the input, so it is skipped)."""
    diff = q[:, None, :] - r[None, :, :]
    if same:
        off = ~np.eye(q.shape[0], dtype=bool)
        diff = diff[off]
    return _norm_ok(diff, p)


@pytest.mark.parametrize("p", PS)
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 5), m=st.integers(1, 5), d=st.integers(1, 5))
def test_cdist_kernel_grad_float64(p, seed, n, m, d):
    q, r, w = _emb(seed, n, d), _emb(seed + 1, m, d), _emb(seed + 2, n, m)
    assume(_smooth(q, r, p))
    dist = O.lp_cdist_forward(q, r, p, dtype=np.float64)
    np.testing.assert_allclose(dist, _pnorm64(q[:, None] - r[None], p), rtol=1e-12, atol=1e-12)
    gq, gr = O.lp_cdist_backward(q, r, dist, w, p, dtype=np.float64)
    np.testing.assert_allclose(
        gq, _fd(lambda z: np.sum(w * _pnorm64(z[:, None] - r[None], p)), q), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        gr, _fd(lambda z: np.sum(w * _pnorm64(q[:, None] - z[None], p)), r), rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("p", PS)
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 5), d=st.integers(1, 5))
def test_lp_normalize_grad_float64(p, seed, n, d):
    x, w = _emb(seed, n, d), _emb(seed + 1, n, d)
    assume(_norm_ok(x, p))
    y, nrm = O.lp_normalize_forward(x, p, dtype=np.float64)
    np.testing.assert_allclose(y, x / _pnorm64(x, p)[:, None], rtol=1e-12)
    g = O.lp_normalize_backward(w, x, nrm, p, dtype=np.float64)
    np.testing.assert_allclose(
        g, _fd(lambda z: np.sum(w * (z / _pnorm64(z, p)[:, None])), x), rtol=1e-5, atol=1e-6
    )


def test_lp_normalize_zero_row():
    """A zero row stays 0 (eps 1e-12) with gradient dy / 1e-12, as torch's normalize."""
    x = np.zeros((1, 3))
    y, nrm = O.lp_normalize_forward(x, 1, dtype=np.float64)
    assert not y.any()
    g = O.lp_normalize_backward(np.ones((1, 3)) * 1e-12, x, nrm, 1, dtype=np.float64)
    np.testing.assert_allclose(g, 1.0)


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 5),
    m=st.one_of(st.none(), st.integers(1, 5)),
    d=st.integers(1, 5),
    power=st.sampled_from([1, 2, 0.5]),
    normalize=st.booleans(),
)
def test_class_values_and_grad_vs_fd(p, backend, seed, n, m, d, power, normalize):
    q = _emb(seed, n, d).astype(np.float32).astype(np.float64)
    r = None if m is None else _emb(seed + 1, m, d).astype(np.float32).astype(np.float64)
    rr = q if r is None else r
    if normalize:
        assume(_norm_ok(q, p) and _norm_ok(rr, p))
        qn, rn = q / _pnorm64(q, p)[:, None], rr / _pnorm64(rr, p)[:, None]
    else:
        qn, rn = q, rr
    assume(_smooth(qn, rn, p, same=r is None))
    if power < 1:  # d ** 0.5 is not differentiable at d = 0 (our subgradient there is 0)
        assume(r is not None)
    w = _emb(seed + 2, n, rr.shape[0])
    lp = LpDistance(p=p, power=power, normalize_embeddings=normalize, backend=backend)
    mat = lp(q.astype(np.float32), None if r is None else r.astype(np.float32))
    assert mat.dtype == np.float32 and mat.shape == (n, rr.shape[0])
    np.testing.assert_allclose(mat, _indep(q, rr, p, power, normalize), rtol=1e-5, atol=1e-6)
    dq, dr = lp.backward(w.astype(np.float32))
    if r is None:
        assert dr is None
        fd = _fd(lambda z: np.sum(w * _indep(z, z, p, power, normalize)), q)
    else:
        fd = _fd(lambda z: np.sum(w * _indep(z, r, p, power, normalize)), q)
        fdr = _fd(lambda z: np.sum(w * _indep(q, z, p, power, normalize)), r)
        np.testing.assert_allclose(dr, fdr, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(fdr).max()))
    np.testing.assert_allclose(dq, fd, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(fd).max()))


def test_large_matrix_is_chunked_consistently():
    """More rows than one chunk: the chunked matrix equals the row-by-row one."""
    q, r = _emb(0, 300, 64), _emb(1, 70, 64)
    old = O._CHUNK_ELEMS
    try:
        O._CHUNK_ELEMS = 70 * 64 * 7  # 7 rows per chunk
        mat = O.lp_cdist_forward(q, r, 1, dtype=np.float64)
        gq, gr = O.lp_cdist_backward(q, r, mat, np.ones((300, 70)), 1, dtype=np.float64)
    finally:
        O._CHUNK_ELEMS = old
    np.testing.assert_allclose(mat, np.abs(q[:, None] - r[None]).sum(axis=2), rtol=1e-12)
    np.testing.assert_allclose(gr, -np.sign(q[:, None] - r[None]).sum(axis=0), rtol=1e-12)


def test_helpers_use_p():
    x = _emb(3, 4, 5).astype(np.float32)
    for p in PS:
        lp = LpDistance(p=p)
        np.testing.assert_allclose(lp.get_norm(lp.normalize(x)), 1, rtol=1e-6)
        np.testing.assert_allclose(
            lp.pairwise_distance(x, x[::-1]),
            np.linalg.norm(x.astype(np.float64) - x[::-1], ord=p, axis=1),
            rtol=1e-6,
        )


def test_p_validation():
    assert LpDistance(p=1).p == 1 and LpDistance(p=INF).p == INF and LpDistance(p=3.0).p == 3
    for bad in (0.5, 0, -1, float("nan")):
        with pytest.raises(ValueError, match="p must be >= 1"):
            LpDistance(p=bad)
    with pytest.raises(TypeError, match="p must be a number"):
        LpDistance(p="1")


def test_empty_inputs():
    lp = LpDistance(p=1)
    assert lp(np.zeros((0, 3), np.float32), np.ones((2, 3), np.float32)).shape == (0, 2)
    mat = lp(np.ones((2, 3), np.float32), np.zeros((0, 3), np.float32))
    assert mat.shape == (2, 0)
    dq, dr = lp.backward(mat)
    assert not dq.any() and dr.shape == (0, 3)
