"""Numpy twins of the distance kernels (``mantissa_embed._engine._distance``): row L2
normalization, Euclidean and dot-product matrices, the symmetric helpers.

Same names, signatures, checks and errors as the engine; scratch sizes are the engine's. The private
helpers (``_l2_normalize``, ``_euclidean``, ...) keep their input dtype (float64 finite differences in
the tests).
"""

from __future__ import annotations

import numpy as np

from .._checks.arrays import check_flag, check_kernel_input, check_kernel_output, check_outs
from .._checks.distance import (
    NORMALIZE_EPS,
    check_add_transpose,
    check_dot_similarity_backward,
    check_dot_similarity_forward,
    check_eps,
    check_euclidean_workspace,
    check_gram,
    check_l2_normalize_backward_args,
    check_matrix,
    check_pair_inputs,
)
from ..engine import euclidean_workspace_size

__all__ = [
    "l2_normalize_forward",
    "l2_normalize_backward",
    "euclidean_workspace_size",
    "euclidean_forward",
    "euclidean_backward",
    "dot_similarity_forward",
    "dot_similarity_backward",
    "add_transpose_forward",
    "gram_forward",
]


def _l2_normalize(x, eps=NORMALIZE_EPS):
    norms = np.sqrt(np.einsum("ij,ij->i", x.astype(np.float64), x.astype(np.float64))).astype(x.dtype)
    den = np.maximum(norms, x.dtype.type(eps))
    return x / den[:, None], norms


def _l2_normalize_grad(dy, y, norms, eps=NORMALIZE_EPS):
    dot = np.einsum("ij,ij->i", y.astype(np.float64), dy.astype(np.float64)).astype(y.dtype)
    big = norms >= y.dtype.type(eps)
    safe = np.where(big, norms, y.dtype.type(1))
    dx = np.where(big[:, None], (dy - y * dot[:, None]) / safe[:, None], dy / y.dtype.type(eps))
    return dx.astype(y.dtype, copy=False)


def l2_normalize_forward(x, eps=NORMALIZE_EPS, y=None, norms=None):
    """Row-wise L2 normalization, as ``torch.nn.functional.normalize(x, p=2, dim=1, eps=eps)``.

    Parameters
    ----------
    x : (N, D) float32
    eps : float, default 1e-12
        Norms below ``eps`` are clamped to ``eps``.
    y : (N, D) float32, optional
        Output buffer (may be ``x`` itself).
    norms : (N,) float32, optional
        Output buffer for the norms ``||x_i||`` (needed by the backward).

    Returns
    -------
    (y, norms) : ((N, D) float32, (N,) float32)
    """
    x = check_kernel_input(x, "x", 2)
    eps = check_eps(eps)
    N, D = x.shape
    y = check_kernel_output(y, "y", (N, D))
    norms = check_kernel_output(norms, "norms", (N,))
    check_outs([(y, "y")], [(x, "x")], inplace_ok=("x",))
    check_outs([(norms, "norms")], [(x, "x"), (y, "y")])
    if N:
        yy, nn = _l2_normalize(x, eps)
        y[...] = yy
        norms[...] = nn
    return y, norms


def l2_normalize_backward(dy, y, norms, eps=NORMALIZE_EPS, dx=None):
    """Gradient of ``l2_normalize_forward``: ``dx = (dy - y <y, dy>) / ||x||``.

    When ``||x|| < eps`` the clamp is active and ``dx = dy / eps`` (torch's gradient).

    Parameters
    ----------
    dy, y : (N, D) float32
        Upstream gradient and the forward output.
    norms : (N,) float32
        The forward's norms.
    dx : (N, D) float32, optional
        Output buffer (may be ``dy``), overwritten.

    Returns
    -------
    dx : (N, D) float32
    """
    dy, y, norms, eps = check_l2_normalize_backward_args(dy, y, norms, eps)
    dx = check_kernel_output(dx, "dx", y.shape)
    check_outs([(dx, "dx")], [(dy, "dy"), (y, "y"), (norms, "norms")], inplace_ok=("dy",))
    if y.shape[0]:
        dx[...] = _l2_normalize_grad(dy, y, norms, eps)
    return dx


REFINE = 1e-3  # must equal REFINE in src/engine_c/distance.c


def _euclidean(x, r, squared: bool = False):
    dt = x.dtype
    xn = np.einsum("ij,ij->i", x.astype(np.float64), x.astype(np.float64)).astype(dt)
    rn = np.einsum("ij,ij->i", r.astype(np.float64), r.astype(np.float64)).astype(dt)
    sq = xn[:, None] + rn[None, :]
    v = sq + dt.type(-2) * (x @ r.T)
    # small distances lose their digits to cancellation: recompute them directly
    i, j = np.nonzero(v < dt.type(REFINE) * sq)
    if len(i):
        t = (x[i] - r[j]).astype(np.float64)
        v[i, j] = np.einsum("ij,ij->i", t, t).astype(dt)
        if r is x:
            v[i[i == j], j[i == j]] = 0
    return v if squared else np.sqrt(v)


def _euclidean_grad(x, r, dist, ddist, squared: bool = False):
    pos = dist > 0
    if squared:
        G = np.where(pos, ddist, 0).astype(x.dtype)
        f = x.dtype.type(2)
    else:
        G = np.where(pos, ddist / np.where(pos, dist, 1), 0).astype(x.dtype)
        f = x.dtype.type(1)
    rs = G.sum(axis=1, dtype=np.float64).astype(x.dtype)
    cs = G.sum(axis=0, dtype=np.float64).astype(x.dtype)
    dx = f * (x * rs[:, None] - G @ r)
    dr = f * (r * cs[:, None] - G.T @ x)
    return dx.astype(x.dtype, copy=False), dr.astype(x.dtype, copy=False)


