"""The fully connected layer, forward (one SGEMM, bias and activation in the epilogue) and backward
(``src/engine_c/dense.c``)."""
import numpy as np

from libc.stdint cimport int64_t

from mantissa_embed._checks.activations import act_flag, check_negative_slope
from mantissa_embed._checks.arrays import check_kernel_output, check_outs, store_grad
from mantissa_embed._checks.dense import check_dense_args, check_dense_backward_args
from mantissa_embed._engine._activations import _act_inplace
from mantissa_embed._engine._cengine cimport me_dense_backward, me_dense_forward


__all__ = ['dense_forward', 'dense_backward']


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
