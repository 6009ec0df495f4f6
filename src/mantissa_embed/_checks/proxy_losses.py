"""Argument checks of the classifier softmax cross-entropy and P2SGrad kernels, and the float64
P2SGrad and softmax cross-entropy that the losses and the numpy twin share (``p2sgrad64``,
``softmax_xent64``)."""

from __future__ import annotations

import numpy as np

from .arrays import check_f32, check_kernel_input, check_kernel_output, check_no_overlap
from .distance import l2_normalize_rows


def check_class_labels(labels, N, C):
    """labels (N,) int64 C-contiguous in [0, C); TypeError / ValueError otherwise."""
    lab = np.asarray(labels)
    if lab.dtype != np.int64 or lab.ndim != 1 or not lab.flags.c_contiguous:
        raise TypeError("labels must be a 1-D C-contiguous int64 array")
    if lab.shape[0] != N:
        raise ValueError(f"labels must have length {N}, got {lab.shape[0]}")
    if lab.size and (lab.min() < 0 or lab.max() >= C):
        raise ValueError(f"labels must be in [0, {C})")
    return lab


def check_xent_inputs(logits, labels, name: str = "logits"):
    """(logits (N, C) float32, labels (N,) int64 in [0, C)); TypeError / ValueError otherwise."""
    x = check_kernel_input(logits, name, ndim=2)
    return x, check_class_labels(labels, x.shape[0], x.shape[1])


def check_softmax_xent_args(logits, labels, dlogits):
    """(logits, labels, dlogits) of ``softmax_xent_forward_backward``, the output new when None."""
    x, lab = check_xent_inputs(logits, labels)
    out = check_kernel_output(dlogits, "dlogits", x.shape)
    check_no_overlap(out, "dlogits", (x, "logits"), (lab, "labels"))  # labels index the rows: no overwrite
    return x, lab, out


def check_xent_scales(scale, grad_scale):
    """``scale`` and ``grad_scale`` of ``softmax_xent_forward_backward``: finite, in the float32
    range (the kernel takes C floats). TypeError / ValueError naming them."""
    return check_f32(scale, "scale"), check_f32(grad_scale, "grad_scale")


def check_p2sgrad_args(x, w, labels, dx, dw):
    """(x (N, D), w (C, D), labels (N,) in [0, C), dx, dw) of ``p2sgrad_forward_backward``."""
    xx = check_kernel_input(x, "x", ndim=2)
    ww = check_kernel_input(w, "w", ndim=2)
    if ww.shape[1] != xx.shape[1]:
        raise ValueError(f"w must have {xx.shape[1]} columns like x, got shape {ww.shape}")
    lab = check_class_labels(labels, xx.shape[0], ww.shape[0])  # no (N, C) array to check them
    dxo = check_kernel_output(dx, "dx", xx.shape)
    dwo = check_kernel_output(dw, "dw", ww.shape)
    check_no_overlap(dxo, "dx", (xx, "x"), (ww, "w"), (lab, "labels"))
    check_no_overlap(dwo, "dw", (xx, "x"), (ww, "w"), (dxo, "dx"), (lab, "labels"))
    return xx, ww, lab, dxo, dwo


def p2sgrad64(x, w, labels):
    """float64 P2SGrad: ``(loss, dx (N, D), dw (C, D))`` for x (N, D), w (C, D) float64 and labels
    (N,) int64 in [0, C): ``cos_ij = clamp(<x_i / max(|x_i|, 1e-12), w_j>, -1, 1)``, ``loss =
    1/(N C) sum_ij (cos_ij - [j = y_i])^2``, ``dw`` with ``w`` held as given. N = 0: zeros.

    The one implementation of two users: ``P2SGradLoss.compute64`` (the loss's float64 path, which
    the finite-difference tests run) and the numpy twin ``p2sgrad_forward_backward`` (the reference
    the C kernel of ``proxy_losses.c`` is tested against). It lives here because ``_checks`` is the
    one package both may import: production code never imports ``_reference``, and ``_reference``
    imports only numpy, ``_checks`` and the engine's workspace sizes. The C kernel is still checked
    against an independent computation, since this numpy code shares nothing with it; this function
    is in turn checked against finite differences and the paper's closed-form gradient.
    """
    N, D = x.shape
    C = w.shape[0]
    if N == 0:
        return 0.0, np.zeros((N, D)), np.zeros((C, D))
    xn, back = l2_normalize_rows(x)
    raw = xn @ w.T
    cos = np.clip(raw, -1.0, 1.0)
    diff = cos.copy()
    diff[np.arange(N), labels] -= 1.0
    loss = float(np.sum(diff * diff) / (N * C))
    dcos = (2.0 / (N * C)) * diff
    dcos[(raw < -1.0) | (raw > 1.0)] = 0.0
    return loss, back(dcos @ w), dcos.T @ xn


def softmax_xent64(z, labels, scratch=None):
    """Row softmax cross-entropy of logits z (N, C) float64 with labels (N,) int64 in [0, C):
    ``(losses (N,) = logsumexp(z_i) - z_{i,y_i}, backward(dlosses (N,)) -> dz (N, C))``.

    ``scratch``: None, or a callable ``name -> array or None`` giving (N, C) arrays of the dtype of
    ``z`` for ``"e"`` (the softmax, kept for the backward) and ``"dz"`` (the backward's result);
    None from it allocates.

    Shared as ``p2sgrad64`` is, for the same reason: the proxy losses' float64 path
    (``BaseProxyLoss._xent``) and the numpy twin ``softmax_xent_forward_backward``, the reference
    of the C kernel, compute it.
    """
    N = z.shape[0]
    if N == 0:
        return np.zeros(0), (lambda dl: np.zeros_like(z))
    buf = (lambda name: None) if scratch is None else scratch
    m = z.max(axis=1, keepdims=True)
    e = np.subtract(z, m, out=buf("e"))
    np.exp(e, out=e)
    s = e.sum(axis=1, keepdims=True)
    lse = (m + np.log(s))[:, 0]
    rows = np.arange(N)
    losses = lse - z[rows, labels]
    p = e
    p /= s

    def backward(dl):
        dz = np.multiply(p, dl[:, None], out=buf("dz"))
        dz[rows, labels] -= dl
        return dz

    return losses, backward
