"""ReLU, leaky ReLU, dropout's mask product, the finiteness check, the fully connected layer and the SGD / Adam steps
(``src/engine_c/activations.c``, ``dense.c``, ``optim.c``)."""
import numpy as np

from libc.stdint cimport int64_t

from mantissa_embed._checks.activations import (act_flag, check_act_args, check_act_backward_args,
                                                check_dropout_args, check_negative_slope)
from mantissa_embed._checks.arrays import check_kernel_output, check_outs, store_grad
from mantissa_embed._checks.dense import check_dense_args, check_dense_backward_args
from mantissa_embed._checks.optim import check_adam_args, check_sgd_args
from mantissa_embed._engine._cengine cimport (me_adam_step, me_all_finite, me_dense_backward,
                                             me_dense_forward, me_dropout_apply,
                                             me_leaky_relu_backward,
                                             me_leaky_relu_forward, me_relu_backward,
                                             me_relu_forward, me_sgd_step)


__all__ = ['relu_forward', 'relu_backward', 'all_finite', 'dense_forward', 'dense_backward',
           'sgd_step', 'adam_step', 'leaky_relu_forward', 'leaky_relu_backward', 'dropout_forward',
           'dropout_backward']


ctypedef void (*_binary_map)(const float *a, const float *b, float *out, int64_t n) noexcept nogil


cdef object _map2(_binary_map fn, a, b, out):
    """out = fn(a, b) element-wise over the flattened (checked, same-size) arrays; ``out``."""
    cdef const float[::1] av
    cdef const float[::1] bv
    cdef float[::1] ov
    cdef int64_t n = a.size
    if n == 0:
        return out
    av = a.reshape(-1)
    bv = b.reshape(-1)
    ov = out.reshape(-1)
    with nogil:
        fn(&av[0], &bv[0], &ov[0], n)
    return out


def _act_inplace(out, code, slope):
    """``out`` after the activation ``code`` (``act_flag``) in place: the epilogue of the kernels'
    empty-input paths (conv, dense), where the output is the bias alone."""
    if code == 1:
        relu_forward(out, out=out)
    elif code == 2:
        leaky_relu_forward(out, slope, out=out)
    return out


def relu_forward(x, out=None):
    """out = max(x, 0), element-wise, any shape, float32. ``out`` may be ``x`` (in place)."""
    cdef const float[::1] xv
    cdef float[::1] ov
    cdef int64_t n
    x, out = check_act_args(x, out)
    n = x.size
    if n == 0:
        return out
    xv = x.reshape(-1)
    ov = out.reshape(-1)
    with nogil:
        me_relu_forward(&xv[0], &ov[0], n)
    return out


def relu_backward(dy, y, dx=None):
    """dx = dy * (y > 0), y the forward *output*; any shape, float32. ``dx`` may be ``dy``."""
    dy, y, dx = check_act_backward_args(dy, y, dx)
    return _map2(me_relu_backward, dy, y, dx)


def all_finite(x):
    """True when no value of x (float32, C-contiguous, any shape) is NaN or +-Inf (OpenMP over
    blocks above 65,536 values); numpy.isfinite(x).all() in one read, no boolean temporary.
    Raises TypeError for another dtype or layout."""
    cdef const float[::1] xv
    cdef int64_t n
    cdef int ok
    if not (isinstance(x, np.ndarray) and x.dtype == np.float32 and x.flags.c_contiguous):
        raise TypeError("x must be a C-contiguous float32 numpy.ndarray")
    n = x.size
    if n == 0:
        return True
    xv = x.reshape(-1)
    with nogil:
        ok = me_all_finite(&xv[0], n)
    return ok != 0


