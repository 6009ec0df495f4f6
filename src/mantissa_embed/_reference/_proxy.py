"""numpy twins of src/engine_c/proxy_losses.c, and the float64 building blocks of the proxy losses.

The kernels (``p2sgrad_forward_backward``, ``softmax_xent_forward_backward``) have the same
Python signature as the wrappers of the same name in :mod:`mantissa_embed.engine`. They compute
in float64 and return float32 gradients. The ``*64`` helpers (not engine twins) are the float64
pieces the proxy losses are assembled from; each returns its value and a backward closure.
"""
from __future__ import annotations

import numpy as np

__all__ = ["p2sgrad_forward_backward", "softmax_xent_forward_backward"]


def _check_xent_inputs(logits, labels, name="logits"):
    from .._validation import check_kernel_input
    x = check_kernel_input(logits, name, ndim=2)
    lab = np.asarray(labels)
    if lab.dtype != np.int64 or lab.ndim != 1 or not lab.flags.c_contiguous:
        raise TypeError("labels must be a 1-D C-contiguous int64 array")
    if lab.shape[0] != x.shape[0]:
        raise ValueError(f"labels must have length {x.shape[0]}, got {lab.shape[0]}")
    if lab.size and (lab.min() < 0 or lab.max() >= x.shape[1]):
        raise ValueError(f"labels must be in [0, {x.shape[1]})")
    return x, lab


def softmax_xent_forward_backward(logits, labels, scale=1.0, grad_scale=1.0, dlogits=None):
    """Per-row softmax cross-entropy of ``scale * logits`` and its (scaled) gradient.

    logits (N, C) float32, labels (N,) int64 in [0, C) -> (row_loss (N,) float64 =
    logsumexp_j(s z_ij) - s z_{i,y_i}, dlogits (N, C) float32 = grad_scale * s * (softmax(s z_i)
    - onehot(y_i))), s = scale. ``grad_scale=1/N`` makes dlogits the gradient of the mean.

    Raises TypeError for labels that are not int64, ValueError for wrong shapes or labels
    outside [0, C).
    """
    x, lab = _check_xent_inputs(logits, labels)
    from .._validation import check_kernel_output
    N, C = x.shape
    out = check_kernel_output(dlogits, "dlogits", (N, C))
    if N == 0:
        return np.zeros(0), out
    if C == 0:
        raise ValueError("logits must have at least one column")
    s = float(np.float32(scale))
    losses, back = softmax_xent64(s * x.astype(np.float64), lab)
    out[...] = (float(np.float32(grad_scale)) * s) * back(np.ones(N))
    return losses, out


def p2sgrad_forward_backward(x, w, labels, dx=None, dw=None):
    """P2SGrad loss (mean squared error between cosines and one-hot targets) and its gradients.

    x (N, D), w (C, D) unit rows, labels (N,) int64 in [0, C) -> (loss, dx (N, D), dw (C, D)):
    cos_ij = clamp(<x_i / max(|x_i|, 1e-12), w_j>, -1, 1), loss = 1/(N C) sum (cos_ij - 1[j = y_i])^2;
    dw is d loss / d w with w held as given (no renormalization is differentiated). N = 0: zeros.
    """
    from .._validation import check_kernel_input, check_kernel_output
    xx = check_kernel_input(x, "x", ndim=2)
    ww = check_kernel_input(w, "w", ndim=2)
    if ww.shape[1] != xx.shape[1]:
        raise ValueError(f"w must have {xx.shape[1]} columns like x, got shape {ww.shape}")
    _, lab = _check_xent_inputs(np.empty((xx.shape[0], ww.shape[0]), np.float32), labels)
    N, D = xx.shape
    C = ww.shape[0]
    dxo = check_kernel_output(dx, "dx", (N, D))
    dwo = check_kernel_output(dw, "dw", (C, D))
    loss, gx, gw = p2sgrad64(xx.astype(np.float64), ww.astype(np.float64), lab)
    dxo[...] = gx
    dwo[...] = gw
    return loss, dxo, dwo


# --------------------------------------------------------------------------------------------
# float64 building blocks (value, backward closure)
# --------------------------------------------------------------------------------------------
def p2sgrad64(x, w, labels):
    """float64 P2SGrad: (loss, dx, dw) for x (N, D), w (C, D), labels (N,)."""
    N, D = x.shape
    C = w.shape[0]
    if N == 0:
        return 0.0, np.zeros((N, D)), np.zeros((C, D))
    xn, back = l2_normalize64(x)
    raw = xn @ w.T
    cos = np.clip(raw, -1.0, 1.0)
    diff = cos.copy()
    diff[np.arange(N), labels] -= 1.0
    loss = float(np.sum(diff * diff) / (N * C))
    dcos = (2.0 / (N * C)) * diff
    dcos[(raw < -1.0) | (raw > 1.0)] = 0.0
    return loss, back(dcos @ w), dcos.T @ xn


