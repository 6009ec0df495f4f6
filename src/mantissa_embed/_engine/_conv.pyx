"""2-D convolution, its fused inference forms and its backward (``src/engine_c/conv.c``).

Inputs are validated once (the checks are shared with the numpy twin, so both backends raise
the same errors), then the C kernel runs with the GIL released."""
import numpy as np

from libc.stdint cimport int64_t

from mantissa_embed._checks.activations import act_flag, check_negative_slope
from mantissa_embed._checks.arrays import check_kernel_output, check_outs, store_grad
from mantissa_embed._checks.conv import (chain_geometries, check_chain_args, check_conv_args,
                                         check_conv_backward_args, check_pool2_output, check_workspace,
                                         conv_geometry)
from mantissa_embed._engine._cengine cimport (me_conv2d_backward, me_conv2d_forward_act,
                                             me_conv2d_pool2_chain_forward,
                                             me_conv2d_pool2_chain_workspace_size,
                                             me_conv2d_pool2_forward, me_conv2d_workspace_size)
from mantissa_embed._engine._activations import _act_inplace
from mantissa_embed._engine._pool import maxpool2d_forward


__all__ = ['conv2d_workspace_size', 'conv2d_forward', 'conv2d_pool2_forward',
           'conv2d_pool2_chain_workspace_size', 'conv2d_pool2_chain_forward', 'conv2d_backward']


cdef int64_t _conv_need(int64_t N, int64_t C, int64_t H, int64_t W, int64_t F, int64_t KH, int64_t KW,
                        int64_t stride, int64_t pad) noexcept nogil:
    """Scratch floats of the convolution (conv.c); 0 for an empty batch, input or filter bank."""
    if N <= 0 or C <= 0 or F <= 0:
        return 0
    return me_conv2d_workspace_size(N, C, H, W, F, KH, KW, stride, pad)


cdef int64_t _chain_need(tuple g1, tuple g2, int64_t stride1, int64_t pad1, int64_t stride2, int64_t pad2):
    """Scratch floats of the one-pass chain; 0 when it does not apply. The C size function
    covers 3x3 stride-1 stages only (its arguments carry no kernel size or stride)."""
    if not (g1[5] == g1[6] == g2[5] == g2[6] == 3 and stride1 == 1 and stride2 == 1):
        return 0
    return me_conv2d_pool2_chain_workspace_size(g1[0], g1[1], g1[2], g1[3], g1[4], pad1, g2[4], pad2)


cdef object _fill_bias(out, b, int code, float slope):
    """The output of a convolution with no input value (an empty x or filter): the bias, then
    the activation."""
    if b is None:
        out.fill(0)
    else:
        out[...] = b.reshape(-1, 1, 1) + np.float32(0)  # as 0 + b: no -0.0
    return _act_inplace(out, code, slope)


def conv2d_workspace_size(x_shape, w_shape, stride, pad):
    """Number of float32 scratch values ``conv2d_forward`` / ``conv2d_backward`` need.

    x_shape (N,C,H,W), w_shape (F,C,KH,KW), stride >= 1, pad >= 0 -> int (``me_conv2d_workspace_size``:
    per image group a column, a wide-row, a padded-plane and the dw/db buffers; more for the shapes
    that take the Winograd inference). Raises ValueError/TypeError.
    """
    cdef int64_t N, C, H, W, F, KH, KW, HO, WO
    N, C, H, W, F, KH, KW, HO, WO = conv_geometry(x_shape, w_shape, stride, pad)
    return int(_conv_need(N, C, H, W, F, KH, KW, stride, pad))


