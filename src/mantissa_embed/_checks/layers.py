"""Argument checks and geometry of the layer kernels: conv, pool, dense, optimizer steps."""
from __future__ import annotations

import numpy as np

from .arrays import (F32_MAX, MAX_FLOATS, check_bool, check_f32, check_inplace, check_int,
                     check_kernel_input, check_kernel_output, check_outs)

_MAX_PLANE = 2**31 - 1


def _int(v, name, minimum):
    """check_int with a fast path for plain Python ints (called on every kernel call)."""
    if type(v) is int:
        if v < minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {v}")
        return v
    return check_int(v, name, minimum=minimum)


def check_shape(shape, name, ndim):
    if isinstance(shape, (str, bytes)):
        raise TypeError(f"{name} must be a tuple of {ndim} ints, got {type(shape).__name__}")
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"{name} must be a tuple of {ndim} ints, got {type(shape).__name__}") from None
    if len(shape) != ndim:
        raise ValueError(f"{name} must have {ndim} entries, got {shape}")
    if all(type(s) is int and s >= 0 for s in shape):
        return shape
    return tuple(check_int(s, f"{name}[{i}]", minimum=0) for i, s in enumerate(shape))


def conv_geometry(x_shape, w_shape, stride, pad, suffix: str = ""):
    """(N, C, H, W, F, KH, KW, HO, WO) of a convolution, validated; ``suffix`` is appended to the
    names of w, stride and pad in the errors (the stages of a chain: "1", "2")."""
    N, C, H, W = check_shape(x_shape, "x.shape", 4)
    F, Cw, KH, KW = check_shape(w_shape, f"w{suffix}.shape", 4)
    stride = _int(stride, f"stride{suffix}", 1)
    pad = _int(pad, f"pad{suffix}", 0)
    if Cw != C:
        raise ValueError(f"w{suffix} has {Cw} input channels but x has {C} (w{suffix}: {tuple(w_shape)}, "
                         f"x: {tuple(x_shape)})")
    if KH < 1 or KW < 1:
        raise ValueError(f"kernel size must be >= 1, got w.shape {tuple(w_shape)}")
    if H + 2 * pad < KH or W + 2 * pad < KW:
        raise ValueError(
            f"kernel {KH}x{KW} is larger than the padded input {H + 2 * pad}x{W + 2 * pad} "
            f"(x.shape {tuple(x_shape)}, pad {pad})")
    if stride > MAX_FLOATS:
        raise ValueError(f"stride must be <= 2**56, got {stride}")
    HO = (H + 2 * pad - KH) // stride + 1
    WO = (W + 2 * pad - KW) // stride + 1
    Hp, Wp = H + 2 * pad, W + 2 * pad
    if max(C * Hp * Wp, N * F * HO * WO, C * KH * KW * HO * Wp, F * HO * Wp) > MAX_FLOATS:
        raise ValueError(f"the convolution is too large (x.shape {tuple(x_shape)}, w.shape {tuple(w_shape)}, "
                         f"stride {stride}, pad {pad}): its buffers would exceed 2**56 floats")
    return N, C, H, W, F, KH, KW, HO, WO


def check_workspace(workspace, need, size_fn: str = "conv2d_workspace_size"):
    if workspace is None:
        return np.empty(need, dtype=np.float32)
    if not isinstance(workspace, np.ndarray):
        raise TypeError(f"workspace must be a numpy.ndarray, got {type(workspace).__name__}")
    if workspace.dtype != np.float32:
        raise TypeError(f"workspace must have dtype float32, got {workspace.dtype}")
    if workspace.ndim != 1 or not workspace.flags.c_contiguous or not workspace.flags.writeable:
        raise ValueError("workspace must be a writeable C-contiguous 1-D array")
    if workspace.shape[0] < need:
        raise ValueError(f"workspace must hold at least {need} floats ({size_fn}), "
                         f"got {workspace.shape[0]}")
    return workspace


def check_bias(b, n, name: str = "b"):
    if b is None:
        return None
    b = check_kernel_input(b, name, 1)
    if b.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},), got {b.shape}")
    return b


def grad_buf(a, name, shape, accumulate):
    """A gradient output: the caller's buffer, or a new one (zeros when accumulating into it)."""
    if a is None:
        return np.zeros(shape, dtype=np.float32) if accumulate else np.empty(shape, dtype=np.float32)
    return check_kernel_output(a, name, shape)


def store_grad(buf, value, accumulate) -> None:
    """Write a gradient into its buffer, or add it when accumulating."""
    if accumulate:
        buf += value
    else:
        buf[...] = value


def check_conv_args(x, w, b, stride, pad, wname: str = "w", bname: str = "b"):
    x = check_kernel_input(x, "x", 4)
    w = check_kernel_input(w, wname, 4)
    geo = conv_geometry(x.shape, w.shape, stride, pad)
    b = check_bias(b, geo[4], bname)
    return x, w, b, geo