def dense_forward(x, w, b, out=None, act=None, negative_slope=0.01):
    """Fully connected layer, as ``torch.nn.functional.linear``: x (N,I), w (O,I),
    b (O,) or None -> out (N,O) = x @ w.T + b, float32 (one SGEMM); ``act="relu"`` applies
    max(., 0), ``act="leaky_relu"`` ``leaky_relu(., negative_slope)``, in the same call.
    Raises ValueError/TypeError."""
    cdef const float[:, ::1] xv
    cdef const float[:, ::1] wv
    cdef const float[::1] bv
    cdef float[:, ::1] ov
    cdef const float *bp = NULL
    cdef int64_t N, I, O
    cdef int code = act_flag(act)
    cdef float slope = check_negative_slope(negative_slope)
    x, w, b = check_dense_args(x, w, b)
    N, I = x.shape[0], x.shape[1]
    O = w.shape[0]
    out = check_kernel_output(out, "out", (N, O))
    check_outs([(out, "out")], [(x, "x"), (w, "w"), (b, "b")])
    if x.size == 0 or w.size == 0:  # no input value: the bias
        if b is None:
            out.fill(0)
        else:
            out[...] = b + np.float32(0)  # as 0 + b: no -0.0
        return _act_inplace(out, code, slope)
    xv = x
    wv = w
    ov = out
    if b is not None:
        bv = b
        bp = &bv[0]
    with nogil:
        me_dense_forward(&xv[0, 0], &wv[0, 0], bp, &ov[0, 0], N, I, O, code, slope)
    return out


def dense_backward(x, w, dy, dx=None, dw=None, db=None, need_dx=True, accumulate=False):
    """Gradients of ``dense_forward`` for dy (N,O), float32: ``(dx, dw, db)`` with
    dx = dy @ w (N,I) (overwritten; None when ``need_dx`` is False), dw = dy.T @ x (O,I),
    db = dy.sum(0) (O,): new arrays when None, else overwritten, or added to when
    ``accumulate`` is True. Raises ValueError/TypeError."""
    cdef const float[:, ::1] xv
    cdef const float[:, ::1] wv
    cdef const float[:, ::1] dyv
    cdef float[:, ::1] dxv
    cdef float[:, ::1] dwv
    cdef float[::1] dbv
    cdef float *dxp = NULL
    cdef int64_t N, I, O
    cdef int acc
    x, w, dy, dx, dw, db, need_dx, accumulate = check_dense_backward_args(
        x, w, dy, dx, dw, db, need_dx, accumulate)
    N, I = x.shape[0], x.shape[1]
    O = w.shape[0]
    if N == 0 or I == 0 or O == 0:  # an empty product: dx and dw are zero, db sums dy
        if need_dx:
            dx.fill(0)
        store_grad(dw, 0, accumulate)
        store_grad(db, dy.sum(axis=0), accumulate)
        return dx, dw, db
    acc = 1 if accumulate else 0
    xv = x
    wv = w
    dyv = dy
    dwv = dw
    dbv = db
    if need_dx:
        dxv = dx
        dxp = &dxv[0, 0]
    with nogil:
        me_dense_backward(&xv[0, 0], &wv[0, 0], &dyv[0, 0], dxp, &dwv[0, 0], &dbv[0], N, I, O, acc)
    return dx, dw, db


def sgd_step(p, g, v, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, first=False):
    """One in-place ``torch.optim.SGD`` step on the float32 parameter array p (any shape).

    g: gradient, same shape; v: momentum buffer (float32, same shape; may be None when
    momentum == 0). With ``g' = g + weight_decay * p``: ``v = g'`` on the ``first`` step,
    ``v = momentum * v + (1 - dampening) * g'`` after; ``p -= lr * d`` with
    ``d = g' + momentum * v`` (nesterov), ``v`` (momentum) or ``g'``.
    Source: torch/optim/sgd.py (_single_tensor_sgd). Returns None.
    """
    cdef float[::1] pv
    cdef const float[::1] gv
    cdef float[::1] vv
    cdef float *vp = NULL
    cdef int64_t n
    cdef float c_lr, c_mom, c_damp, c_wd
    cdef int c_nest, c_first
    p, g, v, lr, momentum, dampening, weight_decay, nesterov, first = check_sgd_args(
        p, g, v, lr, momentum, dampening, weight_decay, nesterov, first)
    n = p.size
    if n == 0:
        return None
    c_lr, c_mom, c_damp, c_wd = lr, momentum, dampening, weight_decay
    c_nest = nesterov
    c_first = first
    pv = p.reshape(-1)
    gv = g.reshape(-1)
    if momentum != 0.0:
        vv = v.reshape(-1)
        vp = &vv[0]
    with nogil:
        me_sgd_step(&pv[0], &gv[0], vp, n, c_lr, c_mom, c_damp, c_wd, c_nest, c_first)
    return None


