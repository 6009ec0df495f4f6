"""numpy kernels of the ranking losses (FastAP / Histogram / PNP / RankedList / DynamicSoftMargin /
ThresholdConsistentMargin / Manifold): forward values and explicit backwards over a distance or
similarity matrix. Every function works in float64 and is O(N^2) in memory (PNP: O(N^2) per
chunk of anchors); the loss classes in ``mantissa_embed.losses`` call them.

The PNP pair/negative sum also has a C kernel (``engine.pnp_rank_forward`` /
``pnp_rank_backward``, ``src/engine_c/ranking_losses.c``); the functions of the same name here
are its numpy twins.
"""

from __future__ import annotations

import numpy as np

from .._checks.ranking_losses import check_cdf, check_dsm, check_f64, check_nb, check_pnp, check_real

__all__ = [
    "pnp_rank_forward",
    "pnp_rank_backward",
    "dsm_triplet_hist",
    "dsm_triplet_loss",
    "dsm_triplet_backward",
]


# ------------------------------------------------------------------------------------- PNP
_PNP_CHUNK = 1 << 22


def _sig_clamped(z):
    """PML's temperature sigmoid on ``z = diff / temp``: exponent clamped to [-50, 50]; returns
    ``(y, dy/dz)`` (0 where the clamp is active)."""
    e = -z
    ec = np.clip(e, -50.0, 50.0)
    y = 1.0 / (1.0 + np.exp(ec))
    dy = np.where((e >= -50.0) & (e <= 50.0), y * (1.0 - y), 0.0)
    return y, dy


