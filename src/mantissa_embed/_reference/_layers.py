"""Numpy twins of the layer kernels of :mod:`mantissa_embed.engine` (conv, pool, relu, dense, optim).

Every public function here has the same name, signature, validation and semantics as the
engine wrapper of the same name (``src/mantissa_embed/_engine_layers.pxi``); the engine
wrappers import the private ``_check_*`` helpers below so both backends raise the same
errors. The twins are written for clarity, not speed: the convolution is an explicit
im2col (a strided copy per kernel tap) followed by a matmul, exactly the algorithm of
``src/engine_c/conv.c``, so the two agree up to float32 rounding.

Conventions (``docs/architecture.md``): float32 C-contiguous buffers, NCHW images, the
pooling argmax is int32 (offset in one H*W plane). Inputs are converted to float32 when
needed (no copy when they already are); output buffers passed as ``out=``, ``dx=``, ...
must be float32 (argmax: int32), C-contiguous, writeable and of the exact shape, and are
written in place. Backward functions *overwrite* ``dx``; ``dw``/``db`` are overwritten,
or added to when ``accumulate=True``.

The private helpers ``_conv2d``, ``_conv2d_grads``, ``_maxpool2d``, ``_dense`` keep the dtype
of their inputs, so the tests can evaluate them in float64 for finite differences.
"""
from __future__ import annotations

import numbers

import numpy as np

from .._validation import (check_float, check_int, check_kernel_input,
                           check_kernel_output, check_no_overlap)

__all__ = [
    "conv2d_workspace_size",
    "conv2d_forward",
    "conv2d_backward",
    "conv2d_pool2_forward",
    "conv2d_pool2_chain_workspace_size",
    "conv2d_pool2_chain_forward",
    "maxpool2d_forward",
    "maxpool2d_backward",
    "maxpool2d_relu_backward",
    "relu_forward",
    "relu_backward",
    "all_finite",
    "dense_forward",
    "dense_backward",
    "sgd_step",
    "adam_step",
]

# must equal ME_CONV_GROUPS / ME_CONV_MIN_GROUPS / ME_CONV_BUDGET in src/engine_c/conv.c
_CONV_GROUPS = 16
_CONV_MIN_GROUPS = 4
_CONV_BUDGET = 8 * 1024 * 1024
# Bound on every size the engine computes in int64 (and numpy allocates): far beyond any memory,
# it turns absurd pad / stride / shapes into a ValueError instead of an int64 overflow or a
# petabyte allocation.
_MAX_FLOATS = 1 << 56
_MAX_PLANE = 2**31 - 1
_F32_MAX = float(np.finfo(np.float32).max)  # the pooling argmax is an int32 offset in one H*W plane


# --------------------------------------------------------------------------- validation
# Shared with the engine wrappers (they import these), so both backends raise the same errors.

def _check_in(x, name, ndim=None):
    """Input array as float32 C-contiguous (no copy if it already is)."""
    return check_kernel_input(x, name, ndim)


_check_out = check_kernel_output