def euclidean_forward(x, r, squared: bool = False, out=None, workspace=None):
    """Euclidean distance matrix ``dist[i, j] = ||x_i - r_j||`` (or its square).

    Computed as ``||x_i||^2 + ||r_j||^2 - 2 x_i . r_j`` (one SGEMM), as ``torch.cdist`` does for
    large inputs; entries below ``1e-3 * (||x_i||^2 + ||r_j||^2)``, where that formula loses its
    digits to cancellation, are recomputed directly as ``||x_i - r_j||^2`` (exactly 0 for
    duplicates, and on the diagonal when ``r`` is ``x``).

    Parameters
    ----------
    x : (N, D) float32
    r : (M, D) float32
        May be ``x`` itself.
    squared : bool, default False
        Return squared distances.
    out : (N, M) float32, optional
        Output buffer.
    workspace : 1-D float32, optional
        At least ``euclidean_workspace_size(N, M)`` floats, reused across calls.

    Returns
    -------
    dist : (N, M) float32
    """
    x, r = check_pair_inputs(x, r)
    squared = check_flag(squared, "squared")
    N, M = x.shape[0], r.shape[0]
    out = check_kernel_output(out, "out", (N, M))
    check_euclidean_workspace(workspace, euclidean_workspace_size(N, M))
    check_outs([(out, "out"), (workspace, "workspace")], [(x, "x"), (r, "r")])
    if N and M:
        out[...] = _euclidean(x, r, squared)
    return out


def euclidean_backward(x, r, dist, ddist, squared: bool = False, dx=None, dr=None, workspace=None):
    """Gradient of ``euclidean_forward`` with respect to ``x`` and ``r``.

    ``dx = x * rowsum(G) - G @ r`` and ``dr = r * colsum(G) - G.T @ x`` with ``G = ddist / dist``
    (``2 * ddist`` for squared distances); no (N, M, D) tensor is formed. Where ``dist == 0``
    the gradient is taken as 0 (the subgradient ``torch.cdist`` uses).

    Parameters
    ----------
    x : (N, D) float32
    r : (M, D) float32
    dist : (N, M) float32
        The forward output.
    ddist : (N, M) float32
        dL / d dist.
    squared : bool, default False
    dx, dr : (N, D), (M, D) float32, optional
        Output buffers (overwritten).
    workspace : 1-D float32, optional
        At least ``euclidean_workspace_size(N, M, backward=True)`` floats.

    Returns
    -------
    (dx, dr) : ((N, D) float32, (M, D) float32)
        When ``r`` is ``x`` the total gradient is ``dx + dr``.
    """
    x, r = check_pair_inputs(x, r)
    N, M, D = x.shape[0], r.shape[0], x.shape[1]
    dist = check_matrix(dist, "dist", N, M)
    ddist = check_matrix(ddist, "ddist", N, M)
    squared = check_flag(squared, "squared")
    dx = check_kernel_output(dx, "dx", (N, D))
    dr = check_kernel_output(dr, "dr", (M, D))
    check_euclidean_workspace(workspace, euclidean_workspace_size(N, M, backward=True))
    check_outs(
        [(dx, "dx"), (dr, "dr"), (workspace, "workspace")],
        [(x, "x"), (r, "r"), (dist, "dist"), (ddist, "ddist")],
    )
    if N == 0 or M == 0:
        dx[...] = 0
        dr[...] = 0
        return dx, dr
    gx, gr = _euclidean_grad(x, r, dist, ddist, squared)
    dx[...] = gx
    dr[...] = gr
    return dx, dr


def dot_similarity_forward(x, r, out=None):
    """Dot-product similarity matrix ``sim = x @ r.T``.

    Parameters
    ----------
    x : (N, D) float32
    r : (M, D) float32
    out : (N, M) float32, optional

    Returns
    -------
    sim : (N, M) float32
    """
    x, r, out = check_dot_similarity_forward(x, r, out)
    if x.shape[0] and r.shape[0]:
        out[...] = x @ r.T
    return out


def dot_similarity_backward(x, r, dsim, dx=None, dr=None):
    """Gradient of ``dot_similarity_forward``: ``dx = dsim @ r``, ``dr = dsim.T @ x``.

    Parameters
    ----------
    x : (N, D) float32
    r : (M, D) float32
    dsim : (N, M) float32
    dx, dr : (N, D), (M, D) float32, optional (overwritten)

    Returns
    -------
    (dx, dr) : ((N, D) float32, (M, D) float32)
    """
    x, r, dsim, dx, dr = check_dot_similarity_backward(x, r, dsim, dx, dr)
    N, M = x.shape[0], r.shape[0]
    if N == 0 or M == 0:
        dx[...] = 0
        dr[...] = 0
        return dx, dr
    dx[...] = dsim @ r
    dr[...] = dsim.T @ x
    return dx, dr


def add_transpose_forward(a, out=None):
    """``out = a + a.T`` for a square float32 ``a`` (N, N) -> out (N, N) float32, exactly symmetric.

    The same-set backward of a similarity matrix in one product: ``(dS + dS.T) @ x``. ``out`` must
    not overlap ``a``.
    """
    a, out = check_add_transpose(a, out)
    out[...] = a + a.T
    return out


def gram_forward(x, out=None):
    """Gram matrix ``out = x @ x.T`` of x (N, D) float32 -> out (N, N) float32 (float64 inside;
    the engine computes the blocks on and above the diagonal and mirrors them)."""
    x, out = check_gram(x, out)
    if x.shape[1] == 0:
        out[...] = 0
        return out
    xd = x.astype(np.float64)
    g = xd @ xd.T
    out[...] = np.triu(g) + np.triu(g, 1).T
    return out
