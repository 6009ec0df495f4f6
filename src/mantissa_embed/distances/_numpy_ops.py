"""Numpy forward/backward pairs for the distances without a C kernel (float64 inside).

- Lp row normalization for p != 2 (``torch.nn.functional.normalize(x, p)``, eps 1e-12),
- the Lp distance matrix for p != 2 (``torch.cdist(q, r, p)``), computed in query chunks so the
  (chunk, M, D) difference tensor stays small,
- the signal-to-noise-ratio matrix of Yuan et al. 2019 (closed form, no (N, M, D) tensor).

Every function returns ``dtype`` arrays (default float32; the tests use float64); gradients use torch's subgradients (0 at a zero distance,
``sign`` of the difference at the maximum for p = inf).
"""

from __future__ import annotations

import numpy as np

EPS = 1e-12
_CHUNK_ELEMS = 1 << 20  # float64 elements of one (chunk, M, D) difference tensor


def _pnorm(x, p):
    a = np.abs(x)
    if p == 1:
        return a.sum(axis=-1)
    if np.isinf(p):
        return a.max(axis=-1) if a.shape[-1] else np.zeros(a.shape[:-1])
    return (a**p).sum(axis=-1) ** (1.0 / p)


def _dnorm(x, n, p):
    """d ||x||_p / dx (rows), given the norms ``n`` ((..., 1)); 0 where n == 0."""
    s = np.sign(x)
    if p == 1:
        return s
    a = np.abs(x)
    if np.isinf(p):
        return s * (a == n)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = s * a ** (p - 1) / n ** (p - 1)
    return np.where(n > 0, g, 0.0)


def lp_normalize_forward(x, p, dtype=np.float32):
    """(N, D) -> (y (N, D) float32, norms (N,) float64): ``y = x / max(||x||_p, 1e-12)``."""
    x64 = np.asarray(x, dtype=np.float64)
    n = _pnorm(x64, p)
    y = x64 / np.maximum(n, EPS)[:, None]
    return y.astype(dtype), n


def lp_normalize_backward(dy, x, norms, p, dtype=np.float32):
    """dL/dx (N, D) float32 of ``lp_normalize_forward(x, p)`` given ``dy`` (N, D)."""
    g = np.asarray(dy, dtype=np.float64)
    x64 = np.asarray(x, dtype=np.float64)
    n = norms[:, None]
    big = n >= EPS
    nn = np.where(big, n, EPS)
    y = x64 / nn
    dn = _dnorm(x64, n, p)
    dx = np.where(big, (g - np.sum(g * y, axis=1, keepdims=True) * dn) / nn, g / EPS)
    return dx.astype(dtype)


def _chunks(n, m, d):
    step = max(1, _CHUNK_ELEMS // max(1, m * d))
    return range(0, n, step), step


def lp_cdist_forward(q, r, p, dtype=np.float32):
    """(N, D), (M, D) -> (N, M) float32 ``||q_i - r_j||_p``."""
    q64, r64 = np.asarray(q, dtype=np.float64), np.asarray(r, dtype=np.float64)
    N, M, D = q64.shape[0], r64.shape[0], q64.shape[1]
    out = np.empty((N, M), dtype=dtype)
    starts, step = _chunks(N, M, D)
    for s in starts:
        diff = q64[s : s + step, None, :] - r64[None, :, :]
        out[s : s + step] = _pnorm(diff, p)
    return out


def lp_cdist_backward(q, r, dist, dmat, p, dtype=np.float32):
    """(dq (N, D), dr (M, D)) float32 of ``sum(dmat * lp_cdist_forward(q, r, p))``.

    Recomputes the distances in float64 (``dist`` is accepted for symmetry and unused).
    """
    q64, r64 = np.asarray(q, dtype=np.float64), np.asarray(r, dtype=np.float64)
    g64 = np.asarray(dmat, dtype=np.float64)
    N, M, D = q64.shape[0], r64.shape[0], q64.shape[1]
    dq = np.empty((N, D), dtype=np.float64)
    dr = np.zeros((M, D), dtype=np.float64)
    starts, step = _chunks(N, M, D)
    for s in starts:
        diff = q64[s : s + step, None, :] - r64[None, :, :]
        n = _pnorm(diff, p)[..., None]
        w = g64[s : s + step, :, None] * _dnorm(diff, n, p)
        dq[s : s + step] = w.sum(axis=1)
        dr -= w.sum(axis=0)
    return dq.astype(dtype), dr.astype(dtype)


def _centered(x):
    x64 = np.asarray(x, dtype=np.float64)
    return x64 - x64.mean(axis=1, keepdims=True)


def snr_forward(q, r, dtype=np.float32):
    """(N, D), (M, D) -> (mat (N, M) float32, query variances (N,) float64).

    ``mat[i, j] = var(q_i - r_j) / var(q_i)`` with the unbiased variance over the D columns
    (``torch.var``). Needs D >= 2 and var(q_i) > 0 (checked by the caller).
    """
    qc, rc = _centered(q), _centered(r)
    D = qc.shape[1]
    a = np.sum(qc * qc, axis=1) / (D - 1)
    v = _noise_var(qc, rc)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (v / a[:, None]).astype(dtype), a


def _noise_var(qc, rc):
    """(N, M) ``var(q_i - r_j)`` from centered rows by the Gram expansion, with the entries where
    it cancels (relative size < 1e-6) recomputed directly, so duplicates give exactly 0."""
    D = qc.shape[1]
    sq, sr = np.sum(qc * qc, axis=1), np.sum(rc * rc, axis=1)
    scale = sq[:, None] + sr[None, :]
    v = scale - 2.0 * (qc @ rc.T)
    i, j = np.nonzero(v <= 1e-6 * scale)
    if len(i):
        d = qc[i] - rc[j]
        v[i, j] = np.sum(d * d, axis=1)
    return v / (D - 1)


def snr_backward(q, r, dmat, dtype=np.float32):
    """(dq (N, D), dr (M, D)) float32 of ``sum(dmat * snr_forward(q, r)[0])``."""
    qc, rc = _centered(q), _centered(r)
    D = qc.shape[1]
    G = np.asarray(dmat, dtype=np.float64)
    a = np.sum(qc * qc, axis=1) / (D - 1)
    v = _noise_var(qc, rc)
    c = 2.0 / (D - 1)
    # sum_j G_ij c_ij with c_ij = qc_i - rc_j (the centering's Jacobian is absorbed: sum(c_ij) = 0)
    gc = G.sum(axis=1)[:, None] * qc - G @ rc
    dq = c * (gc / a[:, None] - (np.sum(G * v, axis=1) / a**2)[:, None] * qc)
    Ga = G / a[:, None]
    dr = -c * (Ga.T @ qc - Ga.sum(axis=0)[:, None] * rc)
    return dq.astype(dtype), dr.astype(dtype)
