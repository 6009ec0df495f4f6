"""Argument checks of the distance, normalization and symmetric-matrix kernels."""

from __future__ import annotations

import numpy as np

from .arrays import (
    MAX_FLOATS,
    check_float,
    check_int,
    check_kernel_input,
    check_kernel_output,
    check_no_overlap,
    check_outs,
)

NORMALIZE_EPS = 1e-12  # torch.nn.functional.normalize's default


_NORM_ROWS = 8192  # rows per float64 temporary of sq_norms64 (bounded scratch)


def sq_norms64(x: np.ndarray, name: str) -> np.ndarray:
    """Squared row norms of x (n, D) (float32 or any real dtype) in float64, by chunks of rows;
    ValueError naming ``name`` if x holds NaN or Inf (the norm of a finite float32 row cannot
    overflow float64). The callers' float32 overflow guards start from it."""
    out = np.empty(x.shape[0], dtype=np.float64)
    for s in range(0, x.shape[0], _NORM_ROWS):
        c = x[s : s + _NORM_ROWS].astype(np.float64)
        np.einsum("ij,ij->i", c, c, out=out[s : s + _NORM_ROWS])
    if not np.isfinite(out).all():
        raise ValueError(f"{name} contains NaN or Inf")
    return out


def l2_normalize_rows(x, eps: float = NORMALIZE_EPS, *, out=None, scratch=None, norms=None):
    """Rows of ``x`` divided by their L2 norm, with the backward of that map: the numpy L2
    normalization of the production code (losses, regularizers, inference, the index, k-NN). It
    sits in ``_checks`` with ``NORMALIZE_EPS`` so that ``proxy_losses.p2sgrad64``, which the numpy
    twin shares, can use it; the twin of ``distance.c``'s kernel keeps its own reference
    (``_reference._distance``).

    ``x``: (N, D) float32 or float64 ndarray, any strides. Returns ``(y, backward)``: ``y`` (N, D)
    in the dtype of ``x`` (written to ``out`` when given: an (N, D) array of that dtype, which may
    be ``x`` itself to normalize in place); ``backward(dy)`` takes dL/dy (N, D) and returns dL/dx
    (N, D), in the dtype numpy promotes ``dy`` and ``y`` to.

    The norms are summed in float64 (``np.einsum``), so a float32 row neither overflows nor rounds
    its squared norm; the divisor is then rounded to the dtype of ``x`` and the division runs in
    it, unless a norm exceeds that dtype's range (float32 rows of norm above 3.4e38): then the
    division runs in float64 and only the quotient is rounded.

    eps rule: ``eps > 0`` is ``torch.nn.functional.normalize``'s, ``y_i = x_i / max(||x_i||,
    eps)`` (a row shorter than eps is divided by eps; a zero row stays zero). ``eps == 0``
    divides every row of nonzero norm by its norm and leaves zero rows unchanged (zeros, no NaN).
    The backward is ``(dy_i - y_i <y_i, dy_i>) / den_i`` on rows with ``||x_i|| > eps`` and
    ``dy_i / den_i`` on the others (torch's: the clamped divisor is a constant there).

    ``norms``: None, or the rows' L2 norms (N,) float64 when the caller has them already (k-NN
    computes them for its overflow guard); None computes them.

    ``scratch``: None, or a callable ``name -> array or None`` giving (N, D) arrays of the dtype
    of ``x`` for the backward's temporaries ``"t"`` and ``"dx"`` (its result is then the ``"dx"``
    array); None from it allocates.

    Raises ``TypeError`` for an ``x`` that is not a float32 / float64 ndarray, ``ValueError`` for
    an ``x`` that is not 2-D or an ``eps`` that is negative or not finite.
    """
    if not isinstance(x, np.ndarray) or x.dtype not in (np.float32, np.float64):
        raise TypeError(
            f"x must be a float32 or float64 numpy array, got "
            f"{x.dtype if isinstance(x, np.ndarray) else type(x).__name__}"
        )
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D (N, D), got shape {x.shape}")
    eps = check_float(eps, "eps", minimum=0.0)
    nrm = np.sqrt(np.einsum("ij,ij->i", x, x, dtype=np.float64)) if norms is None else norms
    den = np.maximum(nrm, eps) if eps > 0 else np.where(nrm > 0, nrm, 1.0)
    den64 = den[:, None]
    # a norm beyond the dtype's range (float32 rows of norm above 3.4e38) would round to an inf
    # divisor: those rows are divided in float64 and only their quotients rounded (x[big] is a
    # copy, taken before an in-place division overwrites x)
    big = np.flatnonzero(den64[:, 0] > np.finfo(x.dtype).max)
    x_big = x[big]
    with np.errstate(over="ignore"):
        den = den64.astype(x.dtype, copy=False)
    y = np.divide(x, den, out=out)
    if big.size:
        y[big] = x_big / den64[big]

    def backward(dy):
        s = np.einsum("ij,ij->i", y, dy)
        s = np.where(nrm > eps, s, 0.0).astype(y.dtype, copy=False)
        buf = (lambda name: None) if scratch is None else scratch
        t = np.multiply(y, s[:, None], out=buf("t"))
        dx = np.subtract(dy, t, out=buf("dx"))
        dx /= den
        if big.size:
            dx[big] = (dy[big] - t[big]) / den64[big]
        return dx

    return y, backward


