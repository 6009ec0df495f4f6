"""Distance and similarity matrices, row L2 normalization and the symmetric helpers
(``src/engine_c/distance.c``)."""
import numpy as np

from libc.stdint cimport int64_t

from mantissa_embed._checks.arrays import (check_flag, check_kernel_input,
                                           check_kernel_output, check_outs)
from mantissa_embed._checks.distance import (NORMALIZE_EPS, check_add_transpose, check_eps,
                                             check_dot_similarity_backward, check_dot_similarity_forward,
                                             check_euclidean_workspace, check_gram, check_workspace_dims,
                                             check_l2_normalize_backward_args, check_matrix,
                                             check_pair_inputs)
from mantissa_embed._engine._cengine cimport (me_add_transpose_forward, me_euclidean_backward,
                                             me_euclidean_backward_workspace_size, me_euclidean_forward,
                                             me_euclidean_forward_workspace_size, me_gram_forward,
                                             me_l2_normalize_backward, me_l2_normalize_forward,
                                             me_sgemm)


__all__ = ['l2_normalize_forward', 'l2_normalize_backward', 'euclidean_workspace_size',
           'euclidean_forward', 'euclidean_backward', 'dot_similarity_forward',
           'dot_similarity_backward', 'add_transpose_forward', 'gram_forward']


def l2_normalize_forward(x, eps=NORMALIZE_EPS, y=None, norms=None):
    """Row-wise L2 normalization, as ``torch.nn.functional.normalize(x, p=2, dim=1, eps=eps)``.

    x (N, D) float32 -> (y (N, D) = x / max(||x||, eps), norms (N,) = ||x||). ``y`` may be ``x``.
    See ``mantissa_embed._reference.l2_normalize_forward``.
    """
    x = check_kernel_input(x, "x", 2)
    cdef float feps = check_eps(eps)
    N, D = x.shape
    y = check_kernel_output(y, "y", (N, D))
    norms = check_kernel_output(norms, "norms", (N,))
    check_outs([(y, "y")], [(x, "x")], inplace_ok=("x",))
    check_outs([(norms, "norms")], [(x, "x"), (y, "y")])
    if N == 0:
        return y, norms
    if D == 0:
        norms[...] = 0
        return y, norms
    cdef const float[:, ::1] xv = x
    cdef float[:, ::1] yv = y
    cdef float[::1] nv = norms
    cdef int64_t n = N, d = D
    with nogil:
        me_l2_normalize_forward(&xv[0, 0], &yv[0, 0], &nv[0], n, d, feps)
    return y, norms


def l2_normalize_backward(dy, y, norms, eps=NORMALIZE_EPS, dx=None):
    """Gradient of ``l2_normalize_forward``: dx = (dy - y <y, dy>) / ||x|| (dy / eps when the
    norm is below eps). dy, y (N, D), norms (N,) float32 -> dx (N, D) float32 (may be ``dy``)."""
    dy, y, norms, eps = check_l2_normalize_backward_args(dy, y, norms, eps)
    cdef float feps = eps
    dx = check_kernel_output(dx, "dx", y.shape)
    check_outs([(dx, "dx")], [(dy, "dy"), (y, "y"), (norms, "norms")], inplace_ok=("dy",))
    if y.shape[0] == 0 or y.shape[1] == 0:
        return dx
    cdef const float[:, ::1] dyv = dy
    cdef const float[:, ::1] yv = y
    cdef const float[::1] nv = norms
    cdef float[:, ::1] dxv = dx
    cdef int64_t n = y.shape[0], d = y.shape[1]
    with nogil:
        me_l2_normalize_backward(&dyv[0, 0], &yv[0, 0], &nv[0], &dxv[0, 0], n, d, feps)
    return dx


def euclidean_workspace_size(N, M, backward=False):
    """Float32 scratch values ``euclidean_forward`` (``backward=False``) or ``euclidean_backward``
    needs for N x M distances (``me_euclidean_*_workspace_size``). Raises TypeError / ValueError
    for a non-int or negative N, M, ValueError when the scratch would exceed 2**56 floats."""
    cdef int64_t n, m
    n, m = check_workspace_dims(N, M)
    if check_flag(backward, "backward"):
        return int(me_euclidean_backward_workspace_size(n, m))
    return int(me_euclidean_forward_workspace_size(n, m))


def euclidean_forward(x, r, squared=False, out=None, workspace=None):
    """Euclidean distance matrix dist[i, j] = ||x_i - r_j|| (or squared), via one SGEMM.

    x (N, D), r (M, D) float32 (``r`` may be ``x``) -> dist (N, M) float32, clamped at 0.
    See ``mantissa_embed._reference.euclidean_forward``.
    """
    x, r = check_pair_inputs(x, r)
    cdef int sq = check_flag(squared, "squared")
    N, M, D = x.shape[0], r.shape[0], x.shape[1]
    out = check_kernel_output(out, "out", (N, M))
    ws = check_euclidean_workspace(workspace, me_euclidean_forward_workspace_size(N, M))
    check_outs([(out, "out"), (ws, "workspace")], [(x, "x"), (r, "r")])
    if N == 0 or M == 0:
        return out
    if D == 0:
        out[...] = 0
        return out
    cdef const float[:, ::1] xv = x
    cdef const float[:, ::1] rv = r
    cdef float[:, ::1] ov = out
    cdef float[::1] wv = ws
    cdef int64_t n = N, m = M, d = D
    with nogil:
        me_euclidean_forward(&xv[0, 0], &rv[0, 0], &ov[0, 0], n, m, d, sq, &wv[0])
    return out


