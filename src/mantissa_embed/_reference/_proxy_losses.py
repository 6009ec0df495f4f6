"""Numpy twins of the proxy-loss kernels (``mantissa_embed._engine._proxy_losses``).

Same signatures as the engine; they compute in float64 and return float32 gradients, with
``_checks.proxy_losses.p2sgrad64`` and ``softmax_xent64``, which the losses' float64 paths share
(``p2sgrad64``'s docstring says why).
"""

from __future__ import annotations

import numpy as np

from .._checks.proxy_losses import (
    check_p2sgrad_args,
    check_softmax_xent_args,
    check_xent_scales,
    p2sgrad64,
    softmax_xent64,
)

__all__ = [
    "p2sgrad_forward_backward",
    "softmax_xent_forward_backward",
]


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