def adam_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decoupled=False):
    """One in-place ``torch.optim.Adam`` step (amsgrad=False) at step number t >= 1, or
    ``torch.optim.AdamW`` with ``decoupled=True``.

    p, m, v: float32 arrays of one shape (m, v the moment buffers, zeros before step 1);
    g: gradient, same shape. Adam: ``g' = g + weight_decay * p`` (L2); AdamW: ``g' = g`` and
    ``p *= 1 - lr * weight_decay`` first. Then ``m = lerp(m, g', 1 - beta1)``,
    ``v = beta2 * v + (1 - beta2) * g'^2``,
    ``p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``.
    Source: Kingma & Ba (2015), "Adam", ICLR; Loshchilov & Hutter (2019), "Decoupled Weight
    Decay Regularization", ICLR; torch/optim/adam.py. Returns None.
    """
    cdef float[::1] pv
    cdef const float[::1] gv
    cdef float[::1] mv
    cdef float[::1] vv
    cdef int64_t n, c_t
    cdef float c_lr, c_b1, c_b2, c_eps, c_wd
    cdef int c_dec
    p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decoupled = check_adam_args(
        p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decoupled)
    n = p.size
    if n == 0:
        return None
    c_t = t
    c_lr, c_b1, c_b2, c_eps, c_wd = lr, beta1, beta2, eps, weight_decay
    c_dec = decoupled
    pv = p.reshape(-1)
    gv = g.reshape(-1)
    mv = m.reshape(-1)
    vv = v.reshape(-1)
    with nogil:
        me_adam_step(&pv[0], &gv[0], &mv[0], &vv[0], n, c_t, c_lr, c_b1, c_b2, c_eps, c_wd, c_dec)
    return None


def leaky_relu_forward(x, negative_slope=0.01, out=None):
    """out = x where x >= 0, else ``negative_slope * x`` (``torch.nn.functional.leaky_relu``),
    element-wise, any shape, float32; ``out`` may be ``x`` (in place). ``negative_slope``: a
    finite float >= 0 (default 0.01, torch's). Raises ValueError/TypeError."""
    cdef const float[::1] xv
    cdef float[::1] ov
    cdef int64_t n
    cdef float slope = check_negative_slope(negative_slope)
    x, out = check_act_args(x, out)
    n = x.size
    if n == 0:
        return out
    xv = x.reshape(-1)
    ov = out.reshape(-1)
    with nogil:
        me_leaky_relu_forward(&xv[0], &ov[0], n, slope)
    return out


def leaky_relu_backward(dy, y, negative_slope=0.01, dx=None):
    """dx = dy where y > 0, else ``negative_slope * dy``, y the forward *output* (torch's rule:
    the slope at 0); any shape, float32. ``dx`` may be ``dy``. Raises ValueError/TypeError."""
    cdef const float[::1] dyv
    cdef const float[::1] yv
    cdef float[::1] dxv
    cdef int64_t n
    cdef float slope = check_negative_slope(negative_slope)
    dy, y, dx = check_act_backward_args(dy, y, dx)
    n = dy.size
    if n == 0:
        return dx
    dyv = dy.reshape(-1)
    yv = y.reshape(-1)
    dxv = dx.reshape(-1)
    with nogil:
        me_leaky_relu_backward(&dyv[0], &yv[0], &dxv[0], n, slope)
    return dx


def dropout_forward(x, mask, out=None):
    """Inverted dropout with a drawn mask: out = x * mask, any shape, float32; ``mask`` holds 0
    (dropped) or ``1/(1 - p)`` (kept), as ``torch.nn.functional.dropout`` in training (the
    layer ``Dropout`` draws it). ``out`` may be ``x``. Raises ValueError/TypeError."""
    x, mask, out = check_dropout_args(x, mask, out)
    return _map2(me_dropout_apply, x, mask, out)


def dropout_backward(dy, mask, dx=None):
    """Gradient of ``dropout_forward``: dx = dy * mask (the forward's mask). ``dx`` may be ``dy``.
    Raises ValueError/TypeError."""
    dy, mask, dx = check_dropout_args(dy, mask, dx, "dy", "dx")
    return _map2(me_dropout_apply, dy, mask, dx)
