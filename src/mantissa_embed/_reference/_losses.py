"""Numpy twins of the distance and pair-loss kernels of :mod:`mantissa_embed.engine`.

Every public function here has the same name, signature, validation and semantics as the
engine wrapper of the same name (``src/mantissa_embed/_engine_losses.pxi``, over
``src/engine_c/distance.c`` and ``src/engine_c/pair_losses.c``); the engine wrappers import the
private ``_check_*`` helpers below so both backends raise the same errors.

Conventions: float32 C-contiguous buffers, labels and index arrays int64. Inputs are converted
when needed (no copy when they already have the right type); output buffers passed as ``out=``,
``ddist=``, ``dx=``, ... must be float32, C-contiguous, writeable and of the exact shape, and are
overwritten.

The private helpers (``_l2_normalize``, ``_euclidean``, ``_contrastive_all``, ``_triplet_all``, ...)
keep the dtype of their inputs, so the tests can run them in float64 for finite differences.
Per-term losses are computed in the input dtype with pytorch-metric-learning's operation order
(so the "loss > 0" test of AvgNonZeroReducer decides as PML does); sums are taken in float64.
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
    "contrastive_loss_all",
    "contrastive_loss_pairs",
    "triplet_loss_all",
    "triplet_loss_triplets",
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


def _check_self(exclude_self, N, M):
    exclude_self = _check_flag(exclude_self, "exclude_self")
    if exclude_self and N != M:
        raise ValueError(f"exclude_self requires a square distance matrix, got shape ({N}, {M})")
    return exclude_self


def _check_swap_all(swap, labels, ref_labels):
    swap = _check_flag(swap, "swap")
    if swap and (labels.shape[0] != ref_labels.shape[0] or not np.array_equal(labels, ref_labels)):
        raise ValueError("swap=True requires the reference set to be the batch itself "
                         "(square dist and ref_labels equal to labels)")
    return swap


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


# --------------------------------------------------------------------------- pair losses

def _mean(total, den):
    return float(total / den) if den > 0 else 0.0


def _contrastive_terms(d, pm, nm, inverted):
    """Per-pair violations (positive branch, negative branch), in d's dtype, PML's order."""
    pm, nm = d.dtype.type(pm), d.dtype.type(nm)
    vp = (pm - d) if inverted else (d - pm)
    vn = (d - nm) if inverted else (nm - d)
    return vp, vn


def _contrastive_all(dist, labels, ref_labels, pm, nm, exclude_self, inverted, nonzero_only):
    N, M = dist.shape
    pos = labels[:, None] == ref_labels[None, :]
    neg = ~pos
    if exclude_self:
        pos[np.arange(N), np.arange(N)] = False
    vp, vn = _contrastive_terms(dist, pm, nm, inverted)
    actp = pos & (vp > 0)
    actn = neg & (vn > 0)
    sp = vp[actp].sum(dtype=np.float64)
    sn = vn[actn].sum(dtype=np.float64)
    n_pos, n_neg = int(pos.sum()), int(neg.sum())
    n_ap, n_an = int(actp.sum()), int(actn.sum())
    den_p = n_ap if nonzero_only else n_pos
    den_n = n_an if nonzero_only else n_neg
    sgp = -1.0 if inverted else 1.0
    g = np.zeros_like(dist)
    if den_p > 0:
        g[actp] = sgp / den_p
    if den_n > 0:
        g[actn] = -sgp / den_n
    stats = {"pos_loss": _mean(sp, den_p), "neg_loss": _mean(sn, den_n),
             "num_pos_pairs": n_pos, "num_neg_pairs": n_neg,
             "num_pos_nonzero": n_ap, "num_neg_nonzero": n_an}
    return stats["pos_loss"] + stats["neg_loss"], g, stats


def _contrastive_pairs(dist, a1, p, a2, n, pm, nm, inverted, nonzero_only):
    vp, _ = _contrastive_terms(dist[a1, p], pm, nm, inverted)
    _, vn = _contrastive_terms(dist[a2, n], pm, nm, inverted)
    actp, actn = vp > 0, vn > 0
    sp = vp[actp].sum(dtype=np.float64)
    sn = vn[actn].sum(dtype=np.float64)
    n_ap, n_an = int(actp.sum()), int(actn.sum())
    den_p = n_ap if nonzero_only else len(a1)
    den_n = n_an if nonzero_only else len(a2)
    sgp = -1.0 if inverted else 1.0
    g = np.zeros_like(dist)
    if den_p > 0:
        np.add.at(g, (a1[actp], p[actp]), dist.dtype.type(sgp / den_p))
    if den_n > 0:
        np.add.at(g, (a2[actn], n[actn]), dist.dtype.type(-sgp / den_n))
    stats = {"pos_loss": _mean(sp, den_p), "neg_loss": _mean(sn, den_n),
             "num_pos_pairs": len(a1), "num_neg_pairs": len(a2),
             "num_pos_nonzero": n_ap, "num_neg_nonzero": n_an}
    return stats["pos_loss"] + stats["neg_loss"], g, stats


def _softplus(v):
    """torch.nn.functional.softplus (beta 1, threshold 20) and its derivative, in v's dtype."""
    with np.errstate(over="ignore"):
        z = np.exp(np.minimum(v, v.dtype.type(20)))
        sp = np.where(v > 20, v, np.log1p(z))
        w = np.where(v > 20, v.dtype.type(1), z / (z + v.dtype.type(1)))
    return sp.astype(v.dtype, copy=False), w.astype(v.dtype, copy=False)


