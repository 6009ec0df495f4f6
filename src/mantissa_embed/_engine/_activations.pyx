"""ReLU, leaky ReLU, dropout's mask product and the finiteness check (``src/engine_c/activations.c``),
element-wise over arrays of any shape."""
import numpy as np

from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int64_t

cimport numpy as cnp

from mantissa_embed._checks.activations import (check_act_args, check_act_backward_args, check_dropout_args,
                                                check_negative_slope)
from mantissa_embed._checks.arrays import check_int, check_kernel_output
from mantissa_embed._engine._cengine cimport (me_all_finite, me_copy_all_finite, me_dropout_apply,
                                             me_leaky_relu_backward, me_leaky_relu_forward, me_relu_backward,
                                             me_relu_forward)


__all__ = ['relu_forward', 'relu_backward', 'all_finite', 'copy_rows_finite', 'leaky_relu_forward',
           'leaky_relu_backward', 'dropout_forward', 'dropout_backward']


_F32 = np.dtype(np.float32)

cnp.import_array()


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


def all_finite(x, out=None):
    """True when no value of x (float32, C-contiguous, any shape) is NaN or +-Inf (OpenMP over
    blocks above 65,536 values); numpy.isfinite(x).all() in one read, no boolean temporary.
    ``out`` (optional; float32, C-contiguous, writeable, x's shape, not sharing memory with x):
    x is also copied into it in that read, whatever the answer. Raises TypeError for another
    dtype or layout of x, TypeError / ValueError for a wrong ``out``."""
    cdef Py_buffer xb
    cdef Py_buffer ob
    cdef int ok
    if not (isinstance(x, np.ndarray) and x.dtype == _F32 and x.flags.c_contiguous):
        raise TypeError("x must be a C-contiguous float32 numpy.ndarray")
    if out is not None and not (type(out) is np.ndarray and out.dtype == _F32 and out.shape == x.shape):
        check_kernel_output(out, "out", x.shape)  # its TypeError / ValueError; the layout: below
    # the buffer protocol rather than typed memoryviews: a small array's check is mostly this call
    PyObject_GetBuffer(x, &xb, PyBUF_C_CONTIGUOUS)
    try:
        if out is None:
            with nogil:
                ok = 1 if xb.len == 0 else me_all_finite(<const float *>xb.buf, xb.len // sizeof(float))
            return ok != 0
        try:
            PyObject_GetBuffer(out, &ob, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE)
        except (BufferError, ValueError):
            check_kernel_output(out, "out", x.shape)  # not C-contiguous or not writeable
            raise
        try:
            if (xb.len and <char *>ob.buf < <char *>xb.buf + xb.len
                    and <char *>xb.buf < <char *>ob.buf + ob.len):
                raise ValueError("out must not share memory with x")
            with nogil:
                ok = 1 if xb.len == 0 else me_copy_all_finite(<const float *>xb.buf, <float *>ob.buf,
                                                              xb.len // sizeof(float))
        finally:
            PyBuffer_Release(&ob)
    finally:
        PyBuffer_Release(&xb)
    return ok != 0


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


def copy_rows_finite(x, rows, start):
    """Copy x (n, d) into rows ``start`` to ``start + n`` of ``rows`` (m, d), checking in the same
    read that no value of x is NaN or +-Inf: returns 1 when none is, 0 when one is (the rows are
    written either way), and -1, writing nothing, when x is not a C-contiguous, aligned,
    native-byte-order float32 numpy array of shape (n, d) or its n rows do not fit from
    ``start``. ``rows``: such an array of 2 dimensions, writeable (else TypeError), whose rows
    ``start`` to ``start + n`` do not overlap x (else ValueError); ``start``: an int (else
    TypeError), 0 <= start <= m (else ValueError). The copy runs with the GIL released; calls
    on disjoint rows may run from several threads. Makes no Python object (numpy's C API), so a
    loop of small appends costs little more than its copies."""
    cdef cnp.ndarray xa
    cdef cnp.ndarray ra
    cdef Py_ssize_t n, d, m, s0
    cdef const float *src
    cdef float *dst
    cdef int ok
    if not (cnp.PyArray_Check(rows) and cnp.PyArray_TYPE(<cnp.ndarray>rows) == cnp.NPY_FLOAT32
            and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>rows) and cnp.PyArray_NDIM(<cnp.ndarray>rows) == 2
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>rows) and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>rows)
            and cnp.PyArray_ISALIGNED(<cnp.ndarray>rows)):
        raise TypeError("rows must be a C-contiguous, aligned, writeable float32 numpy.ndarray of 2 dimensions")
    ra = <cnp.ndarray>rows
    m, d = cnp.PyArray_DIM(ra, 0), cnp.PyArray_DIM(ra, 1)
    if type(start) is not int:
        start = check_int(start, "start")
    if not 0 <= start <= m:
        raise ValueError(f"start must be in [0, {m}], got {start}")
    s0 = start
    if not cnp.PyArray_Check(x):
        return -1
    xa = <cnp.ndarray>x
    # NPY_FLOAT32 is the type of either byte order: a swapped '>f4' is another layout (declined),
    # as is an unaligned one (a float read from an odd address)
    if not (cnp.PyArray_TYPE(xa) == cnp.NPY_FLOAT32 and cnp.PyArray_ISNOTSWAPPED(xa) and cnp.PyArray_NDIM(xa) == 2
            and cnp.PyArray_IS_C_CONTIGUOUS(xa) and cnp.PyArray_ISALIGNED(xa) and cnp.PyArray_DIM(xa, 1) == d):
        return -1
    n = cnp.PyArray_DIM(xa, 0)
    if n > m - s0:
        return -1
    src = <const float *>cnp.PyArray_DATA(xa)
    dst = <float *>cnp.PyArray_DATA(ra) + s0 * d
    if n * d == 0:
        return 1
    if <const char *>src < <const char *>(dst + n * d) and <const char *>dst < <const char *>(src + n * d):
        raise ValueError("rows must not share memory with x")
    with nogil:
        ok = me_copy_all_finite(src, dst, n * d)
    return 1 if ok else 0
