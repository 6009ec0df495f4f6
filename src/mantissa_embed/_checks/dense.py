"""Argument checks of the fully connected layer's kernels (``src/engine_c/dense.c``)."""

from __future__ import annotations

from .arrays import check_bias, check_bool, check_kernel_input, check_kernel_output, check_outs, grad_buf


def check_dense_args(x, w, b):
    x = check_kernel_input(x, "x", 2)
    w = check_kernel_input(w, "w", 2)
    if w.shape[1] != x.shape[1]:
        raise ValueError(
            f"w must have shape (out_features, {x.shape[1]}) to match x {x.shape}, got {w.shape}"
        )
    b = check_bias(b, w.shape[0])
    return x, w, b


def check_dense_backward_args(x, w, dy, dx, dw, db, need_dx, accumulate):
    """Validated (x, w, dy, dx, dw, db, need_dx, accumulate) of ``dense_backward``; dw and db new
    (zeros when accumulating) when None."""
    x, w, _ = check_dense_args(x, w, None)
    dy = check_kernel_input(dy, "dy", 2)
    N, n_out = x.shape[0], w.shape[0]
    if dy.shape != (N, n_out):
        raise ValueError(f"dy must have shape {(N, n_out)}, got {dy.shape}")
    need_dx = check_bool(need_dx, "need_dx")
    accumulate = check_bool(accumulate, "accumulate")
    dx = check_kernel_output(dx, "dx", x.shape) if need_dx else None
    dw = grad_buf(dw, "dw", w.shape, accumulate)
    db = grad_buf(db, "db", (n_out,), accumulate)
    check_outs([(dx, "dx"), (dw, "dw"), (db, "db")], [(x, "x"), (w, "w"), (dy, "dy")])
    return x, w, dy, dx, dw, db, need_dx, accumulate
