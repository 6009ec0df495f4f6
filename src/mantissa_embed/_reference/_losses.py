"""Numpy twins of the distance kernels of :mod:`mantissa_embed.engine`.

Every public function here has the same name, signature, validation and semantics as the
engine wrapper of the same name (over ``src/engine_c/distance.c``); the engine wrappers import the
private ``_check_*`` helpers below so both backends raise the same errors.

Conventions: float32 C-contiguous buffers, labels and index arrays int64. Inputs are converted
when needed (no copy when they already have the right type); output buffers passed as ``out=``,
``ddist=``, ``dx=``, ... must be float32, C-contiguous, writeable and of the exact shape, and are
overwritten.

The private helpers (``_l2_normalize``, ``_euclidean``, ...) keep the dtype of their inputs, so
the tests can run them in float64 for finite differences.
"""
from __future__ import annotations

import numbers

import numpy as np

from .._validation import check_float, check_int, check_kernel_input, check_kernel_output
from ._layers import _check_outs

__all__ = [
    "l2_normalize_forward",
    "l2_normalize_backward",
    "euclidean_workspace_size",
    "euclidean_forward",
    "euclidean_backward",
    "dot_similarity_forward",
    "dot_similarity_backward",
]

NORMALIZE_EPS = 1e-12  # torch.nn.functional.normalize's default


# --------------------------------------------------------------------------- validation
# Shared with the engine wrappers (they import these), so both backends raise the same errors.

def _check_in(x, name, ndim=2):
    """Input array as float32 C-contiguous (no copy if it already is)."""
    return check_kernel_input(x, name, ndim)


_check_out = check_kernel_output


def _check_same_cols(x, r, xname="x", rname="r"):
    if x.shape[1] != r.shape[1]:
        raise ValueError(f"{xname} and {rname} must have the same number of columns, "
                         f"got {x.shape} and {r.shape}")


def _check_int_array(a, name, length=None, upper=None):
    """A 1-D integer array as int64 C-contiguous; values in [0, upper) when upper is given."""
    if isinstance(a, (str, bytes)) or a is None:
        raise TypeError(f"{name} must be an integer array, got {type(a).__name__}")
    arr = np.asarray(a)
    if arr.dtype.kind not in "iu":
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.int64)  # an empty float array (np.array([])) is an empty index
        else:
            raise TypeError(f"{name} must have an integer dtype, got {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name} must have length {length}, got {arr.shape[0]}")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if upper is not None and arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= upper:
            raise ValueError(f"{name} must hold indices in [0, {upper}), got values in [{lo}, {hi}]")
    return arr


def _check_flag(v, name):
    if not isinstance(v, (bool, np.bool_, numbers.Integral)):
        raise TypeError(f"{name} must be a bool, got {type(v).__name__}")
    return bool(v)


def _check_eps(eps):
    eps = check_float(eps, "eps", minimum=0.0, strict=True)
    if not float(np.finfo(np.float32).tiny) <= eps <= float(np.finfo(np.float32).max):
        raise ValueError(f"eps must be a normal float32 (in [1.2e-38, 3.4e38]), got {eps}")
    return eps


def euclidean_workspace_size(N, M, backward=False):
    """Floats of scratch ``euclidean_forward`` (N + M) or ``euclidean_backward`` (N*M + N + M) needs."""
    N, M = check_int(N, "N", minimum=0), check_int(M, "M", minimum=0)
    return N * M + N + M if backward else N + M


def _check_workspace(ws, N, M, backward):
    need = euclidean_workspace_size(N, M, backward)
    if ws is None:
        return np.empty(max(need, 1), dtype=np.float32)
    if not isinstance(ws, np.ndarray):
        raise TypeError(f"workspace must be a numpy.ndarray, got {type(ws).__name__}")
    if ws.dtype != np.float32 or ws.ndim != 1 or not ws.flags.c_contiguous or not ws.flags.writeable:
        raise ValueError("workspace must be a writeable C-contiguous 1-D float32 array")
    if ws.shape[0] < need:
        raise ValueError(f"workspace must hold at least {need} floats, got {ws.shape[0]}")
    return ws


# --------------------------------------------------------------------------- distance

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
    x = _check_in(x, "x")
    eps = _check_eps(eps)
    N, D = x.shape
    y = _check_out(y, "y", (N, D))
    norms = _check_out(norms, "norms", (N,))
    _check_outs([(y, "y")], [(x, "x")], inplace_ok=("x",))
    _check_outs([(norms, "norms")], [(x, "x"), (y, "y")])
    if N:
        yy, nn = _l2_normalize(x, eps)
        y[...] = yy
        norms[...] = nn
    return y, norms