def euclidean_backward(x, r, dist, ddist, squared=False, dx=None, dr=None, workspace=None):
    """Gradient of ``euclidean_forward`` w.r.t. ``x`` and ``r`` (two SGEMM, 0 where dist == 0).

    x (N, D), r (M, D), dist, ddist (N, M) float32 -> (dx (N, D), dr (M, D)) float32.
    When ``r`` is ``x`` the total gradient is ``dx + dr``.
    See ``mantissa_embed._reference.euclidean_backward``.
    """
    x, r = check_pair_inputs(x, r)
    N, M, D = x.shape[0], r.shape[0], x.shape[1]
    dist = check_matrix(dist, "dist", N, M)
    ddist = check_matrix(ddist, "ddist", N, M)
    cdef int sq = check_flag(squared, "squared")
    dx = check_kernel_output(dx, "dx", (N, D))
    dr = check_kernel_output(dr, "dr", (M, D))
    ws = check_euclidean_workspace(workspace, me_euclidean_backward_workspace_size(N, M))
    check_outs([(dx, "dx"), (dr, "dr"), (ws, "workspace")],
             [(x, "x"), (r, "r"), (dist, "dist"), (ddist, "ddist")])
    if N == 0 or M == 0 or D == 0:
        dx[...] = 0
        dr[...] = 0
        return dx, dr
    cdef const float[:, ::1] xv = x
    cdef const float[:, ::1] rv = r
    cdef const float[:, ::1] dv = dist
    cdef const float[:, ::1] gv = ddist
    cdef float[:, ::1] dxv = dx
    cdef float[:, ::1] drv = dr
    cdef float[::1] wv = ws
    cdef int64_t n = N, m = M, d = D
    with nogil:
        me_euclidean_backward(&xv[0, 0], &rv[0, 0], &dv[0, 0], &gv[0, 0], &dxv[0, 0], &drv[0, 0],
                              n, m, d, sq, &wv[0])
    return dx, dr


def dot_similarity_forward(x, r, out=None):
    """Dot-product similarity matrix sim = x @ r.T (one SGEMM).

    x (N, D), r (M, D) float32 -> sim (N, M) float32.
    """
    x, r, out = check_dot_similarity_forward(x, r, out)
    N, M, D = x.shape[0], r.shape[0], x.shape[1]
    if N == 0 or M == 0:
        return out
    if D == 0:
        out[...] = 0
        return out
    cdef const float[:, ::1] xv = x
    cdef const float[:, ::1] rv = r
    cdef float[:, ::1] ov = out
    cdef int64_t n = N, m = M, d = D
    with nogil:
        me_sgemm(0, 1, n, m, d, 1.0, &xv[0, 0], d, &rv[0, 0], d, 0.0, &ov[0, 0], m)
    return out


def dot_similarity_backward(x, r, dsim, dx=None, dr=None):
    """Gradient of ``dot_similarity_forward``: dx = dsim @ r, dr = dsim.T @ x.

    x (N, D), r (M, D), dsim (N, M) float32 -> (dx (N, D), dr (M, D)) float32.
    """
    x, r, dsim, dx, dr = check_dot_similarity_backward(x, r, dsim, dx, dr)
    N, M, D = x.shape[0], r.shape[0], x.shape[1]
    if N == 0 or M == 0 or D == 0:
        dx[...] = 0
        dr[...] = 0
        return dx, dr
    cdef const float[:, ::1] xv = x
    cdef const float[:, ::1] rv = r
    cdef const float[:, ::1] gv = dsim
    cdef float[:, ::1] dxv = dx
    cdef float[:, ::1] drv = dr
    cdef int64_t n = N, m = M, d = D
    with nogil:
        me_sgemm(0, 0, n, d, m, 1.0, &gv[0, 0], m, &rv[0, 0], d, 0.0, &dxv[0, 0], d)
        me_sgemm(1, 0, m, d, n, 1.0, &gv[0, 0], m, &xv[0, 0], d, 0.0, &drv[0, 0], d)
    return dx, dr


def add_transpose_forward(a, out=None):
    """``out = a + a.T`` for a square float32 ``a`` (N, N) -> out (N, N), exactly symmetric
    (cache-blocked C kernel). See ``mantissa_embed._reference.add_transpose_forward``."""
    a, out = check_add_transpose(a, out)
    if a.shape[0] == 0:
        return out
    cdef const float[:, ::1] av = a
    cdef float[:, ::1] ov = out
    cdef int64_t n = a.shape[0]
    with nogil:
        me_add_transpose_forward(&av[0, 0], &ov[0, 0], n)
    return out


def gram_forward(x, out=None):
    """Gram matrix ``out = x @ x.T`` of x (N, D) float32 -> (N, N): the blocks on and above the
    diagonal by SGEMM, the rest mirrored (exactly symmetric). See
    ``mantissa_embed._reference.gram_forward``."""
    x, out = check_gram(x, out)
    if x.shape[0] == 0:
        return out
    if x.shape[1] == 0:
        out[...] = 0
        return out
    cdef const float[:, ::1] xv = x
    cdef float[:, ::1] ov = out
    cdef int64_t n = x.shape[0], d = x.shape[1]
    with nogil:
        me_gram_forward(&xv[0, 0], &ov[0, 0], n, d)
    return out