def _triplet_terms(dap, dan, dpn, margin, swap, smooth, inverted, nonzero_only):
    """Per-triplet loss, the weight dL_t/dv (0 when not counted), the counted mask and the share
    of the negative gradient that goes to d_an (the rest goes to d_pn under swap)."""
    dt = dap.dtype
    if swap:
        tie = dan == dpn
        an_wins = (dan > dpn) if inverted else (dan < dpn)
        share = np.where(tie, dt.type(0.5), np.where(an_wins, dt.type(1), dt.type(0)))
        dan = np.where(an_wins | tie, dan, dpn)
    else:
        share = np.ones_like(dap)
    margin = dt.type(margin)
    v = ((dan - dap) + margin) if inverted else ((dap - dan) + margin)
    if smooth:
        loss, w = _softplus(v)
    else:
        loss = np.maximum(v, dt.type(0))
        w = (v > 0).astype(dt)
    counted = loss > 0 if nonzero_only else np.ones(loss.shape, dtype=bool)
    w = np.where(counted, w, dt.type(0))
    return loss, w, counted, share


def _triplet_all(dist, labels, ref_labels, margin, exclude_self, swap, smooth, inverted, nonzero_only):
    """Reference: loops over anchors (clarity over speed), each anchor a (P, Nneg) block."""
    N, M = dist.shape
    sg = -1.0 if inverted else 1.0
    g = np.zeros(dist.shape, dtype=np.float64)
    total, n_trip, n_nz = 0.0, 0, 0
    ref_idx = np.arange(M)
    for a in range(N):
        P = ref_idx[(ref_labels == labels[a]) & ~((ref_idx == a) & exclude_self)]
        Ng = ref_idx[ref_labels != labels[a]]
        if len(P) == 0 or len(Ng) == 0:
            continue
        dap = np.repeat(dist[a, P][:, None], len(Ng), axis=1)
        dan = np.repeat(dist[a, Ng][None, :], len(P), axis=0)
        dpn = dist[np.ix_(P, Ng)] if swap else None
        loss, w, counted, share = _triplet_terms(dap, dan, dpn, margin, swap, smooth, inverted,
                                                 nonzero_only)
        n_trip += loss.size
        n_nz += int((loss > 0).sum())
        total += loss[counted].sum(dtype=np.float64)
        w = w.astype(np.float64)
        g[a, P] += sg * w.sum(axis=1)
        g[a, Ng] -= sg * (w * share).sum(axis=0)
        if swap:
            g[np.ix_(P, Ng)] -= sg * w * (1 - share)
    den = n_nz if nonzero_only else n_trip
    loss = _mean(total, den)
    g = (g / den if den > 0 else np.zeros_like(g)).astype(dist.dtype)
    return loss, g, {"loss": loss, "num_triplets": n_trip, "num_nonzero": n_nz}