def pnp_rank_forward(sim, labels, anneal):
    """``rk[i, j] = sum_{k: y_k != y_i} sigmoid((sim[i, k] - sim[i, j]) / anneal)`` (exponent clamped
    to [-50, 50]) for every ``j`` with ``y_j == y_i`` (``j == i`` included); 0 elsewhere.

    sim (N, N) float32, labels (N,) int -> rk (N, N) float64. Twin of ``engine.pnp_rank_forward``.
    Raises ValueError / TypeError naming the argument."""
    sim, lab, anneal = check_pnp(sim, labels, anneal)
    s = sim.astype(np.float64)
    N = s.shape[0]
    rk = np.zeros((N, N))
    for i in range(N):
        same = lab == lab[i]
        jj = np.nonzero(same)[0]
        kk = np.nonzero(~same)[0]
        if len(kk) == 0:
            continue
        sj, sk = s[i, jj], s[i, kk]
        step = max(1, _PNP_CHUNK // max(len(kk), 1))
        for a in range(0, len(jj), step):
            y, _ = _sig_clamped((sk[None, :] - sj[a : a + step, None]) / anneal)
            rk[i, jj[a : a + step]] = y.sum(axis=1)
    return rk


def pnp_rank_backward(drk, sim, labels, anneal):
    """Gradient of ``pnp_rank_forward``: drk (N, N) float64 (read where ``y_j == y_i``),
    sim (N, N) float32, labels (N,) -> dsim (N, N) float64. Twin of ``engine.pnp_rank_backward``."""
    sim, lab, anneal = check_pnp(sim, labels, anneal)
    N = sim.shape[0]
    g = check_f64(drk, "drk", (N, N))
    s = sim.astype(np.float64)
    ds = np.zeros((N, N))
    for i in range(N):
        same = lab == lab[i]
        jj = np.nonzero(same & (g[i] != 0))[0]
        kk = np.nonzero(~same)[0]
        if len(kk) == 0 or len(jj) == 0:
            continue
        sj, sk, gj = s[i, jj], s[i, kk], g[i, jj]
        step = max(1, _PNP_CHUNK // max(len(kk), 1))
        for a in range(0, len(jj), step):
            _, dy = _sig_clamped((sk[None, :] - sj[a : a + step, None]) / anneal)
            w = dy * (gj[a : a + step, None] / anneal)
            ds[i, kk] += w.sum(axis=0)
            ds[i, jj[a : a + step]] -= w.sum(axis=1)
    return ds


# ------------------------------------------------------------------- DynamicSoftMargin
def _dsm_anchor_blocks(mat, labels, ref_labels, exclude_self):
    """Per anchor ``a``: (a, positive columns, negative columns, x (P, Q) float64)."""
    m = mat.astype(np.float64)
    cols = np.arange(mat.shape[1])
    for a in range(mat.shape[0]):
        pos = ref_labels == labels[a]
        if exclude_self:
            pos = pos & (cols != a)
        pc = np.nonzero(pos)[0]
        nc = np.nonzero(ref_labels != labels[a])[0]
        if len(pc) == 0 or len(nc) == 0:
            continue
        yield a, pc, nc, m[a, pc][:, None] - m[a, nc][None, :]


def dsm_triplet_hist(mat, labels, ref_labels, exclude_self, min_val, delta, num_bins, momentum):
    """This batch's histogram contribution over all triplets (a, p, n) of the labels
    (``x = mat[a, p] - mat[a, n]``, ``t = (x - min_val) / delta``, ``r = floor(t)``, ``f = t - r``:
    ``momentum (1 - f)`` to bin ``r``, ``momentum f`` to bin ``r + 1``, bins outside ``[0, num_bins)``
    dropped). mat (N, M) float32, labels (N,), ref_labels (M,) -> (u (num_bins,) float64, count int).
    ``num_bins`` (and ``len(cdf)`` below): 1 to 65536 (ValueError). Twin of ``engine.dsm_triplet_hist``."""
    mat, labels, ref_labels, exclude_self, min_val, delta = check_dsm(
        mat, labels, ref_labels, exclude_self, min_val, delta
    )
    nb = check_nb(num_bins)
    momentum = check_real(momentum, "momentum")
    u = np.zeros(nb)
    count = 0
    for _, _, _, x in _dsm_anchor_blocks(mat, labels, ref_labels, exclude_self):
        dsm_add_soft_counts(u, x, min_val, delta, momentum)
        count += x.size
    return u, count


def dsm_add_soft_counts(u, x, min_val, delta, momentum) -> None:
    """Adds to u (nb,) float64, in place, the linear-interpolation histogram of the values x (any
    shape): with t = (x - min_val) / delta, r = floor(t), f = t - r, ``momentum (1 - f)`` goes to
    bin r and ``momentum f`` to bin r + 1; bins outside [0, nb) are dropped (PML's
    DynamicSoftMargin update)."""
    nb = u.shape[0]
    t = ((x - min_val) / delta).ravel()
    fl = np.floor(t)
    f = t - fl
    r = dsm_bin(t, nb)
    ok0 = (r >= 0) & (r < nb)
    ok1 = (r + 1 >= 0) & (r + 1 < nb)
    u += np.bincount(r[ok0], weights=momentum * (1.0 - f[ok0]), minlength=nb)[:nb]
    u += np.bincount(r[ok1] + 1, weights=momentum * f[ok1], minlength=nb)[:nb]


def dsm_bin(t, nb):
    """floor(t) as int64 bins in [-2, nb + 1] (NaN -> -2), as the C kernels' ``dsm_bin``: no
    out-of-range cast, no out-of-bounds index."""
    with np.errstate(invalid="ignore"):
        return np.clip(np.nan_to_num(np.floor(t), nan=-2.0), -2, nb + 1).astype(np.int64)


def dsm_triplet_loss(mat, labels, ref_labels, exclude_self, min_val, delta, cdf):
    """``(sum_x cdf[rc(x)] * x, by_bin)`` over all triplets, ``rc = clip(floor((x - min_val) / delta),
    0, nb - 1)``, ``by_bin[r] = sum of x with rc(x) = r``. cdf (nb,) float64.
    Twin of ``engine.dsm_triplet_loss``."""
    mat, labels, ref_labels, exclude_self, min_val, delta = check_dsm(
        mat, labels, ref_labels, exclude_self, min_val, delta
    )
    cdf = check_cdf(cdf)
    nb = cdf.shape[0]
    total = 0.0
    by_bin = np.zeros(nb)
    for _, _, _, x in _dsm_anchor_blocks(mat, labels, ref_labels, exclude_self):
        x = x.ravel()
        rc = np.clip(dsm_bin((x - min_val) / delta, nb), 0, nb - 1)
        total += float(np.sum(cdf[rc] * x))
        by_bin += np.bincount(rc, weights=x, minlength=nb)
    return total, by_bin


def dsm_triplet_backward(mat, labels, ref_labels, exclude_self, min_val, delta, cdf, g_u, scale, momentum):
    """dL/d mat (N, M) float32 with ``dL/dx = scale cdf[rc] + momentum (g_u[r+1] - g_u[r]) / delta``
    (bins outside ``[0, nb)`` dropped), ``dmat[a, p] += dL/dx``, ``dmat[a, n] -= dL/dx``.
    Twin of ``engine.dsm_triplet_backward``."""
    mat, labels, ref_labels, exclude_self, min_val, delta = check_dsm(
        mat, labels, ref_labels, exclude_self, min_val, delta
    )
    cdf = check_cdf(cdf)
    nb = cdf.shape[0]
    g_u = check_f64(g_u, "g_u", (nb,))
    scale, momentum = check_real(scale, "scale"), check_real(momentum, "momentum")
    gpad = np.concatenate([g_u, [0.0]])
    dmat = np.zeros(mat.shape)
    for a, pc, nc, x in _dsm_anchor_blocks(mat, labels, ref_labels, exclude_self):
        r = dsm_bin((x - min_val) / delta, nb)
        rc = np.clip(r, 0, nb - 1)
        g = scale * cdf[rc]
        g = g + np.where((r + 1 >= 0) & (r + 1 < nb), momentum / delta * gpad[np.clip(r + 1, 0, nb)], 0.0)
        g = g - np.where((r >= 0) & (r < nb), momentum / delta * gpad[np.clip(r, 0, nb)], 0.0)
        dmat[a, pc] += g.sum(axis=1)
        dmat[a, nc] -= g.sum(axis=0)
    return dmat.astype(np.float32)