def _check_inplace(a, name, shape=None):
    """An array updated in place (optimizer state): float32, C-contiguous, writeable."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(a).__name__}")
    return _check_out(a, name, a.shape if shape is None else shape)


def _int(v, name, minimum):
    """check_int with a fast path for plain Python ints (called on every kernel call)."""
    if type(v) is int:
        if v < minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {v}")
        return v
    return check_int(v, name, minimum=minimum)


def _check_shape(shape, name, ndim):
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


def _conv_geometry(x_shape, w_shape, stride, pad, suffix=""):
    """(N, C, H, W, F, KH, KW, HO, WO) of a convolution, validated; ``suffix`` is appended to the
    names of w, stride and pad in the errors (the stages of a chain: "1", "2")."""
    N, C, H, W = _check_shape(x_shape, "x.shape", 4)
    F, Cw, KH, KW = _check_shape(w_shape, f"w{suffix}.shape", 4)
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
    if stride > _MAX_FLOATS:
        raise ValueError(f"stride must be <= 2**56, got {stride}")
    HO = (H + 2 * pad - KH) // stride + 1
    WO = (W + 2 * pad - KW) // stride + 1
    Hp, Wp = H + 2 * pad, W + 2 * pad
    if max(C * Hp * Wp, N * F * HO * WO, C * KH * KW * HO * Wp, F * HO * Wp) > _MAX_FLOATS:
        raise ValueError(f"the convolution is too large (x.shape {tuple(x_shape)}, w.shape {tuple(w_shape)}, "
                         f"stride {stride}, pad {pad}): its buffers would exceed 2**56 floats")
    return N, C, H, W, F, KH, KW, HO, WO


_WINO_KB, _WINO_MIN_C = 16, 3  # conv.c ME_WINO_KB, ME_WINO_MIN_C


def _wino_applies(C, F, KH, KW, stride, Hp, Wp):
    """conv.c wino_applies: the shapes that take the Winograd inference (3x3, stride 1, padded
    plane >= 4x4, C == 1 or C >= 3 with F > 8)."""
    return (KH == 3 and KW == 3 and stride == 1 and Hp >= 4 and Wp >= 4
            and (C == 1 or (C >= _WINO_MIN_C and F > 8)))


def _conv_workspace_floats(N, C, F, KH, KW, HO, WO, H, W, stride, pad):
    """Scratch floats of src/engine_c/conv.c (me_conv2d_workspace_size): G groups of
    K*PW + F*PW + C*Hp*Wp + KW + F*K + F floats, PW = HO*Wp; for the shapes that take the
    Winograd inference (wino_applies: 3x3, stride 1, padded plane >= 4x4, C == 1 or C >= 3 with
    F > 8) at least G groups of the tiles layout's scratch (wino_scratch) and, for C > 1,
    min(N // 8, 16) slots for blocks of 8 images (wino8_slot)."""
    if min(N, C, F) <= 0:
        return 0
    Hp, Wp = H + 2 * pad, W + 2 * pad
    K, PW = C * KH * KW, HO * Wp
    per_group = K * PW + F * PW + C * Hp * Wp + KW + F * K + F
    G = min(max(_CONV_BUDGET // per_group, _CONV_MIN_GROUPS), _CONV_GROUPS, N)
    need = G * per_group
    if _wino_applies(C, F, KH, KW, stride, Hp, Wp):
        # tiles layout (wino_scratch per group, at least per_group apart)
        tiles = C * Hp * 2 * (WO // 2 + 1) + 16 + (0 if C == 1 else 16 * C * 8 + 16 * _WINO_KB * 8)
        need = max(need, G * max(per_group, tiles))
        if C > 1:  # images layout (wino8_slot per slot)
            slot = C * Hp * Wp * 8 + 16 * C * 8 + 16 * _WINO_KB * 8 + F * (HO // 2) * (WO // 2) * 8
            need = max(need, min(N // 8, _CONV_GROUPS) * slot)
    return need


def _check_workspace(workspace, need, size_fn="conv2d_workspace_size"):
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


def _check_bias(b, n, name="b"):
    if b is None:
        return None
    b = _check_in(b, name, 1)
    if b.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},), got {b.shape}")
    return b


def _grad_buf(a, name, shape, accumulate):
    """A gradient output: the caller's buffer, or a new one (zeros when accumulating into it)."""
    if a is None:
        return np.zeros(shape, dtype=np.float32) if accumulate else np.empty(shape, dtype=np.float32)
    return _check_out(a, name, shape)


def _store_grad(buf, value, accumulate):
    if accumulate:
        buf += value
    else:
        buf[...] = value


def _check_outs(outs, ins, inplace_ok=()):
    """Each output buffer ((array, name) pairs, None skipped) must not share memory with an
    input nor with another output (ValueError), except the exact in-place aliases of
    ``inplace_ok`` input names."""
    for i, (o, oname) in enumerate(outs):
        check_no_overlap(o, oname, *ins, *outs[i + 1:], inplace_ok=inplace_ok)


def _check_bool(v, name):
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(v).__name__}")
    return bool(v)


def _check_conv_args(x, w, b, stride, pad, wname="w", bname="b"):
    x = _check_in(x, "x", 4)
    w = _check_in(w, wname, 4)
    geo = _conv_geometry(x.shape, w.shape, stride, pad)
    b = _check_bias(b, geo[4], bname)
    return x, w, b, geo


def _pool_geometry(x_shape, size, stride):
    N, C, H, W = _check_shape(x_shape, "x.shape", 4)
    size = _int(size, "size", 1)
    stride = _int(stride, "stride", 1)
    if H < size or W < size:
        raise ValueError(f"pooling window {size}x{size} is larger than the input {H}x{W}")
    if stride > _MAX_FLOATS:
        raise ValueError(f"stride must be <= 2**56, got {stride}")
    if H * W > _MAX_PLANE:
        raise ValueError(f"x.shape {(N, C, H, W)}: an H*W plane must hold at most 2**31 - 1 values "
                         f"(the argmax is int32)")
    return N, C, H, W, (H - size) // stride + 1, (W - size) // stride + 1, size, stride


def _check_dense_args(x, w, b):
    x = _check_in(x, "x", 2)
    w = _check_in(w, "w", 2)
    if w.shape[1] != x.shape[1]:
        raise ValueError(f"w must have shape (out_features, {x.shape[1]}) to match x {x.shape}, got {w.shape}")
    b = _check_bias(b, w.shape[0])
    return x, w, b


def _check_scalar(v, name, minimum=None):
    if isinstance(v, np.generic) and isinstance(v, numbers.Real):
        v = float(v)
    v = check_float(v, name, minimum=minimum)
    if abs(v) > _F32_MAX:  # the kernels take float32 scalars
        raise ValueError(f"{name} must be within the float32 range, got {v}")
    return v


# ------------------------------------------------------------------ dtype-generic helpers

def _im2col(x, KH, KW, stride, pad, HO, WO):
    """x (N,C,H,W) -> cols (N, C, KH, KW, HO, WO), zero outside the image."""
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    cols = np.empty((N, C, KH, KW, HO, WO), dtype=x.dtype)
    for i in range(KH):
        for j in range(KW):
            cols[:, :, i, j] = xp[:, :, i:i + stride * HO:stride, j:j + stride * WO:stride]
    return cols


def _col2im(cols, x_shape, stride, pad):
    """cols (N, C, KH, KW, HO, WO) -> dx (N,C,H,W): each tap added back to its pixel."""
    N, C, H, W = x_shape
    _, _, KH, KW, HO, WO = cols.shape
    dxp = np.zeros((N, C, H + 2 * pad, W + 2 * pad), dtype=cols.dtype)
    for i in range(KH):
        for j in range(KW):
            dxp[:, :, i:i + stride * HO:stride, j:j + stride * WO:stride] += cols[:, :, i, j]
    return dxp[:, :, pad:pad + H, pad:pad + W]


def _conv2d(x, w, b, stride, pad):
    """y (N,F,HO,WO) = conv2d(x, w) + b, in the dtype of x."""
    N, C, H, W = x.shape
    F, _, KH, KW = w.shape
    HO = (H + 2 * pad - KH) // stride + 1
    WO = (W + 2 * pad - KW) // stride + 1
    cols = _im2col(x, KH, KW, stride, pad, HO, WO).reshape(N, C * KH * KW, HO * WO)
    y = np.matmul(w.reshape(F, C * KH * KW), cols)  # (N, F, P)
    if b is not None:
        y += b[:, None]
    return y.reshape(N, F, HO, WO)


def _conv2d_grads(x, w, dy, stride, pad):
    """(dx, dw, db) of conv2d for the upstream gradient dy (N,F,HO,WO), in the dtype of x."""
    N, C, H, W = x.shape
    F, _, KH, KW = w.shape
    HO, WO = dy.shape[2], dy.shape[3]
    cols = _im2col(x, KH, KW, stride, pad, HO, WO).reshape(N, C * KH * KW, HO * WO)
    dy2 = dy.reshape(N, F, HO * WO)
    w2 = w.reshape(F, C * KH * KW)
    dw = np.einsum("nfp,nkp->fk", dy2, cols).reshape(w.shape)
    db = dy2.sum(axis=(0, 2))
    dcols = np.matmul(w2.T, dy2).reshape(N, C, KH, KW, HO, WO)
    dx = _col2im(dcols, x.shape, stride, pad)
    return dx, dw, db


def _maxpool2d(x, size, stride):
    """(y, argmax) of max pooling; ties: first maximum in row-major window order; NaN wins."""
    N, C, H, W = x.shape
    HO = (H - size) // stride + 1
    WO = (W - size) // stride + 1
    y = None
    arg = np.zeros((N, C, HO, WO), dtype=np.int32)
    rows = np.arange(HO)[:, None] * stride
    cols = np.arange(WO)[None, :] * stride
    for i in range(size):
        for j in range(size):
            v = x[:, :, i:i + stride * HO:stride, j:j + stride * WO:stride][:, :, :HO, :WO]
            idx = ((rows + i) * W + (cols + j)).astype(np.int32)
            if y is None:
                y = v.copy()
                arg[...] = idx
                continue
            better = (v > y) | np.isnan(v)
            y = np.where(better, v, y)
            arg = np.where(better, idx, arg).astype(np.int32)
    return y, arg


def _maxpool2d_grad(dy, argmax, x_shape):
    N, C, H, W = x_shape
    dx = np.zeros((N * C, H * W), dtype=dy.dtype)
    flat_dy = dy.reshape(N * C, dy.shape[2] * dy.shape[3])  # explicit: -1 is ambiguous when N*C == 0
    flat_arg = argmax.reshape(N * C, dy.shape[2] * dy.shape[3])
    for pl in range(N * C):
        np.add.at(dx[pl], flat_arg[pl], flat_dy[pl])
    return dx.reshape(N, C, H, W)


def _dense(x, w, b):
    y = x @ w.T
    if b is not None:
        y = y + b
    return y


# ---------------------------------------------------------------------------- conv2d

def conv2d_workspace_size(x_shape, w_shape, stride, pad):
    """Number of float32 scratch values ``conv2d_forward``/``conv2d_backward`` need.

    x_shape (N,C,H,W), w_shape (F,C,KH,KW) -> int: ``G * (K*PW + F*PW + C*Hp*Wp + KW + F*K + F)``
    with ``K = C*KH*KW``, ``Hp, Wp = H + 2*pad, W + 2*pad``, ``PW = HO*Wp`` and G image groups
    (``min(N, 16)``, fewer, down to 4, when a group needs more than 8M floats): per group a column
    buffer, a wide output row buffer, a padded image plane and the dw/db partials.
    Raises ValueError for inconsistent shapes, TypeError for non-integers.
    """
    N, C, H, W, F, KH, KW, HO, WO = _conv_geometry(x_shape, w_shape, stride, pad)
    return _conv_workspace_floats(N, C, F, KH, KW, HO, WO, H, W, stride, pad)


def _act_flag(act, name="act"):
    """None/"identity" -> 0, "relu" -> 1; anything else raises (naming ``name``)."""
    if act is None or (isinstance(act, str) and act == "identity"):
        return 0
    if isinstance(act, str) and act == "relu":
        return 1
    if not isinstance(act, str):
        raise TypeError(f"{name} must be None, 'identity' or 'relu', got {type(act).__name__}")
    raise ValueError(f"{name} must be None, 'identity' or 'relu', got {act!r}")


def conv2d_forward(x, w, b, stride, pad, out=None, workspace=None, act=None):
    """2-D convolution (cross-correlation, as ``torch.nn.functional.conv2d``), NCHW.

    x (N,C,H,W), w (F,C,KH,KW), b (F,) or None -> out (N,F,HO,WO) float32 with
    ``HO = (H + 2*pad - KH) // stride + 1`` (zero padding). ``out`` and ``workspace``
    (1-D float32, >= ``conv2d_workspace_size``) may be passed to avoid allocation.
    ``act``: None / "identity" (default) or "relu" (``max(0, .)`` applied after the bias;
    fused into the C kernel's store). Raises ValueError / TypeError naming the offending argument.
    """
    relu = _act_flag(act)
    x, w, b, (N, C, H, W, F, KH, KW, HO, WO) = _check_conv_args(x, w, b, stride, pad)
    out = _check_out(out, "out", (N, F, HO, WO))
    _check_workspace(workspace, _conv_workspace_floats(N, C, F, KH, KW, HO, WO, H, W, stride, pad))
    _check_outs([(out, "out"), (workspace, "workspace")], [(x, "x"), (w, "w"), (b, "b")])
    out[...] = _conv2d(x, w, b, stride, pad)
    if relu:
        np.maximum(out, np.float32(0.0), out=out)  # NaN stays NaN
    return out


def conv2d_backward(x, w, dy, stride, pad, dx=None, dw=None, db=None, need_dx=True,
                    accumulate=False, workspace=None):
    """Gradients of ``conv2d_forward`` for the upstream gradient dy (N,F,HO,WO).

    Returns ``(dx, dw, db)``: dx (N,C,H,W) (None when ``need_dx`` is False; overwritten),
    dw (F,C,KH,KW) and db (F,) (new arrays when None; when given they are overwritten, or
    added to when ``accumulate`` is True). The bias gradient is always computed.
    """
    x, w, _, (N, C, H, W, F, KH, KW, HO, WO) = _check_conv_args(x, w, None, stride, pad)
    dy = _check_in(dy, "dy", 4)
    if dy.shape != (N, F, HO, WO):
        raise ValueError(f"dy must have shape {(N, F, HO, WO)}, got {dy.shape}")
    need_dx = _check_bool(need_dx, "need_dx")
    accumulate = _check_bool(accumulate, "accumulate")
    dx = _check_out(dx, "dx", x.shape) if need_dx else None
    dw = _grad_buf(dw, "dw", w.shape, accumulate)
    db = _grad_buf(db, "db", (F,), accumulate)
    _check_workspace(workspace, _conv_workspace_floats(N, C, F, KH, KW, HO, WO, H, W, stride, pad))
    _check_outs([(dx, "dx"), (dw, "dw"), (db, "db"), (workspace, "workspace")], [(x, "x"), (w, "w"), (dy, "dy")])
    gx, gw, gb = _conv2d_grads(x, w, dy, stride, pad)
    if need_dx:
        dx[...] = gx
    _store_grad(dw, gw, accumulate)
    _store_grad(db, gb, accumulate)
    return dx, dw, db


# --------------------------------------------------------------------------- maxpool2d

def conv2d_pool2_forward(x, w, b, stride, pad, out=None, workspace=None, act=None):
    """Inference fusion: ``maxpool2d(conv2d_forward(x, w, b, stride, pad, act=act), 2, 2)``.

    x (N,C,H,W), w (F,C,KH,KW), b (F,) or None -> out (N,F,HO//2,WO//2) float32 (HO, WO the
    convolution's output size, >= 2; floor mode; NaN propagates). No argmax is produced (no
    backward). ``workspace``: as for ``conv2d_forward``. Raises ValueError / TypeError.
    """
    relu = _act_flag(act)
    x, w, b, (N, C, H, W, F, KH, KW, HO, WO) = _check_conv_args(x, w, b, stride, pad)
    if HO < 2 or WO < 2:
        raise ValueError(f"conv2d_pool2_forward needs a convolution output of at least 2x2, got {HO}x{WO}")
    out = _check_out(out, "out", (N, F, HO // 2, WO // 2))
    _check_workspace(workspace, _conv_workspace_floats(N, C, F, KH, KW, HO, WO, H, W, stride, pad))
    _check_outs([(out, "out"), (workspace, "workspace")], [(x, "x"), (w, "w"), (b, "b")])
    y = _conv2d(x, w, b, stride, pad)
    if relu:
        y = np.maximum(y, np.float32(0.0))
    out[...] = _maxpool2d(np.ascontiguousarray(y, dtype=np.float32), 2, 2)[0]
    return out


def _chain_args(x, w1, b1, stride1, pad1, w2, b2, stride2, pad2):
    """Validated arguments of a two-stage conv + pool chain and both stages' geometries."""
    x = _check_in(x, "x", 4)
    w1 = _check_in(w1, "w1", 4)
    w2 = _check_in(w2, "w2", 4)
    g1, g2 = _chain_geometries(x.shape, w1.shape, stride1, pad1, w2.shape, stride2, pad2)
    b1 = _check_bias(b1, g1[4], "b1")
    b2 = _check_bias(b2, g2[4], "b2")
    return x, w1, b1, w2, b2, g1, g2


def _chain_workspace_floats(g1, g2, stride1, pad1, stride2, pad2):
    """conv.c me_conv2d_pool2_chain_workspace_size: 0 unless N >= 8 and both stages are 3x3
    stride 1 on Winograd (the second in the images layout: F1 >= 3, F2 > 8; the first: C == 1 or
    C >= 3 with F1 > 8); else min(ceil(N/8), 16) slots of wino_chain_slot floats."""
    N, C, H, W, F1, KH1, KW1 = g1[:7]
    _, _, H2, W2, F2, KH2, KW2 = g2[:7]
    Hp1, Wp1, Hp2, Wp2 = H + 2 * pad1, W + 2 * pad1, H2 + 2 * pad2, W2 + 2 * pad2
    if (N < 8 or not _wino_applies(C, F1, KH1, KW1, stride1, Hp1, Wp1)
            or not _wino_applies(F1, F2, KH2, KW2, stride2, Hp2, Wp2) or F1 < _WINO_MIN_C):
        return 0
    F1pad, F2pad = -(-F1 // _WINO_KB) * _WINO_KB, -(-F2 // _WINO_KB) * _WINO_KB
    TH2, TW2 = (Hp2 - 2) // 2, (Wp2 - 2) // 2
    slot = (C * Hp1 * Wp1 * 8 + F1 * Hp2 * Wp2 * 8 + 16 * C * F1pad + 16 * F1 * F2pad
            + 16 * max(C, F1) * 8 + 16 * _WINO_KB * 8 + F2 * TH2 * TW2 * 8)
    return min(-(-N // 8), _CONV_GROUPS) * slot


def _chain_geometries(x_shape, w1_shape, stride1, pad1, w2_shape, stride2, pad2):
    g1 = _conv_geometry(x_shape, w1_shape, stride1, pad1, "1")
    if g1[7] < 2 or g1[8] < 2:
        raise ValueError(f"the first stage needs a convolution output of at least 2x2, got {g1[7]}x{g1[8]}")
    w2_shape = _check_shape(w2_shape, "w2.shape", 4)
    if w2_shape[1] != g1[4]:
        raise ValueError(f"w2 must have {g1[4]} input channels (the filters of w1), got shape {w2_shape}")
    try:
        g2 = _conv_geometry((g1[0], g1[4], g1[7] // 2, g1[8] // 2), w2_shape, stride2, pad2, "2")
    except ValueError as e:  # "x" there is the first stage's pooled output
        raise ValueError(f"the second stage (on the first stage's pooled output): {e}") from None
    if g2[7] < 2 or g2[8] < 2:
        raise ValueError(f"the second stage needs a convolution output of at least 2x2, got {g2[7]}x{g2[8]}")
    return g1, g2


def conv2d_pool2_chain_workspace_size(x_shape, w1_shape, stride1, pad1, w2_shape, stride2, pad2):
    """Float32 scratch values ``conv2d_pool2_chain_forward`` needs: 0 when the stages do not
    take the one-pass kernel (it then makes two ``conv2d_pool2_forward`` calls). Raises
    ValueError / TypeError for inconsistent shapes."""
    g1, g2 = _chain_geometries(x_shape, w1_shape, stride1, pad1, w2_shape, stride2, pad2)
    return _chain_workspace_floats(g1, g2, stride1, pad1, stride2, pad2)


def conv2d_pool2_chain_forward(x, w1, b1, stride1, pad1, w2, b2, stride2, pad2, act1=None, act2=None,
                               out=None, workspace=None):
    """Two inference stages in one call: ``conv2d_pool2_forward(conv2d_pool2_forward(x, w1, b1,
    stride1, pad1, act=act1), w2, b2, stride2, pad2, act=act2)``.

    x (N,C,H,W), w1 (F1,C,KH1,KW1), b1 (F1,) or None, w2 (F2,F1,KH2,KW2), b2 (F2,) or None ->
    out (N,F2,HO2//2,WO2//2) float32, HO2 the second convolution's output height on the first
    stage's pooled output (both convolution outputs must be at least 2x2). ``workspace``:
    ``conv2d_pool2_chain_workspace_size`` floats or None. Raises ValueError / TypeError.
    """
    a1, a2 = _act_flag(act1, "act1"), _act_flag(act2, "act2")
    x, w1, b1, w2, b2, g1, g2 = _chain_args(x, w1, b1, stride1, pad1, w2, b2, stride2, pad2)
    out = _check_out(out, "out", (g2[0], g2[4], g2[7] // 2, g2[8] // 2))
    _check_workspace(workspace, _chain_workspace_floats(g1, g2, stride1, pad1, stride2, pad2),
                     "conv2d_pool2_chain_workspace_size")
    _check_outs([(out, "out"), (workspace, "workspace")], [(x, "x"), (w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2")])
    z = conv2d_pool2_forward(x, w1, b1, stride1, pad1, act=("relu" if a1 else None))
    return conv2d_pool2_forward(z, w2, b2, stride2, pad2, out=out, act=("relu" if a2 else None))


def maxpool2d_forward(x, size, stride, out=None, argmax=None):
    """2-D max pooling (no padding, floor mode), as ``torch.nn.functional.max_pool2d``.

    x (N,C,H,W) -> ``(out, argmax)``: out (N,C,HO,WO) float32 with ``HO = (H - size)//stride + 1``,
    argmax (N,C,HO,WO) int32, the offset of the maximum in its H*W plane (ties: the first
    maximum in row-major window order; a NaN wins, as in torch).
    """
    x = _check_in(x, "x", 4)
    N, C, H, W, HO, WO, size, stride = _pool_geometry(x.shape, size, stride)
    out = _check_out(out, "out", (N, C, HO, WO))
    argmax = _check_out(argmax, "argmax", (N, C, HO, WO), dtype=np.int32)
    _check_outs([(out, "out"), (argmax, "argmax")], [(x, "x")])
    y, a = _maxpool2d(x, size, stride)
    out[...] = y
    argmax[...] = a
    return out, argmax


def _check_pool_backward(dy, argmax, x_shape):
    dy = _check_in(dy, "dy", 4)
    N, C, H, W = _check_shape(x_shape, "x_shape", 4)
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


def _bad_argmax(H, W):
    return ValueError(f"argmax entries must lie in [0, {H * W}) (offsets into an {H}x{W} plane)")


def maxpool2d_backward(dy, argmax, x_shape, dx=None):
    """Gradient of ``maxpool2d_forward``: dy (N,C,HO,WO), argmax (N,C,HO,WO) int32 ->
    dx (N,C,H,W) (overwritten; windows that overlap add their contributions).
    Raises ValueError when an argmax entry lies outside [0, H*W)."""
    dy, argmax, x_shape = _check_pool_backward(dy, argmax, x_shape)
    dx = _check_out(dx, "dx", x_shape)
    _check_outs([(dx, "dx")], [(dy, "dy"), (argmax, "argmax")])
    H, W = x_shape[2], x_shape[3]
    if argmax.size and (int(argmax.min()) < 0 or int(argmax.max()) >= H * W):
        raise _bad_argmax(H, W)
    dx[...] = _maxpool2d_grad(dy, argmax, x_shape)
    return dx


def _check_pool_relu_backward(dy, argmax, y, x_shape):
    dy, argmax, x_shape = _check_pool_backward(dy, argmax, x_shape)
    y = _check_in(y, "y", 4)
    if y.shape != dy.shape:
        raise ValueError(f"y must have the shape of dy {dy.shape} (the pooling's output), got {y.shape}")
    return dy, argmax, y, x_shape


def maxpool2d_relu_backward(dy, argmax, y, x_shape, dx=None):
    """Max pooling backward fused with the backward of the ReLU feeding the pooling: dy, argmax
    (int32), y (the pooling's output), all (N,C,HO,WO) -> dx (N,C,H,W), overwritten, equal to
    ``relu_backward(maxpool2d_backward(dy, argmax, x_shape), r)`` for the pooled ReLU output r
    (at each argmax r equals y, so the mask is y > 0, applied as a select before the scatter).
    Raises ValueError when an argmax entry lies outside [0, H*W)."""
    dy, argmax, y, x_shape = _check_pool_relu_backward(dy, argmax, y, x_shape)
    dx = _check_out(dx, "dx", x_shape)
    _check_outs([(dx, "dx")], [(dy, "dy"), (argmax, "argmax"), (y, "y")])
    H, W = x_shape[2], x_shape[3]
    if argmax.size and (int(argmax.min()) < 0 or int(argmax.max()) >= H * W):
        raise _bad_argmax(H, W)
    dx[...] = _maxpool2d_grad(np.where(y > 0, dy, np.float32(0)), argmax, x_shape)
    return dx


# -------------------------------------------------------------------------------- relu

def relu_forward(x, out=None):
    """out = max(x, 0), any shape, float32; ``out`` may be ``x`` itself (in place)."""
    x = _check_in(x, "x")
    out = _check_out(out, "out", x.shape)
    _check_outs([(out, "out")], [(x, "x")], inplace_ok=("x",))
    np.maximum(x, np.float32(0), out=out)
    return out


def relu_backward(dy, y, dx=None):
    """dx = dy * (y > 0) where y is the forward *output*; ``dx`` may be ``dy`` itself."""
    dy = _check_in(dy, "dy")
    y = _check_in(y, "y")
    if y.shape != dy.shape:
        raise ValueError(f"y must have the shape of dy {dy.shape}, got {y.shape}")
    dx = _check_out(dx, "dx", dy.shape)
    _check_outs([(dx, "dx")], [(dy, "dy"), (y, "y")], inplace_ok=("dy", "y"))
    np.copyto(dx, np.where(y > 0, dy, np.float32(0)))
    return dx


def all_finite(x):
    """True when no value of x (float32, C-contiguous, any shape) is NaN or +-Inf.
    Raises TypeError for another dtype or layout."""
    if not (isinstance(x, np.ndarray) and x.dtype == np.float32 and x.flags.c_contiguous):
        raise TypeError("x must be a C-contiguous float32 numpy.ndarray")
    return bool(np.isfinite(x).all())


# ------------------------------------------------------------------------------- dense

def dense_forward(x, w, b, out=None, act=None):
    """Fully connected layer, as ``torch.nn.functional.linear``: x (N,I), w (O,I), b (O,) or
    None -> out (N,O) = x @ w.T + b (float32); ``act``: None/"identity", or "relu" for
    max(., 0) in the same call (TypeError/ValueError otherwise)."""
    relu = _act_flag(act)
    x, w, b = _check_dense_args(x, w, b)
    out = _check_out(out, "out", (x.shape[0], w.shape[0]))
    _check_outs([(out, "out")], [(x, "x"), (w, "w"), (b, "b")])
    out[...] = _dense(x, w, b)
    if relu:
        np.maximum(out, np.float32(0), out=out)
    return out


def dense_backward(x, w, dy, dx=None, dw=None, db=None, need_dx=True, accumulate=False):
    """Gradients of ``dense_forward`` for dy (N,O): ``(dx, dw, db)`` with dx = dy @ w (N,I)
    (None when ``need_dx`` is False), dw = dy.T @ x (O,I), db = dy.sum(0) (O,); dw/db are new
    arrays when None, else overwritten, or added to when ``accumulate`` is True."""
    x, w, _ = _check_dense_args(x, w, None)
    dy = _check_in(dy, "dy", 2)
    N, O = x.shape[0], w.shape[0]
    if dy.shape != (N, O):
        raise ValueError(f"dy must have shape {(N, O)}, got {dy.shape}")
    need_dx = _check_bool(need_dx, "need_dx")
    accumulate = _check_bool(accumulate, "accumulate")
    dx = _check_out(dx, "dx", x.shape) if need_dx else None
    dw = _grad_buf(dw, "dw", w.shape, accumulate)
    db = _grad_buf(db, "db", (O,), accumulate)
    _check_outs([(dx, "dx"), (dw, "dw"), (db, "db")], [(x, "x"), (w, "w"), (dy, "dy")])
    if need_dx:
        dx[...] = dy @ w
    _store_grad(dw, dy.T @ x, accumulate)
    _store_grad(db, dy.sum(axis=0), accumulate)
    return dx, dw, db


# ------------------------------------------------------------------------------- optim

def _check_sgd_args(p, g, v, lr, momentum, dampening, weight_decay, nesterov, first):
    p = _check_inplace(p, "p")
    g = _check_in(g, "g")
    if g.shape != p.shape:
        raise ValueError(f"g must have the shape of p {p.shape}, got {g.shape}")
    lr = _check_scalar(lr, "lr")
    momentum = _check_scalar(momentum, "momentum")
    dampening = _check_scalar(dampening, "dampening")
    weight_decay = _check_scalar(weight_decay, "weight_decay")
    nesterov = _check_bool(nesterov, "nesterov")
    first = _check_bool(first, "first")
    if momentum != 0.0:
        if v is None:
            raise ValueError("v (the momentum buffer) is required when momentum != 0")
        v = _check_inplace(v, "v", p.shape)
        _check_outs([(v, "v")], [(p, "p"), (g, "g")])
    _check_outs([(p, "p")], [(g, "g")], inplace_ok=("g",))
    return p, g, v, lr, momentum, dampening, weight_decay, nesterov, first


def sgd_step(p, g, v, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, first=False):
    """One in-place ``torch.optim.SGD`` step on the parameter array p with gradient g.

    p, v: float32 C-contiguous writeable arrays of one shape (v, the momentum buffer, may be
    None when momentum == 0); g: same shape. With ``g' = g + weight_decay * p``: the buffer
    becomes ``v = g'`` on the ``first`` step and ``momentum * v + (1 - dampening) * g'`` after;
    the update is ``p -= lr * d`` with ``d = g' + momentum * v`` (nesterov), ``v`` (momentum)
    or ``g'``. Source: torch/optim/sgd.py (_single_tensor_sgd). Returns None.
    """
    p, g, v, lr, momentum, dampening, weight_decay, nesterov, first = _check_sgd_args(
        p, g, v, lr, momentum, dampening, weight_decay, nesterov, first)
    f = np.float32
    gi = g + f(weight_decay) * p if weight_decay != 0.0 else g
    if momentum != 0.0:
        if first:
            v[...] = gi
        else:
            v[...] = v * f(momentum) + f(f(1.0) - f(dampening)) * gi
        d = gi + f(momentum) * v if nesterov else v
    else:
        d = gi
    p[...] = p + f(-lr) * d


def _check_adam_args(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay):
    p = _check_inplace(p, "p")
    g = _check_in(g, "g")
    if g.shape != p.shape:
        raise ValueError(f"g must have the shape of p {p.shape}, got {g.shape}")
    m = _check_inplace(m, "m", p.shape)
    v = _check_inplace(v, "v", p.shape)
    _check_outs([(m, "m"), (v, "v")], [(p, "p"), (g, "g")])
    _check_outs([(p, "p")], [(g, "g")], inplace_ok=("g",))
    t = check_int(t, "t", minimum=1)
    if t > 2**62:
        raise ValueError(f"t must be <= 2**62, got {t}")
    lr = _check_scalar(lr, "lr")
    beta1 = _check_scalar(beta1, "beta1")
    beta2 = _check_scalar(beta2, "beta2")
    eps = _check_scalar(eps, "eps", minimum=0.0)
    for name, b in (("beta1", beta1), ("beta2", beta2)):  # 1 - beta**t is a divisor
        if not 0.0 <= float(np.float32(b)) < 1.0:
            raise ValueError(f"{name} must be in [0, 1) (as a float32), got {b}")
    weight_decay = _check_scalar(weight_decay, "weight_decay")
    return p, g, m, v, t, lr, beta1, beta2, eps, weight_decay


def adam_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay):
    """One in-place ``torch.optim.Adam`` step (amsgrad=False) at step number t >= 1.

    p, m, v: float32 C-contiguous writeable arrays of one shape (m, v the first and second
    moment buffers, zero before the first step); g: same shape. With ``g' = g + weight_decay * p``
    (L2 penalty, not AdamW): ``m = lerp(m, g', 1 - beta1)``, ``v = beta2 * v + (1 - beta2) * g'^2``,
    ``p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``.
    Source: Kingma & Ba (2015), "Adam", ICLR; torch/optim/adam.py (_single_tensor_adam). Returns None.
    """
    p, g, m, v, t, lr, beta1, beta2, eps, weight_decay = _check_adam_args(
        p, g, m, v, t, lr, beta1, beta2, eps, weight_decay)
    f = np.float32
    step_size = f(float(f(lr)) / (1.0 - float(f(beta1)) ** t))  # as optim.c: float args, double bias corrections
    bc2_sqrt = f(np.sqrt(1.0 - float(f(beta2)) ** t))
    w1, w2 = f(1) - f(beta1), f(1) - f(beta2)
    gi = g + f(weight_decay) * p if weight_decay != 0.0 else g
    if w1 < 0.5:
        m[...] = m + w1 * (gi - m)
    else:
        m[...] = gi - (gi - m) * (f(1) - w1)
    v[...] = v * f(beta2) + w2 * (gi * gi)
    denom = np.sqrt(v) / bc2_sqrt + f(eps)
    p[...] = p + (-step_size) * (m / denom)
