"""float64 building blocks of the proxy and classifier losses, each returning its value and a
backward closure. Large (N, D) results go to ``scratch`` arrays inside
``using_workspace``."""

from __future__ import annotations

import numpy as np

from .._checks.distance import l2_normalize_rows
from .._checks.proxy_losses import softmax_xent64
from ..distances import DotProductSimilarity, LpDistance
from ._scratch import scratch


def max_over_centers(S3):
    """``S3.max(axis=2)`` for S3 (N, C, K) with a short last axis (the centers of a class), by K
    strided passes: numpy's reduction over a short last axis costs one inner call per (i, c)."""
    m = S3[:, :, 0].copy()
    for k in range(1, S3.shape[2]):
        np.maximum(m, S3[:, :, k], out=m)
    return m


def _in_scratch(prefix, shape, dtype):
    """The ``scratch`` argument of the shared float64 kernels: name -> the scratch array
    ``prefix.name`` of ``shape`` and ``dtype`` (None outside ``using_workspace``)."""
    return lambda name: scratch(f"{prefix}.{name}", shape, dtype)


def _normalize_in_scratch(x, role):
    """``l2_normalize_rows(x)`` with its output and backward temporaries in the scratch arrays
    ``role.y``, ``role.t`` and ``role.dx``."""
    buf = _in_scratch(role, x.shape, x.dtype)
    return l2_normalize_rows(x, out=buf("y"), scratch=buf)


def check_distance64(distance, name: str = "distance"):
    """Raise unless ``distance`` is one the float64 path implements (CosineSimilarity,
    DotProductSimilarity, LpDistance with p=2)."""
    if not isinstance(distance, (DotProductSimilarity, LpDistance)) or type(distance).__name__ not in (
        "CosineSimilarity",
        "DotProductSimilarity",
        "LpDistance",
    ):
        raise TypeError(
            f"{name} must be CosineSimilarity(), DotProductSimilarity() or LpDistance() "
            f"for this loss, got {type(distance).__name__}"
        )
    if distance.p != 2:
        raise ValueError(f"{name} must use p=2 for this loss, got p={distance.p!r}")


def _dpower(dmat, base, pw):
    """d/d base of ``base ** pw`` times dmat (0 where that is not finite, e.g. base 0, pw < 1)."""
    if pw == 1:
        return dmat
    with np.errstate(divide="ignore", invalid="ignore"):
        d = dmat * pw * base ** (pw - 1)
    return np.where(np.isfinite(d), d, 0.0)


def similarity64(distance, X, R, gemm=None):
    """PML's ``distance(X, R)`` for the distances of ``check_distance64``, with its backward.

    X (N, D), R (M, D) -> ``(mat (N, M), backward(dmat) -> (dX, dR))`` in the dtype of X and R
    (float64 with numpy, float32 with ``gemm=engine.sgemm``). Euclidean gradients at distance 0 are
    0; squared distances below ``refine (|x|^2 + |r|^2)`` are recomputed directly.
    """
    if gemm is None:
        gemm = _np_gemm
    if distance.normalize_embeddings and isinstance(distance, DotProductSimilarity):
        return _cosine64(X, R, distance.power, gemm=gemm)
    if distance.normalize_embeddings:
        Xn, bx = _normalize_in_scratch(X, "sim.X")
        Rn, br = _normalize_in_scratch(R, "sim.R")
    else:
        Xn, Rn, bx, br = X, R, None, None
    dot = isinstance(distance, DotProductSimilarity)
    if dot:
        base = gemm(Xn, Rn, scratch("sim.base", (Xn.shape[0], Rn.shape[0]), Xn.dtype), trans_b=True)
    else:
        n2 = np.einsum("ij,ij->i", Xn, Xn)[:, None] + np.einsum("ij,ij->i", Rn, Rn)[None, :]
        sq = gemm(Xn, Rn, trans_b=True, alpha=-2.0)
        sq += n2
        refine = 1e-6 if Xn.dtype == np.float64 else 1e-3
        ii, jj = np.nonzero(sq < refine * n2)  # cancellation: recompute directly (duplicates -> exactly 0)
        if ii.size:
            sq[ii, jj] = np.sum((Xn[ii] - Rn[jj]) ** 2, axis=1)
        base = np.sqrt(np.maximum(sq, 0.0))
    pw = distance.power
    mat = base if pw == 1 else base**pw

    def backward(dmat):
        dbase = _dpower(dmat, base, pw)
        if dot:
            dXn = gemm(
                np.ascontiguousarray(dbase, dtype=Xn.dtype), Rn, scratch("sim.dXn", Xn.shape, Xn.dtype)
            )
            dRn = gemm(np.ascontiguousarray(dbase, dtype=Xn.dtype), Xn, trans_a=True)
        else:
            G = np.where(base > 0, dbase / np.where(base > 0, base, 1.0), 0.0).astype(Xn.dtype, copy=False)
            G = np.ascontiguousarray(G)
            dXn = np.multiply(Xn, G.sum(1)[:, None], out=scratch("sim.dXn", Xn.shape, Xn.dtype))
            dXn = gemm(G, Rn, dXn, alpha=-1.0, beta=1.0)  # Xn rowsum(G) - G Rn
            dRn = gemm(G, Xn, Rn * G.sum(0)[:, None], trans_a=True, alpha=-1.0, beta=1.0)
        if bx is not None:
            dXn, dRn = bx(dXn), br(dRn)
        return dXn, dRn

    return mat, backward


