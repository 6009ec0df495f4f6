"""The optimizer steps, in place over a parameter array of any shape: SGD and Adam / AdamW
(``src/engine_c/optim.c``)."""
from libc.stdint cimport int64_t

from mantissa_embed._checks.optim import check_adam_args, check_sgd_args
from mantissa_embed._engine._cengine cimport me_adam_step, me_sgd_step


__all__ = ['sgd_step', 'adam_step']


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