def pool_geometry(x_shape, size, stride, pad=0):
    """``(N, C, H, W, HO, WO, size, stride)`` of a pooling; ``pad`` (max pooling only) pads every
    side implicitly, as torch: ``HO = (H + 2*pad - size)//stride + 1``, ``2*pad <= size``."""
    N, C, H, W = check_shape(x_shape, "x.shape", 4)
    size = _int(size, "size", 1)
    stride = _int(stride, "stride", 1)
    pad = check_pool_pad(pad, size)
    if H + 2 * pad < size or W + 2 * pad < size:
        padded = f" (padded by {pad})" if pad else ""
        raise ValueError(f"pooling window {size}x{size} is larger than the input {H}x{W}{padded}")
    if stride > MAX_FLOATS:
        raise ValueError(f"stride must be <= 2**56, got {stride}")
    if (H + 2 * pad) * (W + 2 * pad) > _MAX_PLANE:
        raise ValueError(f"x.shape {(N, C, H, W)}: an H*W plane must hold at most 2**31 - 1 values "
                         f"(the argmax is int32)")
    return N, C, H, W, (H + 2 * pad - size) // stride + 1, (W + 2 * pad - size) // stride + 1, size, stride


def check_pool_pad(pad, size):
    """A max pooling's implicit padding: an int >= 0 with ``2*pad <= size`` (torch's rule: every
    window then holds at least one input value). Raises TypeError/ValueError."""
    if type(pad) is int and pad == 0:
        return 0
    pad = _int(pad, "pad", 0)
    if 2 * pad > size:
        raise ValueError(f"pad must be at most half the window size ({size}//2 = {size // 2}), got {pad}")
    return pad


def check_dense_args(x, w, b):
    x = check_kernel_input(x, "x", 2)
    w = check_kernel_input(w, "w", 2)
    if w.shape[1] != x.shape[1]:
        raise ValueError(f"w must have shape (out_features, {x.shape[1]}) to match x {x.shape}, got {w.shape}")
    b = check_bias(b, w.shape[0])
    return x, w, b



#: the activation codes of the conv / dense kernels (engine.h's ME_ACT_*)
ACT_CODES = {"identity": 0, "relu": 1, "leaky_relu": 2}


def act_flag(act, name: str = "act"):
    """None/"identity" -> 0, "relu" -> 1, "leaky_relu" -> 2 (engine.h's ME_ACT_*); anything
    else raises (naming ``name``)."""
    if act is None:
        return 0
    if isinstance(act, str) and act in ACT_CODES:
        return ACT_CODES[act]
    if not isinstance(act, str):
        raise TypeError(f"{name} must be None, 'identity', 'relu' or 'leaky_relu', got {type(act).__name__}")
    raise ValueError(f"{name} must be None, 'identity', 'relu' or 'leaky_relu', got {act!r}")


def check_negative_slope(v, name: str = "negative_slope"):
    """The leaky ReLU's slope for x < 0: a finite float >= 0 (the backward reads the sign of the
    output, which is the sign of the input only for a slope >= 0). Raises TypeError/ValueError."""
    if type(v) is float and 0.0 <= v <= F32_MAX:
        return v
    return check_f32(v, name, minimum=0.0)


def check_chain_args(x, w1, b1, stride1, pad1, w2, b2, stride2, pad2):
    """Validated arguments of a two-stage conv + pool chain and both stages' geometries."""
    x = check_kernel_input(x, "x", 4)
    w1 = check_kernel_input(w1, "w1", 4)
    w2 = check_kernel_input(w2, "w2", 4)
    g1, g2 = chain_geometries(x.shape, w1.shape, stride1, pad1, w2.shape, stride2, pad2)
    b1 = check_bias(b1, g1[4], "b1")
    b2 = check_bias(b2, g2[4], "b2")
    return x, w1, b1, w2, b2, g1, g2