def conv2d_forward(x, w, b, stride, pad, out=None, workspace=None, act=None, negative_slope=0.01):
    """2-D convolution (cross-correlation, as ``torch.nn.functional.conv2d``), NCHW, float32.

    x (N,C,H,W), w (F,C,KH,KW), b (F,) or None -> out (N,F,HO,WO),
    ``HO = (H + 2*pad - KH) // stride + 1`` (zero padding). OpenMP over groups of images;
    the path follows the SGEMM kernel (``engine.gemm_kernel_name()``): im2col + SGEMM
    (generic; stride > 1 on every kernel), direct convolution on the padded plane (avx2: any
    stride-1 shape; avx512: depth C*KH*KW <= 288). ``out`` and ``workspace`` (1-D float32 of at
    least ``conv2d_workspace_size`` floats) may be passed to avoid allocation; ``out`` must not
    overlap ``x``. ``act``: None / "identity" (default), "relu" or "leaky_relu" (with
    ``negative_slope`` >= 0, default 0.01), applied after the bias before the store (fused).
    Raises ValueError / TypeError naming the offending argument.
    """
    cdef int64_t N, C, H, W, F, KH, KW, HO, WO, s, p
    cdef int code = act_flag(act)
    cdef float slope = check_negative_slope(negative_slope)
    cdef const float[:, :, :, ::1] xv
    cdef const float[:, :, :, ::1] wv
    cdef const float[::1] bv
    cdef float[:, :, :, ::1] ov
    cdef float[::1] wsv
    cdef const float *bp = NULL
    x, w, b, geo = check_conv_args(x, w, b, stride, pad)
    N, C, H, W, F, KH, KW, HO, WO = geo
    out = check_kernel_output(out, "out", (N, F, HO, WO))
    workspace = check_workspace(workspace, _conv_need(N, C, H, W, F, KH, KW, stride, pad))
    check_outs([(out, "out"), (workspace, "workspace")], [(x, "x"), (w, "w"), (b, "b")])
    if x.size == 0 or w.size == 0:
        return _fill_bias(out, b, code, slope)
    s = stride
    p = pad
    xv = x
    wv = w
    ov = out
    wsv = workspace
    if b is not None:
        bv = b
        bp = &bv[0]
    with nogil:
        me_conv2d_forward_act(&xv[0, 0, 0, 0], &wv[0, 0, 0, 0], bp, &ov[0, 0, 0, 0],
                              N, C, H, W, F, KH, KW, s, p, code, slope, &wsv[0])
    return out