def _triplet_triplets(dist, a, p, n, margin, swap, smooth, inverted, nonzero_only):
    sg = -1.0 if inverted else 1.0
    dpn = dist[p, n] if swap else None
    loss, w, counted, share = _triplet_terms(dist[a, p], dist[a, n], dpn, margin, swap, smooth,
                                             inverted, nonzero_only)
    n_nz = int((loss > 0).sum())
    den = n_nz if nonzero_only else len(a)
    total = loss[counted].sum(dtype=np.float64)
    g = np.zeros(dist.shape, dtype=np.float64)
    if den > 0:
        w = w.astype(np.float64)
        np.add.at(g, (a, p), sg * w)
        np.add.at(g, (a, n), -sg * w * share)
        if swap:
            np.add.at(g, (p, n), -sg * w * (1 - share))
        g /= den
    lv = _mean(total, den)
    return lv, g.astype(dist.dtype), {"loss": lv, "num_triplets": len(a), "num_nonzero": n_nz}


def _check_pair_args(dist, ddist, inverted, nonzero_only):
    dist = _check_in(dist, "dist")
    N, M = dist.shape
    ddist = _check_out(ddist, "ddist", (N, M))
    _check_outs([(ddist, "ddist")], [(dist, "dist")])
    return dist, ddist, N, M, _check_flag(inverted, "inverted"), _check_flag(nonzero_only, "nonzero_only")


def _check_label_pair(labels, ref_labels, N, M):
    return (_check_int_array(labels, "labels", length=N),
            _check_int_array(ref_labels, "ref_labels", length=M))


def contrastive_loss_all(dist, labels, ref_labels, pos_margin=0.0, neg_margin=1.0, exclude_self=False,
                         inverted=False, nonzero_only=True, ddist=None):
    """Contrastive loss over every pair of a distance matrix, and dL/d dist (fused).

    pytorch-metric-learning's ``ContrastiveLoss`` (Hadsell, Chopra & LeCun 2006): positive pairs
    (same label) charge ``relu(d - pos_margin)``, negative pairs ``relu(neg_margin - d)``
    (for a similarity, ``inverted=True``: ``relu(pos_margin - s)`` and ``relu(s - neg_margin)``).
    Each kind is averaged on its own, over its terms with loss > 0 (``AvgNonZeroReducer``,
    ``nonzero_only=True``) or over all its terms (``MeanReducer``), and the two means are summed.
    A kind with no (non-zero) term contributes 0.

    Parameters
    ----------
    dist : (N, M) float32
        Distances (or similarities) between the batch and the reference set.
    labels : (N,) int64
    ref_labels : (M,) int64
    pos_margin, neg_margin : float, default 0.0 and 1.0
    exclude_self : bool, default False
        Drop the pairs (i, i) (the reference set is the batch); requires N == M.
    inverted : bool, default False
    nonzero_only : bool, default True
    ddist : (N, M) float32, optional
        Output buffer, overwritten with dL/d dist.

    Returns
    -------
    (loss, ddist, stats) : (float, (N, M) float32, dict)
        ``stats``: pos_loss, neg_loss, num_pos_pairs, num_neg_pairs, num_pos_nonzero, num_neg_nonzero.
    """
    dist, ddist, N, M, inverted, nonzero_only = _check_pair_args(dist, ddist, inverted, nonzero_only)
    labels, ref_labels = _check_label_pair(labels, ref_labels, N, M)
    exclude_self = _check_self(exclude_self, N, M)
    pm = check_float(pos_margin, "pos_margin")
    nm = check_float(neg_margin, "neg_margin")
    loss, g, stats = _contrastive_all(dist, labels, ref_labels, pm, nm, exclude_self, inverted,
                                      nonzero_only)
    ddist[...] = g
    return loss, ddist, stats


def contrastive_loss_pairs(dist, a1, p, a2, n, pos_margin=0.0, neg_margin=1.0, inverted=False,
                           nonzero_only=True, ddist=None):
    """Contrastive loss over given pairs (pytorch-metric-learning's ``(a1, p, a2, n)``), fused.

    Same terms and reduction as :func:`contrastive_loss_all`; ``(a1[k], p[k])`` are the positive
    pairs, ``(a2[k], n[k])`` the negative ones; a pair listed twice counts twice.

    Parameters
    ----------
    dist : (N, M) float32
    a1, p : (K1,) int64
        Row indices in [0, N) and column indices in [0, M) of the positive pairs.
    a2, n : (K2,) int64
        Same for the negative pairs.
    pos_margin, neg_margin, inverted, nonzero_only, ddist : see :func:`contrastive_loss_all`.

    Returns
    -------
    (loss, ddist, stats) : (float, (N, M) float32, dict)
    """
    dist, ddist, N, M, inverted, nonzero_only = _check_pair_args(dist, ddist, inverted, nonzero_only)
    a1 = _check_int_array(a1, "a1", upper=N)
    p = _check_int_array(p, "p", length=a1.shape[0], upper=M)
    a2 = _check_int_array(a2, "a2", upper=N)
    n = _check_int_array(n, "n", length=a2.shape[0], upper=M)
    pm = check_float(pos_margin, "pos_margin")
    nm = check_float(neg_margin, "neg_margin")
    loss, g, stats = _contrastive_pairs(dist, a1, p, a2, n, pm, nm, inverted, nonzero_only)
    ddist[...] = g
    return loss, ddist, stats