def check_same_cols(x, r, xname: str = "x", rname: str = "r"):
    if x.shape[1] != r.shape[1]:
        raise ValueError(
            f"{xname} and {rname} must have the same number of columns, got {x.shape} and {r.shape}"
        )


def check_eps(eps):
    eps = check_float(eps, "eps", minimum=0.0, strict=True)
    if not float(np.finfo(np.float32).tiny) <= eps <= float(np.finfo(np.float32).max):
        raise ValueError(f"eps must be a normal float32 (in [1.2e-38, 3.4e38]), got {eps}")
    return eps


def check_workspace_dims(N, M):
    """(N, M) of ``euclidean_workspace_size``: ints >= 0 whose scratch (at most N*M + N + M
    floats) stays within 2**56 floats (ValueError), so the int64 sizes cannot overflow."""
    N = check_int(N, "N", minimum=0)
    M = check_int(M, "M", minimum=0)
    if N * M + N + M > MAX_FLOATS:
        raise ValueError(f"N x M distances need more than 2**56 floats of scratch, got N={N}, M={M}")
    return N, M


def check_euclidean_workspace(ws, need):
    """The distance kernels' scratch: ``need`` floats (``euclidean_workspace_size``), new when None."""
    if ws is None:
        return np.empty(max(need, 1), dtype=np.float32)
    if not isinstance(ws, np.ndarray):
        raise TypeError(f"workspace must be a numpy.ndarray, got {type(ws).__name__}")
    if ws.dtype != np.float32 or ws.ndim != 1 or not ws.flags.c_contiguous or not ws.flags.writeable:
        raise ValueError("workspace must be a writeable C-contiguous 1-D float32 array")
    if ws.shape[0] < need:
        raise ValueError(f"workspace must hold at least {need} floats, got {ws.shape[0]}")
    return ws


def check_add_transpose(a, out):
    a = check_kernel_input(a, "a", ndim=2)
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"a must be square, got shape {a.shape}")
    out = check_kernel_output(out, "out", a.shape)
    check_no_overlap(out, "out", (a, "a"))
    return a, out


def check_gram(x, out):
    x = check_kernel_input(x, "x", ndim=2)
    out = check_kernel_output(out, "out", (x.shape[0], x.shape[0]))
    check_no_overlap(out, "out", (x, "x"))
    return x, out


def check_pair_inputs(x, r):
    """x (N, D) and r (M, D) float32 with the same number of columns; ``r`` may be ``x``."""
    x = check_kernel_input(x, "x", 2)
    r = x if r is x else check_kernel_input(r, "r", 2)
    check_same_cols(x, r)
    return x, r


def check_matrix(a, name, N, M):
    """An (N, M) float32 input (a distance matrix or its gradient)."""
    a = check_kernel_input(a, name, 2)
    if a.shape != (N, M):
        raise ValueError(f"{name} must have shape ({N}, {M}), got {a.shape}")
    return a


def check_dot_similarity_forward(x, r, out):
    """``(x, r, out)`` of ``dot_similarity_forward``, validated (out allocated when None)."""
    x, r = check_pair_inputs(x, r)
    out = check_kernel_output(out, "out", (x.shape[0], r.shape[0]))
    check_outs([(out, "out")], [(x, "x"), (r, "r")])
    return x, r, out


def check_dot_similarity_backward(x, r, dsim, dx, dr):
    """``(x, r, dsim, dx, dr)`` of ``dot_similarity_backward``, validated (outputs allocated)."""
    x, r = check_pair_inputs(x, r)
    N, M, D = x.shape[0], r.shape[0], x.shape[1]
    dsim = check_matrix(dsim, "dsim", N, M)
    dx = check_kernel_output(dx, "dx", (N, D))
    dr = check_kernel_output(dr, "dr", (M, D))
    check_outs([(dx, "dx"), (dr, "dr")], [(x, "x"), (r, "r"), (dsim, "dsim")])
    return x, r, dsim, dx, dr


def check_l2_normalize_backward_args(dy, y, norms, eps):
    """(dy, y (N, D), norms (N,), eps) of ``l2_normalize_backward``."""
    dy = check_kernel_input(dy, "dy", 2)
    y = check_kernel_input(y, "y", 2)
    norms = check_kernel_input(norms, "norms", ndim=1)
    eps = check_eps(eps)
    if dy.shape != y.shape:
        raise ValueError(f"dy and y must have the same shape, got {dy.shape} and {y.shape}")
    if norms.shape != (y.shape[0],):
        raise ValueError(f"norms must have shape ({y.shape[0]},), got {norms.shape}")
    return dy, y, norms, eps