def conv2d_pool2_forward(x, w, b, stride, pad, out=None, workspace=None, act=None, negative_slope=0.01):
    """Inference fusion: ``maxpool2d(conv2d_forward(x, w, b, stride, pad, act=act), 2, 2)``.

    x (N,C,H,W), w (F,C,KH,KW), b (F,) or None -> out (N,F,HO//2,WO//2) float32 (HO, WO >= 2 the
    convolution's output size; floor mode; NaN propagates). One pass with bias, ReLU and the 2x2
    max in registers (the full-resolution output is never written, no argmax: no backward):
    - 3x3 stride 1 with C == 1, or C >= 3 and F > 8 (C*9 <= 288; AVX-512VL or AVX2): Winograd
      F(2x2, 3x3) (Lavin & Gray 2016: each 2x2 output tile is one pooling window; 2.25x fewer
      multiplies; float32 rounding differs from the direct sum by a few ulps of the patch
      magnitude). The AVX-512 and AVX2 builds give the same bits. With AVX-512, inputs within a
      few times the float32 maximum (~1e38) can overflow in its transforms and give NaN where the
      direct sum is finite; the AVX2 build hands a call holding a non-finite value or one above
      2^40 (input or weights) to the paths below instead.
    - other stride-1 shapes with C*KH*KW <= 288 on AVX-512: the direct convolution;
    - AVX2, 3x3 pad 1 with C, F >= 8 (e.g. F == 8): the training Winograd kernels with the
      pooling on each output tile (an image out of that range: im2col + SGEMM, then the pooling).
    Otherwise, and always for ``act="leaky_relu"``, ``conv2d_forward`` into a temporary then
    ``maxpool2d_forward``. Raises ValueError / TypeError.
    """
    cdef int64_t N, C, H, W, F, KH, KW, HO, WO, s, p
    cdef int code = act_flag(act)
    cdef float slope = check_negative_slope(negative_slope)
    cdef int relu = code == 1
    cdef int done = 0
    cdef const float[:, :, :, ::1] xv
    cdef const float[:, :, :, ::1] wv
    cdef const float[::1] bv
    cdef float[:, :, :, ::1] ov
    cdef float[::1] wsv
    cdef const float *bp = NULL
    x, w, b, geo = check_conv_args(x, w, b, stride, pad)
    N, C, H, W, F, KH, KW, HO, WO = geo
    check_pool2_output(HO, WO)
    out = check_kernel_output(out, "out", (N, F, HO // 2, WO // 2))
    workspace = check_workspace(workspace, _conv_need(N, C, H, W, F, KH, KW, stride, pad))
    check_outs([(out, "out"), (workspace, "workspace")], [(x, "x"), (w, "w"), (b, "b")])
    if x.size == 0 or w.size == 0:
        return _fill_bias(out, b, code, slope)
    s = stride
    p = pad
    xv = x
    wv = w
    ov = out
    wsv = workspace
    if b is not None:
        bv = b
        bp = &bv[0]
    with nogil:
        if code != 2:  # the fused kernels take identity or ReLU only
            done = me_conv2d_pool2_forward(&xv[0, 0, 0, 0], &wv[0, 0, 0, 0], bp, &ov[0, 0, 0, 0],
                                           N, C, H, W, F, KH, KW, s, p, relu, &wsv[0])
    if not done:
        y = conv2d_forward(x, w, b, stride, pad, workspace=workspace, act=act, negative_slope=slope)
        maxpool2d_forward(y, 2, 2, out=out)
    return out


def conv2d_pool2_chain_workspace_size(x_shape, w1_shape, stride1, pad1, w2_shape, stride2, pad2):
    """Float32 scratch values ``conv2d_pool2_chain_forward`` needs: 0 when the stages do not
    take the one-pass kernel (``me_conv2d_pool2_chain_workspace_size``). Raises ValueError /
    TypeError."""
    g1, g2 = chain_geometries(x_shape, w1_shape, stride1, pad1, w2_shape, stride2, pad2)
    return int(_chain_need(g1, g2, stride1, pad1, stride2, pad2))


def conv2d_pool2_chain_forward(x, w1, b1, stride1, pad1, w2, b2, stride2, pad2, act1=None, act2=None,
                               out=None, workspace=None, negative_slope1=0.01, negative_slope2=0.01):
    """Two inference stages in one call: ``conv2d_pool2_forward(conv2d_pool2_forward(x, w1, b1,
    stride1, pad1, act=act1), w2, b2, stride2, pad2, act=act2)``, bitwise.

    x (N,C,H,W), w1 (F1,C,KH1,KW1), b1 (F1,) or None, w2 (F2,F1,KH2,KW2), b2 (F2,) or None ->
    out (N,F2,HO2//2,WO2//2) float32. When both stages are 3x3 stride 1 and take the Winograd
    kernels (the second with F1 >= 3 and F2 > 8; AVX-512VL or AVX2) the engine runs them over blocks of 8
    images in one pass, the first stage's pooled output written straight into the second stage's
    input plane (no (N, F1, H2, W2) intermediate); otherwise (and for a "leaky_relu" stage, with
    ``negative_slope1`` / ``negative_slope2``) it makes the two calls.
    ``workspace``: ``conv2d_pool2_chain_workspace_size`` floats or None. Raises ValueError /
    TypeError.
    """
    cdef int64_t N, C, H, W, F1, F2, p1, p2
    cdef int r1 = act_flag(act1, "act1")
    cdef int r2 = act_flag(act2, "act2")
    cdef float s1 = check_negative_slope(negative_slope1, "negative_slope1")
    cdef float s2 = check_negative_slope(negative_slope2, "negative_slope2")
    cdef int done = 0
    cdef const float[:, :, :, ::1] xv
    cdef const float[:, :, :, ::1] w1v
    cdef const float[:, :, :, ::1] w2v
    cdef const float[::1] b1v
    cdef const float[::1] b2v
    cdef float[:, :, :, ::1] ov
    cdef float[::1] wsv
    cdef const float *b1p = NULL
    cdef const float *b2p = NULL
    x, w1, b1, w2, b2, g1, g2 = check_chain_args(x, w1, b1, stride1, pad1, w2, b2, stride2, pad2)
    out = check_kernel_output(out, "out", (g2[0], g2[4], g2[7] // 2, g2[8] // 2))
    need = _chain_need(g1, g2, stride1, pad1, stride2, pad2)
    workspace = check_workspace(workspace, need, "conv2d_pool2_chain_workspace_size")
    check_outs([(out, "out"), (workspace, "workspace")],
               [(x, "x"), (w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2")])
    if need > 0 and x.size > 0 and r1 != 2 and r2 != 2:
        N, C, H, W, F1 = g1[0], g1[1], g1[2], g1[3], g1[4]
        F2, p1, p2 = g2[4], pad1, pad2
        xv = x
        w1v = w1
        w2v = w2
        ov = out
        wsv = workspace
        if b1 is not None:
            b1v = b1
            b1p = &b1v[0]
        if b2 is not None:
            b2v = b2
            b2p = &b2v[0]
        with nogil:
            done = me_conv2d_pool2_chain_forward(&xv[0, 0, 0, 0], &w1v[0, 0, 0, 0], b1p, &w2v[0, 0, 0, 0], b2p,
                                                 &ov[0, 0, 0, 0], N, C, H, W, F1, p1, r1, F2, p2, r2, &wsv[0])
    if not done:
        z = conv2d_pool2_forward(x, w1, b1, stride1, pad1, act=act1, negative_slope=s1)
        conv2d_pool2_forward(z, w2, b2, stride2, pad2, out=out, act=act2, negative_slope=s2)
    return out


def conv2d_backward(x, w, dy, stride, pad, dx=None, dw=None, db=None, need_dx=True,
                    accumulate=False, workspace=None, need_db=True):
    """Gradients of ``conv2d_forward`` for the upstream gradient dy (N,F,HO,WO), float32.

    Returns ``(dx, dw, db)``: dx (N,C,H,W), overwritten (None when ``need_dx`` is False);
    dw (F,C,KH,KW) and db (F,): new arrays when None, else overwritten, or added to when
    ``accumulate`` is True; db is None (not computed) when ``need_db`` is False (a convolution
    without bias). The weight/bias gradients are summed over the batch in a fixed order (bitwise
    reproducible for any thread count). Raises ValueError / TypeError.
    """
    cdef int64_t N, C, H, W, F, KH, KW, HO, WO, s, p
    cdef const float[:, :, :, ::1] xv
    cdef const float[:, :, :, ::1] wv
    cdef const float[:, :, :, ::1] dyv
    cdef float[:, :, :, ::1] dxv
    cdef float[:, :, :, ::1] dwv
    cdef float[::1] dbv
    cdef float[::1] wsv
    cdef float *dxp = NULL
    cdef float *dbp = NULL
    cdef int acc
    x, w, dy, geo, dx, dw, db, need_dx, accumulate = check_conv_backward_args(
        x, w, dy, stride, pad, dx, dw, db, need_dx, accumulate, need_db)
    N, C, H, W, F, KH, KW, HO, WO = geo
    workspace = check_workspace(workspace, _conv_need(N, C, H, W, F, KH, KW, stride, pad))
    check_outs([(dx, "dx"), (dw, "dw"), (db, "db"), (workspace, "workspace")],
               [(x, "x"), (w, "w"), (dy, "dy")])
    if x.size == 0 or w.size == 0:  # no input value: dx and dw are zero, db sums dy
        if need_dx:
            dx.fill(0)
        store_grad(dw, 0, accumulate)
        if db is not None:
            store_grad(db, dy.reshape(N, F, HO * WO).sum(axis=(0, 2)), accumulate)
        return dx, dw, db
    s = stride
    p = pad
    acc = 1 if accumulate else 0
    xv = x
    wv = w
    dyv = dy
    dwv = dw
    wsv = workspace
    if db is not None:
        dbv = db
        dbp = &dbv[0]
    if need_dx:
        dxv = dx
        dxp = &dxv[0, 0, 0, 0]
    with nogil:
        me_conv2d_backward(&xv[0, 0, 0, 0], &wv[0, 0, 0, 0], &dyv[0, 0, 0, 0],
                           dxp, &dwv[0, 0, 0, 0], dbp,
                           N, C, H, W, F, KH, KW, s, p, acc, &wsv[0])
    return dx, dw, db
