"""The shared scatter-add (``np.add.at`` of rows by index) and its gather backward
(``src/engine_c/scatter.c``)."""
from libc.stdint cimport int64_t

from mantissa_embed._engine._cengine cimport me_scatter_add_backward, me_scatter_add_forward
from mantissa_embed._engine._pointers cimport _fptr, _wptr
from mantissa_embed._checks.scatter import check_gather, check_scatter


__all__ = ['scatter_add_forward', 'scatter_add_backward']


def scatter_add_forward(src, index, out):
    """``np.add.at(out, index, src)`` in C, in place: out (N,) or (N, D) float32 += src (K,) or
    (K, D) float32 at rows index (K,) int64 in [0, N), each entry's additions in k order (bitwise
    reproducible for any thread count). Returns ``out``. See
    ``mantissa_embed._reference.scatter_add_forward``."""
    src, index, out, K, D, N = check_scatter(src, index, out, "out")
    cdef const float *sp = _fptr(src)
    cdef float *op = _wptr(out)
    cdef int64_t k = K, d = D, n = N
    cdef const int64_t[::1] iv
    if k > 0 and d > 0:
        iv = index
        with nogil:
            me_scatter_add_forward(sp, &iv[0], op, k, d, n)
    return out


def scatter_add_backward(dout, index, dsrc=None):
    """The gather ``dsrc = dout[index]``: dout (N,) or (N, D) float32, index (K,) int64 in [0, N)
    -> dsrc (K,) or (K, D) float32 (overwritten). See
    ``mantissa_embed._reference.scatter_add_backward``."""
    dout, index, dsrc, K, D, N = check_gather(dout, index, dsrc)
    cdef const float *gp = _fptr(dout)
    cdef float *sp = _wptr(dsrc)
    cdef int64_t k = K, d = D, n = N
    cdef const int64_t[::1] iv
    if k > 0 and d > 0:
        iv = index
        with nogil:
            me_scatter_add_backward(gp, &iv[0], sp, k, d, n)
    return dsrc