def chain_geometries(x_shape, w1_shape, stride1, pad1, w2_shape, stride2, pad2):
    g1 = conv_geometry(x_shape, w1_shape, stride1, pad1, "1")
    if g1[7] < 2 or g1[8] < 2:
        raise ValueError(f"the first stage needs a convolution output of at least 2x2, got {g1[7]}x{g1[8]}")
    w2_shape = check_shape(w2_shape, "w2.shape", 4)
    if w2_shape[1] != g1[4]:
        raise ValueError(f"w2 must have {g1[4]} input channels (the filters of w1), got shape {w2_shape}")
    try:
        g2 = conv_geometry((g1[0], g1[4], g1[7] // 2, g1[8] // 2), w2_shape, stride2, pad2, "2")
    except ValueError as e:  # "x" there is the first stage's pooled output
        raise ValueError(f"the second stage (on the first stage's pooled output): {e}") from None
    if g2[7] < 2 or g2[8] < 2:
        raise ValueError(f"the second stage needs a convolution output of at least 2x2, got {g2[7]}x{g2[8]}")
    return g1, g2


def check_pool_backward(dy, argmax, x_shape):
    dy = check_kernel_input(dy, "dy", 4)
    N, C, H, W = check_shape(x_shape, "x_shape", 4)
    if H * W > _MAX_PLANE:
        raise ValueError(f"x_shape {(N, C, H, W)}: an H*W plane must hold at most 2**31 - 1 values "
                         f"(the argmax is int32)")
    if dy.shape[:2] != (N, C):
        raise ValueError(f"dy must have shape ({N}, {C}, HO, WO) to match x_shape {(N, C, H, W)}, got {dy.shape}")
    if not isinstance(argmax, np.ndarray) or argmax.dtype != np.int32:
        got = argmax.dtype if isinstance(argmax, np.ndarray) else type(argmax).__name__
        raise TypeError(f"argmax must be an int32 numpy.ndarray, got {got}")
    if argmax.shape != dy.shape:
        raise ValueError(f"argmax must have the shape of dy {dy.shape}, got {argmax.shape}")
    argmax = np.ascontiguousarray(argmax)
    return dy, argmax, (N, C, H, W)


def bad_argmax(H, W):
    return ValueError(f"argmax entries must lie in [0, {H * W}) (offsets into an {H}x{W} plane)")


def check_pool_relu_backward(dy, argmax, y, x_shape):
    dy, argmax, x_shape = check_pool_backward(dy, argmax, x_shape)
    y = check_kernel_input(y, "y", 4)
    if y.shape != dy.shape:
        raise ValueError(f"y must have the shape of dy {dy.shape} (the pooling's output), got {y.shape}")
    return dy, argmax, y, x_shape


def check_sgd_args(p, g, v, lr, momentum, dampening, weight_decay, nesterov, first):
    p = check_inplace(p, "p")
    g = check_kernel_input(g, "g")
    if g.shape != p.shape:
        raise ValueError(f"g must have the shape of p {p.shape}, got {g.shape}")
    lr = check_f32(lr, "lr")
    momentum = check_f32(momentum, "momentum")
    dampening = check_f32(dampening, "dampening")
    weight_decay = check_f32(weight_decay, "weight_decay")
    nesterov = check_bool(nesterov, "nesterov")
    first = check_bool(first, "first")
    if momentum != 0.0:
        if v is None:
            raise ValueError("v (the momentum buffer) is required when momentum != 0")
        v = check_inplace(v, "v", p.shape)
        check_outs([(v, "v")], [(p, "p"), (g, "g")])
    check_outs([(p, "p")], [(g, "g")], inplace_ok=("g",))
    return p, g, v, lr, momentum, dampening, weight_decay, nesterov, first


def check_adam_args(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decoupled: bool = False):
    p = check_inplace(p, "p")
    g = check_kernel_input(g, "g")
    if g.shape != p.shape:
        raise ValueError(f"g must have the shape of p {p.shape}, got {g.shape}")
    m = check_inplace(m, "m", p.shape)
    v = check_inplace(v, "v", p.shape)
    check_outs([(m, "m"), (v, "v")], [(p, "p"), (g, "g")])
    check_outs([(p, "p")], [(g, "g")], inplace_ok=("g",))
    t = check_int(t, "t", minimum=1)
    if t > 2**62:
        raise ValueError(f"t must be <= 2**62, got {t}")
    lr = check_f32(lr, "lr")
    beta1 = check_f32(beta1, "beta1")
    beta2 = check_f32(beta2, "beta2")
    eps = check_f32(eps, "eps", minimum=0.0)
    for name, b in (("beta1", beta1), ("beta2", beta2)):  # 1 - beta**t is a divisor
        if not 0.0 <= float(np.float32(b)) < 1.0:
            raise ValueError(f"{name} must be in [0, 1) (as a float32), got {b}")
    weight_decay = check_f32(weight_decay, "weight_decay")
    decoupled = check_bool(decoupled, "decoupled")
    return p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decoupled


def check_pool2_output(HO, WO):
    """The fused 2x2 pooling needs a convolution output of at least 2x2 (``ValueError``)."""
    if HO < 2 or WO < 2:
        raise ValueError(f"conv2d_pool2_forward needs a convolution output of at least 2x2, got {HO}x{WO}")


def check_argmax_range(argmax, H, W):
    """Every pooling argmax entry must be an offset in an H x W plane (``ValueError``)."""
    if argmax.size and (int(argmax.min()) < 0 or int(argmax.max()) >= H * W):
        raise bad_argmax(H, W)


def check_dense_backward_args(x, w, dy, dx, dw, db, need_dx, accumulate):
    """Validated (x, w, dy, dx, dw, db, need_dx, accumulate) of ``dense_backward``; dw and db new
    (zeros when accumulating) when None."""
    x, w, _ = check_dense_args(x, w, None)
    dy = check_kernel_input(dy, "dy", 2)
    N, O = x.shape[0], w.shape[0]
    if dy.shape != (N, O):
        raise ValueError(f"dy must have shape {(N, O)}, got {dy.shape}")
    need_dx = check_bool(need_dx, "need_dx")
    accumulate = check_bool(accumulate, "accumulate")
    dx = check_kernel_output(dx, "dx", x.shape) if need_dx else None
    dw = grad_buf(dw, "dw", w.shape, accumulate)
    db = grad_buf(db, "db", (O,), accumulate)
    check_outs([(dx, "dx"), (dw, "dw"), (db, "db")], [(x, "x"), (w, "w"), (dy, "dy")])
    return x, w, dy, dx, dw, db, need_dx, accumulate


def check_conv_backward_args(x, w, dy, stride, pad, dx, dw, db, need_dx, accumulate, need_db: bool = True):
    """Validated (x, w, dy, geometry, dx, dw, db, need_dx, accumulate) of ``conv2d_backward``
    (the workspace is checked by the caller); db is None when ``need_db`` is False."""
    x, w, _, geo = check_conv_args(x, w, None, stride, pad)
    N, C, H, W, F, KH, KW, HO, WO = geo
    dy = check_kernel_input(dy, "dy", 4)
    if dy.shape != (N, F, HO, WO):
        raise ValueError(f"dy must have shape {(N, F, HO, WO)}, got {dy.shape}")
    need_dx = check_bool(need_dx, "need_dx")
    accumulate = check_bool(accumulate, "accumulate")
    dx = check_kernel_output(dx, "dx", x.shape) if need_dx else None
    dw = grad_buf(dw, "dw", w.shape, accumulate)
    db = grad_buf(db, "db", (F,), accumulate) if check_bool(need_db, "need_db") else None
    return x, w, dy, geo, dx, dw, db, need_dx, accumulate


def check_avgpool_backward(dy, x_shape, size, stride):
    """Validated (dy, geometry) of ``avgpool2d_backward``: dy must be (N, C, HO, WO) of the
    pooling of ``x_shape`` by ``size`` / ``stride``."""
    dy = check_kernel_input(dy, "dy", 4)
    geo = pool_geometry(x_shape, size, stride)
    want = geo[:2] + geo[4:6]
    if dy.shape != want:
        raise ValueError(f"dy must have shape {want} (the pooling of x_shape {geo[:4]}), got {dy.shape}")
    return dy, geo


def check_global_pool_backward(dy, x_shape):
    """Validated (dy, x_shape) of ``global_avgpool2d_backward``: dy (N, C), x_shape (N, C, H, W)."""
    dy = check_kernel_input(dy, "dy", 2)
    x_shape = check_shape(x_shape, "x_shape", 4)
    if dy.shape != x_shape[:2]:
        raise ValueError(f"dy must have shape {x_shape[:2]} to match x_shape {x_shape}, got {dy.shape}")
    if x_shape[2] * x_shape[3] == 0:
        raise ValueError(f"x_shape must have H, W >= 1, got {x_shape}")
    return dy, x_shape


def check_act_args(x, out):
    """Validated (x, out) of an element-wise activation forward (``out`` may be ``x``)."""
    x = check_kernel_input(x, "x")
    out = check_kernel_output(out, "out", x.shape)
    check_outs([(out, "out")], [(x, "x")], inplace_ok=("x",))
    return x, out


def check_act_backward_args(dy, y, dx):
    """Validated (dy, y, dx) of an activation backward from its output y (``dx`` may be ``dy``)."""
    dy = check_kernel_input(dy, "dy")
    y = check_kernel_input(y, "y")
    if y.shape != dy.shape:
        raise ValueError(f"y must have the shape of dy {dy.shape}, got {y.shape}")
    dx = check_kernel_output(dx, "dx", dy.shape)
    check_outs([(dx, "dx")], [(dy, "dy"), (y, "y")], inplace_ok=("dy", "y"))
    return dy, y, dx


def check_dropout_args(x, mask, out, xname: str = "x", outname: str = "out"):
    """Validated (x, mask, out) of a dropout pass: mask float32 of x's shape; ``out`` may be ``x``."""
    x = check_kernel_input(x, xname)
    mask = check_kernel_input(mask, "mask")
    if mask.shape != x.shape:
        raise ValueError(f"mask must have the shape of {xname} {x.shape}, got {mask.shape}")
    out = check_kernel_output(out, outname, x.shape)
    check_outs([(out, outname)], [(x, xname), (mask, "mask")], inplace_ok=(xname,))
    return x, mask, out