def triplet_loss_all(dist, labels, ref_labels, margin=0.05, exclude_self=False, swap=False, smooth=False,
                     inverted=False, nonzero_only=True, ddist=None):
    """Triplet margin loss over every triplet of a distance matrix, and dL/d dist (fused).

    pytorch-metric-learning's ``TripletMarginLoss`` (Schroff, Kalenichenko & Philbin 2015) with
    ``triplets_per_anchor="all"``: for every anchor a, positive p (same label, p != a under
    ``exclude_self``) and negative n (other label), ``v = (d_ap - d_an) + margin``
    (similarity: ``(s_an - s_ap) + margin``), loss ``relu(v)`` or ``softplus(v)`` (``smooth``),
    averaged over the triplets with loss > 0 (``nonzero_only``) or over all of them.
    ``swap`` replaces d_an by ``min(d_an, d_pn)`` (similarity: max); ties split the gradient.
    The engine never materializes the triplets (parallel over anchors).

    Parameters
    ----------
    dist : (N, M) float32
    labels : (N,) int64
    ref_labels : (M,) int64
    margin : float, default 0.05
    exclude_self : bool, default False
        Requires N == M.
    swap : bool, default False
        Requires the reference set to be the batch (N == M and equal labels).
    smooth, inverted : bool, default False
    nonzero_only : bool, default True
    ddist : (N, M) float32, optional (overwritten)

    Returns
    -------
    (loss, ddist, stats) : (float, (N, M) float32, dict)
        ``stats``: loss, num_triplets, num_nonzero.
    """
    dist, ddist, N, M, inverted, nonzero_only = _check_pair_args(dist, ddist, inverted, nonzero_only)
    labels, ref_labels = _check_label_pair(labels, ref_labels, N, M)
    exclude_self = _check_self(exclude_self, N, M)
    swap = _check_swap_all(swap, labels, ref_labels)
    smooth = _check_flag(smooth, "smooth")
    margin = check_float(margin, "margin")
    loss, g, stats = _triplet_all(dist, labels, ref_labels, margin, exclude_self, swap, smooth,
                                  inverted, nonzero_only)
    ddist[...] = g
    return loss, ddist, stats


def triplet_loss_triplets(dist, a, p, n, margin=0.05, swap=False, smooth=False, inverted=False,
                          nonzero_only=True, ddist=None):
    """Triplet margin loss over given triplets ``(a, p, n)``, and dL/d dist (fused).

    Same terms and reduction as :func:`triplet_loss_all`; a triplet listed twice counts twice.

    Parameters
    ----------
    dist : (N, M) float32
    a : (K,) int64 in [0, N)
    p, n : (K,) int64 in [0, M) (``p`` also < N when ``swap``: d_pn is read at row p)
    margin, swap, smooth, inverted, nonzero_only, ddist : see :func:`triplet_loss_all`.

    Returns
    -------
    (loss, ddist, stats) : (float, (N, M) float32, dict)
    """
    dist, ddist, N, M, inverted, nonzero_only = _check_pair_args(dist, ddist, inverted, nonzero_only)
    swap = _check_flag(swap, "swap")
    a = _check_int_array(a, "a", upper=N)
    p = _check_int_array(p, "p", length=a.shape[0], upper=min(N, M) if swap else M)
    n = _check_int_array(n, "n", length=a.shape[0], upper=M)
    smooth = _check_flag(smooth, "smooth")
    margin = check_float(margin, "margin")
    loss, g, stats = _triplet_triplets(dist, a, p, n, margin, swap, smooth, inverted, nonzero_only)
    ddist[...] = g
    return loss, ddist, stats
