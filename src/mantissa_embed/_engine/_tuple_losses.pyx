"""AngularLoss over (anchor, positive) pairs (``src/engine_c/tuple_losses.c``)."""
import numpy as np

from libc.stdint cimport int64_t

from mantissa_embed._checks.arrays import check_kernel_input
from mantissa_embed._checks.tuple_losses import check_angular_args
from mantissa_embed._engine._cengine cimport me_angular_loss_backward, me_angular_loss_forward


__all__ = ['angular_loss_forward', 'angular_loss_backward']


def _csr(idx, n):
    """(pair ids grouped by idx (stable), offsets (n+1)) as int64."""
    order = np.argsort(idx, kind="stable").astype(np.int64)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(idx, minlength=n), out=ptr[1:])
    return order, ptr


def angular_loss_forward(A, B, c, a, p, labels, ref_labels):
    """Per-pair AngularLoss losses (P,) float32 from the logit matrices A (N, M), B (M, M) and c (P,).

    See ``mantissa_embed._reference.angular_loss_forward``.
    """
    A, B, c, a, p, labels, ref_labels, N, M, P = check_angular_args(A, B, c, a, p, labels, ref_labels)
    out = np.zeros(P, dtype=np.float32)
    if P == 0 or M == 0:
        return out
    cdef const float[:, ::1] Av = A
    cdef const float[:, ::1] Bv = B
    cdef const float[::1] cv = c
    cdef const int64_t[::1] av = a
    cdef const int64_t[::1] pv = p
    cdef const int64_t[::1] lv = labels
    cdef const int64_t[::1] rv = ref_labels
    cdef float[::1] ov = out
    cdef int64_t cn = N, cm = M, cp = P
    with nogil:
        me_angular_loss_forward(&Av[0, 0], &Bv[0, 0], &cv[0], &av[0], &pv[0], &lv[0], &rv[0], &ov[0],
                                cn, cm, cp)
    return out


def angular_loss_backward(A, B, c, a, p, labels, ref_labels, losses, dlosses):
    """(dA (N, M), dB (M, M), dc (P,)) float32: gradients of sum_k dlosses[k] * losses[k].

    See ``mantissa_embed._reference.angular_loss_backward``.
    """
    A, B, c, a, p, labels, ref_labels, N, M, P = check_angular_args(A, B, c, a, p, labels, ref_labels)
    losses = check_kernel_input(losses, "losses", ndim=1)
    dlosses = check_kernel_input(dlosses, "dlosses", ndim=1)
    if losses.shape[0] != P or dlosses.shape[0] != P:
        raise ValueError(f"losses and dlosses must have length {P}, got {losses.shape[0]} and {dlosses.shape[0]}")
    dA = np.zeros((N, M), dtype=np.float32)
    dB = np.zeros((M, M), dtype=np.float32)
    dc = np.zeros(P, dtype=np.float32)
    if P == 0 or M == 0:
        return dA, dB, dc
    by_a, a_ptr = _csr(a, N)
    by_p, p_ptr = _csr(p, M)
    cdef const float[:, ::1] Av = A
    cdef const float[:, ::1] Bv = B
    cdef const float[::1] cv = c
    cdef const int64_t[::1] av = a
    cdef const int64_t[::1] pv = p
    cdef const int64_t[::1] lv = labels
    cdef const int64_t[::1] rv = ref_labels
    cdef const float[::1] losv = losses
    cdef const float[::1] dlv = dlosses
    cdef const int64_t[::1] bav = by_a
    cdef const int64_t[::1] apv = a_ptr
    cdef const int64_t[::1] bpv = by_p
    cdef const int64_t[::1] ppv = p_ptr
    cdef float[:, ::1] dAv = dA
    cdef float[:, ::1] dBv = dB
    cdef float[::1] dcv = dc
    cdef int64_t cn = N, cm = M, cp = P
    with nogil:
        me_angular_loss_backward(&Av[0, 0], &Bv[0, 0], &cv[0], &av[0], &pv[0], &lv[0], &rv[0],
                                 &losv[0], &dlv[0], &bav[0], &apv[0], &bpv[0], &ppv[0],
                                 &dAv[0, 0], &dBv[0, 0], &dcv[0], cn, cm, cp)
    return dA, dB, dc
