"""Argument checks of the classifier softmax cross-entropy and P2SGrad kernels."""
from __future__ import annotations

import numpy as np

from .arrays import check_f32, check_kernel_input, check_kernel_output, check_no_overlap


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