def _np_gemm(
    A, B, C=None, *, trans_a: bool = False, trans_b: bool = False, alpha: float = 1.0, beta: float = 0.0
):
    """``C = alpha op(A) op(B) + beta C`` with numpy, in the dtype of the operands (the contract of
    ``engine.sgemm`` without its float32 checks): the default ``gemm`` of ``_cosine64``."""
    P = np.matmul(A.T if trans_a else A, B.T if trans_b else B, out=C if beta == 0 else None)
    if alpha != 1:
        P *= alpha
    if beta == 0:
        return P
    C *= beta
    C += P
    return C


def _cosine64(X, R, pw, eps: float = 1e-12, gemm=_np_gemm):
    """``similarity64`` of a CosineSimilarity without forming the normalized X:
    ``cos = (X Rn^T) / max(|X_i|, eps)``.
    """
    nrm = np.sqrt(np.einsum("ij,ij->i", X, X))
    den = np.maximum(nrm, eps)[:, None]
    Rn, br = _normalize_in_scratch(R, "sim.R")
    Rn = np.ascontiguousarray(Rn)
    base = gemm(X, Rn, scratch("sim.base", (X.shape[0], Rn.shape[0]), X.dtype), trans_b=True)
    base /= den
    mat = base if pw == 1 else base**pw

    def backward(dmat):
        dbase = _dpower(dmat, base, pw)
        g = np.ascontiguousarray(dbase / den, dtype=X.dtype)  # d/dX through X / den, per cosine
        dRn = gemm(g, X, trans_a=True)  # = dbase^T (X / den)
        sdot = np.einsum("ij,ij->i", dbase, base)  # <X_i / den_i, dXn_i>
        coef = (np.where(nrm > eps, sdot, 0.0)[:, None] / (den * den)).astype(X.dtype, copy=False)
        dX = np.multiply(X, coef, out=scratch("sim.dXn", X.shape, X.dtype))
        dX = gemm(g, Rn, dX, alpha=1.0, beta=-1.0)  # g Rn - X coef
        return dX, br(dRn)

    return mat, backward


def xent_in_scratch(z, labels):
    """``softmax_xent64(z, labels)`` with its arrays in the scratch arrays ``xent.e`` and
    ``xent.dz``."""
    return softmax_xent64(z, labels, scratch=_in_scratch("xent", z.shape, z.dtype))


def logsumexp_masked64(x, keep, add_one: bool = True, axis=0):
    """PML's ``lmu.logsumexp(x, keep_mask, add_one, dim)`` in float64: ``(out, backward(dout) -> dx)``;
    0 where nothing is kept.
    """
    xm = np.where(keep, x, -np.inf)  # exp(-inf - m) = 0: the entries not kept drop out
    m = np.max(xm, axis=axis, keepdims=True)
    if add_one:
        m = np.maximum(m, 0.0)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(np.subtract(xm, m, out=xm), out=xm)
    s = e.sum(axis=axis, keepdims=True)
    if add_one:
        s = s + np.exp(-m)
    any_kept = np.any(keep, axis=axis, keepdims=True)
    safe = np.where(s > 0, s, 1.0)
    out = np.where(any_kept, m + np.log(safe), 0.0)
    p = np.divide(e, safe, out=e)

    def backward(dout):
        d = np.expand_dims(dout, axis) if dout.ndim < x.ndim else dout
        return p * np.where(any_kept, d, 0.0)

    return np.squeeze(out, axis=axis), backward
