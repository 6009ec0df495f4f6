"""Numpy twins of the proxy-loss kernels (``mantissa_embed._engine._proxy_losses``).

Same signatures as the engine; they compute in float64 and return float32 gradients, from the
private float64 helpers below (plain numpy, independent of the losses' own float64 paths).
"""
from __future__ import annotations

import numpy as np

from .._checks.proxy_losses import check_p2sgrad_args, check_softmax_xent_args, check_xent_scales
from ._softmax_losses import softmax_nll_backward, softmax_nll_forward

__all__ = ["p2sgrad_forward_backward", "softmax_xent_forward_backward", "softmax_nll_fast_forward",
           "softmax_nll_fast_backward"]


def softmax_xent_forward_backward(logits, labels, scale: float = 1.0, grad_scale: float = 1.0, dlogits=None):
    """Per-row softmax cross-entropy of ``scale * logits`` and its (scaled) gradient.

    logits (N, C) float32, labels (N,) int64 in [0, C) -> (row_loss (N,) float64 =
    logsumexp_j(s z_ij) - s z_{i,y_i}, dlogits (N, C) float32 = grad_scale * s * (softmax(s z_i)
    - onehot(y_i))), s = scale. ``grad_scale=1/N`` makes dlogits the gradient of the mean.

    Raises TypeError for labels that are not int64 or a non-number scale / grad_scale,
    ValueError for wrong shapes, labels outside [0, C), a scale beyond the float32 range or
    dlogits overlapping logits or labels.
    """
    x, lab, out = check_softmax_xent_args(logits, labels, dlogits)
    scale, grad_scale = check_xent_scales(scale, grad_scale)
    N, C = x.shape
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
    xx, ww, lab, dxo, dwo = check_p2sgrad_args(x, w, labels, dx, dw)
    loss, gx, gw = p2sgrad64(xx.astype(np.float64), ww.astype(np.float64), lab)
    dxo[...] = gx
    dwo[...] = gw
    return loss, dxo, dwo


def softmax_nll_fast_forward(sim, labels, ref_labels, scale: float = 1.0, exclude_self: bool = False,
                             inverted: bool = True,
                             max_loss=np.inf):
    """Twin of the engine's fast row softmax NLL: the float64 ``softmax_nll_forward`` (the C
    kernel uses one float exp per entry and agrees with it up to float32 rounding of the logits)."""
    return softmax_nll_forward(sim, labels, ref_labels, scale=scale, exclude_self=exclude_self,
                               inverted=inverted, max_loss=max_loss)


def softmax_nll_fast_backward(sim, labels, ref_labels, lse, weights, scale: float = 1.0, exclude_self: bool = False,
                              inverted: bool = True):
    """Twin of the engine's fast row softmax NLL backward: the float64 ``softmax_nll_backward``."""
    return softmax_nll_backward(sim, labels, ref_labels, lse, weights, scale=scale,
                                exclude_self=exclude_self, inverted=inverted)


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


def l2_normalize64(x, eps: float = 1e-12):
    """Rows of x (N, D) divided by max(||x_i||, eps) (torch.nn.functional.normalize) and its backward."""
    nrm = np.sqrt(np.einsum("ij,ij->i", x, x))
    den = np.maximum(nrm, eps)[:, None]
    y = x / den

    def backward(dy):
        # (dy - y <y, dy>) / den on rows with ||x_i|| > eps, dy / den elsewhere
        s = np.where(nrm > eps, np.einsum("ij,ij->i", y, dy), 0.0).astype(y.dtype, copy=False)
        return (dy - y * s[:, None]) / den

    return y, backward


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
    p = e
    p /= s

    def backward(dl):
        dz = p * dl[:, None]
        dz[rows, labels] -= dl
        return dz

    return losses, backward