def l2_normalize_backward(dy, y, norms, eps=NORMALIZE_EPS, dx=None):
    """Gradient of :func:`l2_normalize_forward`: ``dx = (dy - y <y, dy>) / ||x||``.

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
    dy = _check_in(dy, "dy")
    y = _check_in(y, "y")
    norms = _check_in(norms, "norms", ndim=1)
    eps = _check_eps(eps)
    if dy.shape != y.shape:
        raise ValueError(f"dy and y must have the same shape, got {dy.shape} and {y.shape}")
    if norms.shape != (y.shape[0],):
        raise ValueError(f"norms must have shape ({y.shape[0]},), got {norms.shape}")
    dx = _check_out(dx, "dx", y.shape)
    _check_outs([(dx, "dx")], [(dy, "dy"), (y, "y"), (norms, "norms")], inplace_ok=("dy",))
    if y.shape[0]:
        dx[...] = _l2_normalize_grad(dy, y, norms, eps)
    return dx


REFINE = 1e-3  # must equal REFINE in src/engine_c/distance.c


def _euclidean(x, r, squared=False):
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


def _euclidean_grad(x, r, dist, ddist, squared=False):
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


def euclidean_forward(x, r, squared=False, out=None, workspace=None):
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
    x = _check_in(x, "x")
    r = x if r is x else _check_in(r, "r")
    _check_same_cols(x, r)
    squared = _check_flag(squared, "squared")
    N, M = x.shape[0], r.shape[0]
    out = _check_out(out, "out", (N, M))
    _check_workspace(workspace, N, M, False)
    _check_outs([(out, "out"), (workspace, "workspace")], [(x, "x"), (r, "r")])
    if N and M:
        out[...] = _euclidean(x, r, squared)
    return out


def euclidean_backward(x, r, dist, ddist, squared=False, dx=None, dr=None, workspace=None):
    """Gradient of :func:`euclidean_forward` with respect to ``x`` and ``r``.

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
    x = _check_in(x, "x")
    r = x if r is x else _check_in(r, "r")
    _check_same_cols(x, r)
    N, M, D = x.shape[0], r.shape[0], x.shape[1]
    dist = _check_in(dist, "dist")
    ddist = _check_in(ddist, "ddist")
    if dist.shape != (N, M):
        raise ValueError(f"dist must have shape ({N}, {M}), got {dist.shape}")
    if ddist.shape != (N, M):
        raise ValueError(f"ddist must have shape ({N}, {M}), got {ddist.shape}")
    squared = _check_flag(squared, "squared")
    dx = _check_out(dx, "dx", (N, D))
    dr = _check_out(dr, "dr", (M, D))
    _check_workspace(workspace, N, M, True)
    _check_outs([(dx, "dx"), (dr, "dr"), (workspace, "workspace")],
                [(x, "x"), (r, "r"), (dist, "dist"), (ddist, "ddist")])
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
    x = _check_in(x, "x")
    r = x if r is x else _check_in(r, "r")
    _check_same_cols(x, r)
    N, M = x.shape[0], r.shape[0]
    out = _check_out(out, "out", (N, M))
    _check_outs([(out, "out")], [(x, "x"), (r, "r")])
    if N and M:
        out[...] = x @ r.T
    return out


def dot_similarity_backward(x, r, dsim, dx=None, dr=None):
    """Gradient of :func:`dot_similarity_forward`: ``dx = dsim @ r``, ``dr = dsim.T @ x``.

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
    x = _check_in(x, "x")
    r = x if r is x else _check_in(r, "r")
    _check_same_cols(x, r)
    N, M, D = x.shape[0], r.shape[0], x.shape[1]
    dsim = _check_in(dsim, "dsim")
    if dsim.shape != (N, M):
        raise ValueError(f"dsim must have shape ({N}, {M}), got {dsim.shape}")
    dx = _check_out(dx, "dx", (N, D))
    dr = _check_out(dr, "dr", (M, D))
    _check_outs([(dx, "dx"), (dr, "dr")], [(x, "x"), (r, "r"), (dsim, "dsim")])
    if N == 0 or M == 0:
        dx[...] = 0
        dr[...] = 0
        return dx, dr
    dx[...] = dsim @ r
    dr[...] = dsim.T @ x
    return dx, dr