def l2_normalize64(x, eps=1e-12):
    """Rows of x (N, D) divided by max(||x_i||, eps) (torch.nn.functional.normalize) and its backward."""
    nrm = np.sqrt(np.sum(x * x, axis=1))
    den = np.maximum(nrm, eps)
    y = x / den[:, None]

    def backward(dy):
        dx = dy / den[:, None]
        big = nrm > eps
        dx[big] -= y[big] * np.sum(y[big] * dy[big], axis=1, keepdims=True) / den[big, None]
        return dx

    return y, backward


def check_distance64(distance, name="distance"):
    """Raise unless ``distance`` is one the float64 path implements (CosineSimilarity,
    DotProductSimilarity, LpDistance with p=2)."""
    from ..distances import DotProductSimilarity, LpDistance
    if not isinstance(distance, (DotProductSimilarity, LpDistance)) or type(distance).__name__ not in (
            "CosineSimilarity", "DotProductSimilarity", "LpDistance"):
        raise TypeError(f"{name} must be CosineSimilarity(), DotProductSimilarity() or LpDistance() "
                        f"for this loss, got {type(distance).__name__}")
    if distance.p != 2:
        raise ValueError(f"{name} must use p=2 for this loss, got p={distance.p!r}")


def similarity64(distance, X, R):
    """PML's ``distance(X, R)`` in float64 for the distances of :func:`check_distance64`.

    X (N, D), R (M, D) -> (mat (N, M), backward(dmat) -> (dX, dR)). Euclidean gradients at
    distance 0 are 0 (torch.cdist's subgradient).
    """
    from ..distances import DotProductSimilarity
    if distance.normalize_embeddings:
        Xn, bx = l2_normalize64(X)
        Rn, br = l2_normalize64(R)
    else:
        Xn, Rn, bx, br = X, R, None, None
    dot = isinstance(distance, DotProductSimilarity)
    if dot:
        base = Xn @ Rn.T
    else:
        n2 = np.sum(Xn * Xn, 1)[:, None] + np.sum(Rn * Rn, 1)[None, :]
        sq = n2 - 2.0 * (Xn @ Rn.T)
        ii, jj = np.nonzero(sq < 1e-6 * n2)  # cancellation: recompute directly (duplicates -> exactly 0)
        if ii.size:
            sq[ii, jj] = np.sum((Xn[ii] - Rn[jj]) ** 2, axis=1)
        base = np.sqrt(np.maximum(sq, 0.0))
    pw = distance.power
    mat = base if pw == 1 else base ** pw

    def backward(dmat):
        if pw == 1:
            dbase = dmat
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                dbase = dmat * pw * base ** (pw - 1)
            dbase = np.where(np.isfinite(dbase), dbase, 0.0)
        if dot:
            dXn, dRn = dbase @ Rn, dbase.T @ Xn
        else:
            G = np.where(base > 0, dbase / np.where(base > 0, base, 1.0), 0.0)
            dXn = Xn * G.sum(1)[:, None] - G @ Rn
            dRn = Rn * G.sum(0)[:, None] - G.T @ Xn
        if bx is not None:
            dXn, dRn = bx(dXn), br(dRn)
        return dXn, dRn

    return mat, backward


def softmax_xent64(z, labels):
    """Per-row softmax cross-entropy of logits z (N, C) float64 with integer labels.

    -> (losses (N,) = logsumexp(z_i) - z_{i,y_i}, backward(dlosses (N,)) -> dz (N, C)).
    """
    N = z.shape[0]
    if N == 0:
        return np.zeros(0), (lambda dl: np.zeros_like(z))
    m = z.max(axis=1, keepdims=True)
    e = np.exp(z - m)
    s = e.sum(axis=1, keepdims=True)
    lse = (m + np.log(s))[:, 0]
    rows = np.arange(N)
    losses = lse - z[rows, labels]
    p = e / s

    def backward(dl):
        dz = p * dl[:, None]
        dz[rows, labels] -= dl
        return dz

    return losses, backward


def logsumexp_masked64(x, keep, add_one=True, axis=0):
    """PML's ``lmu.logsumexp(x, keep_mask, add_one, dim)`` in float64, with its backward.

    Along ``axis``, log(exp(0) + sum_{keep} exp(x)) (add_one), 0 where no element is kept.
    -> (out (reduced along axis), backward(dout) -> dx).
    """
    xm = np.where(keep, x, -np.inf)
    m = np.max(xm, axis=axis, keepdims=True)
    if add_one:
        m = np.maximum(m, 0.0)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.where(keep, np.exp(np.where(keep, x, 0.0) - m), 0.0)
    s = e.sum(axis=axis, keepdims=True)
    if add_one:
        s = s + np.exp(-m)
    any_kept = np.any(keep, axis=axis, keepdims=True)
    safe = np.where(s > 0, s, 1.0)
    out = np.where(any_kept, m + np.log(safe), 0.0)
    p = e / safe

    def backward(dout):
        d = np.expand_dims(dout, axis) if dout.ndim < x.ndim else dout
        return np.where(any_kept, p * d, 0.0)

    return np.squeeze(out, axis=axis), backward
