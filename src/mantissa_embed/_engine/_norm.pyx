"""Batch normalization: forward, backward and the inference fold into a convolution
(``src/engine_c/norm.c``). The checks are shared with the numpy twin (``_checks/norm.py``)."""
from libc.stdint cimport int64_t

from mantissa_embed._checks.norm import (check_batchnorm_backward_args, check_batchnorm_forward_args,
                                         check_batchnorm_fold_args)
from mantissa_embed._engine._cengine cimport me_batchnorm_backward, me_batchnorm_fold, me_batchnorm_forward


__all__ = ['batchnorm_forward', 'batchnorm_backward', 'batchnorm_fold']


cdef inline const float *_cp(a):
    """Data pointer of a float32 C-contiguous array of any rank (NULL for None or empty)."""
    cdef const float[::1] v
    if a is None or a.size == 0:
        return NULL
    v = a.reshape(-1)
    return &v[0]


cdef inline float *_wp(a):
    cdef float[::1] v
    if a is None or a.size == 0:
        return NULL
    v = a.reshape(-1)
    return &v[0]


def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum=0.1, eps=1e-5,
                      out=None, save_mean=None, save_invstd=None, act=None):
    """Batch normalization, as ``torch.nn.functional.batch_norm`` (Ioffe & Szegedy 2015).

    x (N,C), (N,C,L) or (N,C,H,W) float32; gamma, beta, running_mean, running_var (C,) float32.
    ``training``: normalize by the batch's mean and biased variance over N*L (or N*H*W), and
    update ``running_mean`` / ``running_var`` in place with ``momentum`` (the variance
    unbiased; N*L must be >= 2); else normalize by the running statistics.
    ``out = gamma (x - mean) / sqrt(var + eps) + beta`` (the shape of x; may be ``x``), then
    ``max(out, 0)`` when ``act="relu"``. Returns ``(out, save_mean, save_invstd)``: the mean
    and ``1/sqrt(var + eps)`` used, (C,) float32, what ``batchnorm_backward`` takes. Statistics
    in double. Raises ValueError / TypeError naming the argument.
    """
    cdef int64_t N, C, S
    cdef int tr, relu
    cdef float mo, ep
    cdef const float *xp
    cdef const float *gp
    cdef const float *bp
    cdef float *rmp
    cdef float *rvp
    cdef float *op
    cdef float *smp
    cdef float *sip
    (x, gamma, beta, running_mean, running_var, training, momentum, eps, out, save_mean, save_invstd,
     (N, C, S), relu) = check_batchnorm_forward_args(x, gamma, beta, running_mean, running_var, training,
                                                     momentum, eps, out, save_mean, save_invstd, act)
    if C == 0:
        return out, save_mean, save_invstd
    if N * S == 0:  # eval (training needs two values): only save_mean / save_invstd to write
        N, S = 0, 1
    tr = training
    mo = momentum
    ep = eps
    xp, gp, bp = _cp(x), _cp(gamma), _cp(beta)
    rmp, rvp, op, smp, sip = _wp(running_mean), _wp(running_var), _wp(out), _wp(save_mean), _wp(save_invstd)
    with nogil:
        me_batchnorm_forward(xp, gp, bp, rmp, rvp, op, smp, sip, N, C, S, tr, mo, ep, relu)
    return out, save_mean, save_invstd


def batchnorm_backward(dy, x, gamma, save_mean, save_invstd, training=True, act=None, y=None, dx=None,
                       dgamma=None, dbeta=None, need_dx=True, accumulate=False):
    """Gradients of ``batchnorm_forward`` for the upstream gradient dy (the shape of x).

    x, gamma and the forward's ``save_mean`` / ``save_invstd``; ``training``: the forward used
    the batch statistics (the gradient flows through them), else the running ones (an affine
    map). ``act="relu"``: the forward applied a ReLU, whose output ``y`` masks dy (y > 0).
    Returns ``(dx, dgamma, dbeta)``: dx the shape of x (None when ``need_dx`` is False;
    may be ``dy``), dgamma and dbeta (C,) (new when None; overwritten, or added to when
    ``accumulate``). Raises ValueError / TypeError naming the argument.
    """
    cdef int64_t N, C, S
    cdef int tr, acc
    cdef const float *dyp
    cdef const float *xp
    cdef const float *yp
    cdef const float *gp
    cdef const float *smp
    cdef const float *sip
    cdef float *dxp
    cdef float *dgp
    cdef float *dbp
    (dy, x, gamma, save_mean, save_invstd, training, y, dx, dgamma, dbeta, need_dx, accumulate,
     (N, C, S)) = check_batchnorm_backward_args(dy, x, gamma, save_mean, save_invstd, training, act, y, dx,
                                                dgamma, dbeta, need_dx, accumulate)
    if C == 0:
        return dx, dgamma, dbeta
    if N * S == 0:  # sums over no value: dgamma, dbeta 0 (or unchanged when accumulating)
        N, S = 0, 1
    tr = training
    acc = accumulate
    dyp, xp, yp, gp, smp, sip = _cp(dy), _cp(x), _cp(y), _cp(gamma), _cp(save_mean), _cp(save_invstd)
    dxp, dgp, dbp = _wp(dx), _wp(dgamma), _wp(dbeta)
    with nogil:
        me_batchnorm_backward(dyp, xp, yp, gp, smp, sip, dxp, dgp, dbp, N, C, S, tr, acc)
    return dx, dgamma, dbeta


def batchnorm_fold(w, b, gamma, beta, running_mean, running_var, eps=1e-5, w_out=None, b_out=None):
    """An eval-mode batch norm folded into the layer before it (a convolution or a dense layer).

    w (F, ...) float32 (a conv weight (F,C,KH,KW) or a dense weight (F,I)), b (F,) or None;
    gamma, beta, running_mean, running_var (F,) of the batch norm after it. Returns
    ``(w_out, b_out)``: ``w * s`` (per output channel) and ``(b - running_mean) * s + beta``,
    ``s = gamma / sqrt(running_var + eps)``, so the layer with ``(w_out, b_out)`` computes the
    layer then the batch norm (up to float32 rounding). Raises ValueError / TypeError.
    """
    cdef int64_t F, K
    cdef float ep
    cdef const float *wp
    cdef const float *bp
    cdef const float *gp
    cdef const float *btp
    cdef const float *rmp
    cdef const float *rvp
    cdef float *wop
    cdef float *bop
    w, b, gamma, beta, running_mean, running_var, eps, w_out, b_out = check_batchnorm_fold_args(
        w, b, gamma, beta, running_mean, running_var, eps, w_out, b_out)
    F = w.shape[0]
    K = w.size // F
    ep = eps
    wp, bp, gp, btp, rmp, rvp = _cp(w), _cp(b), _cp(gamma), _cp(beta), _cp(running_mean), _cp(running_var)
    wop, bop = _wp(w_out), _wp(b_out)
    with nogil:
        me_batchnorm_fold(wp, bp, gp, btp, rmp, rvp, wop, bop, F, K, ep)
    return w_out, b_out
