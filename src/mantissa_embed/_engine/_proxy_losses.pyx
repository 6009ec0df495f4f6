"""P2SGrad and the classifier softmax cross-entropy (``src/engine_c/proxy_losses.c``)."""
import numpy as np

from libc.stdint cimport int64_t

from mantissa_embed._checks.proxy_losses import (check_p2sgrad_args, check_softmax_xent_args,
                                                 check_xent_scales)
from mantissa_embed._engine._cengine cimport (me_p2sgrad_forward_backward, me_p2sgrad_workspace_size,
                                             me_softmax_xent_forward_backward)


__all__ = ['p2sgrad_forward_backward', 'softmax_xent_forward_backward']


def p2sgrad_forward_backward(x, w, labels, dx=None, dw=None):
    """P2SGrad loss and gradients (C kernel). x (N, D), w (C, D) float32, labels (N,) int64 in [0, C)
    -> (loss: float, dx (N, D), dw (C, D) float32). See
    ``mantissa_embed._reference.p2sgrad_forward_backward``."""
    xx, ww, lab, dxo, dwo = check_p2sgrad_args(x, w, labels, dx, dw)
    N, D = xx.shape
    C = ww.shape[0]
    if N == 0 or C == 0 or D == 0:
        dxo[...] = 0
        dwo[...] = 0
        return 0.0, dxo, dwo
    ws = np.empty(me_p2sgrad_workspace_size(N, C, D), dtype=np.float32)
    cdef const float[:, ::1] xv = xx
    cdef const float[:, ::1] wv = ww
    cdef const int64_t[::1] lv = lab
    cdef float[:, ::1] dxv = dxo
    cdef float[:, ::1] dwv = dwo
    cdef float[::1] wsv = ws
    cdef int64_t n = N, c = C, d = D
    cdef double loss
    with nogil:
        loss = me_p2sgrad_forward_backward(&xv[0, 0], &wv[0, 0], &lv[0], &dxv[0, 0], &dwv[0, 0],
                                           n, c, d, &wsv[0])
    return float(loss), dxo, dwo


def softmax_xent_forward_backward(logits, labels, scale=1.0, grad_scale=1.0, dlogits=None):
    """Per-row softmax cross-entropy and its gradient (C kernel). logits (N, C) float32, labels (N,)
    int64 -> (row_loss (N,) float64, dlogits (N, C) float32). See
    ``mantissa_embed._reference.softmax_xent_forward_backward``."""
    x, lab, out = check_softmax_xent_args(logits, labels, dlogits)
    cdef float fs, fg
    fs, fg = check_xent_scales(scale, grad_scale)
    N, C = x.shape
    rl = np.zeros(N, dtype=np.float64)
    if N == 0:
        return rl, out
    if C == 0:
        raise ValueError("logits must have at least one column")
    cdef const float[:, ::1] zv = x
    cdef const int64_t[::1] lv = lab
    cdef double[::1] rv = rl
    cdef float[:, ::1] dv = out
    cdef int64_t n = N, c = C
    with nogil:
        me_softmax_xent_forward_backward(&zv[0, 0], &lv[0], &rv[0], &dv[0, 0], n, c, fs, fg)
    return rl, out
