# Layer kernels (conv, pool, relu, dense, optim) wrappers. Owner: layers helper.
#
# Each wrapper validates once with the helpers of its numpy twin
# (mantissa_embed._reference._layers), so both backends accept the same inputs and raise the
# same errors, then calls the C kernel with the GIL released. Degenerate inputs with a zero
# dimension never reach C (no &a[0] of an empty buffer): they are delegated to the twin.
from mantissa_embed._reference import _layers as _lref

cdef extern from "engine.h" nogil:
    void me_conv2d_forward_act(const float *x, const float *w, const float *b, float *y,
                               int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                               int64_t KH, int64_t KW, int64_t stride, int64_t pad, int relu,
                               float *workspace)
    int me_conv2d_pool2_forward(const float *x, const float *w, const float *b, float *y,
                                int64_t N, int64_t C, int64_t H, int64_t W, int64_t F,
                                int64_t KH, int64_t KW, int64_t stride, int64_t pad, int relu,
                                float *workspace)
    int me_conv2d_pool2_chain_forward(const float *x, const float *w1, const float *b1, const float *w2,
                                      const float *b2, float *y, int64_t N, int64_t C, int64_t H, int64_t W,
                                      int64_t F1, int64_t pad1, int relu1, int64_t F2, int64_t pad2, int relu2,
                                      float *workspace)
    int64_t me_conv2d_pool2_chain_workspace_size(int64_t N, int64_t C, int64_t H, int64_t W, int64_t F1,
                                                 int64_t pad1, int64_t F2, int64_t pad2)


def conv2d_workspace_size(x_shape, w_shape, stride, pad):
    """Number of float32 scratch values ``conv2d_forward`` / ``conv2d_backward`` need.

    x_shape (N,C,H,W), w_shape (F,C,KH,KW), stride >= 1, pad >= 0 -> int (see the numpy twin
    for the formula: per image group, column, wide-row, padded-plane and dw/db buffers).
    Raises ValueError/TypeError.
    """
    cdef int64_t N, C, H, W, F, KH, KW, HO, WO
    N, C, H, W, F, KH, KW, HO, WO = _lref._conv_geometry(x_shape, w_shape, stride, pad)
    if N <= 0 or C <= 0 or F <= 0:
        return 0
    return int(me_conv2d_workspace_size(N, C, H, W, F, KH, KW, stride, pad))


def conv2d_forward(x, w, b, stride, pad, out=None, workspace=None, act=None):
    """2-D convolution (cross-correlation, as ``torch.nn.functional.conv2d``), NCHW, float32.

    x (N,C,H,W), w (F,C,KH,KW), b (F,) or None -> out (N,F,HO,WO),
    ``HO = (H + 2*pad - KH) // stride + 1`` (zero padding). im2col + SGEMM, OpenMP over
    groups of images. ``out`` and ``workspace`` (1-D float32 of at least
    ``conv2d_workspace_size`` floats) may be passed to avoid allocation; ``out`` must not
    overlap ``x``. ``act``: None / "identity" (default) or "relu", applied after the bias
    in registers before the store (fused). Stride 1 with a shallow depth C*KH*KW <= 288 uses a
    direct convolution (AVX-512) instead of im2col. Raises ValueError / TypeError naming the
    offending argument.
    """
    cdef int64_t N, C, H, W, F, KH, KW, HO, WO, s, p
    cdef int relu = _lref._act_flag(act)
    cdef const float[:, :, :, ::1] xv
    cdef const float[:, :, :, ::1] wv
    cdef const float[::1] bv
    cdef float[:, :, :, ::1] ov
    cdef float[::1] wsv
    cdef const float *bp = NULL
    x, w, b, geo = _lref._check_conv_args(x, w, b, stride, pad)
    N, C, H, W, F, KH, KW, HO, WO = geo
    if x.size == 0 or w.size == 0:
        return _lref.conv2d_forward(x, w, b, stride, pad, out, workspace, act)
    out = _lref._check_out(out, "out", (N, F, HO, WO))
    workspace = _lref._check_workspace(workspace, _lref._conv_workspace_floats(N, C, F, KH, KW, HO, WO, H, W, stride, pad))
    _lref._check_outs([(out, "out"), (workspace, "workspace")], [(x, "x"), (w, "w"), (b, "b")])
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
                              N, C, H, W, F, KH, KW, s, p, relu, &wsv[0])
    return out


def conv2d_pool2_forward(x, w, b, stride, pad, out=None, workspace=None, act=None):
    """Inference fusion: ``maxpool2d(conv2d_forward(x, w, b, stride, pad, act=act), 2, 2)``.

    x (N,C,H,W), w (F,C,KH,KW), b (F,) or None -> out (N,F,HO//2,WO//2) float32 (HO, WO >= 2 the
    convolution's output size; floor mode; NaN propagates). One pass of the direct convolution
    with bias, ReLU and the 2x2 max in registers (the full-resolution output is never written,
    no argmax: no backward) when it applies (stride 1, C*KH*KW <= 288, AVX-512); for 3x3 kernels
    with C == 1, or C >= 3 and F > 8 (and AVX-512VL), that pass is Winograd F(2x2, 3x3) (Lavin &
    Gray 2016: each 2x2
    output tile is one pooling window; 2.25x fewer multiplies; float32 rounding differs from the
    direct sum by a few ulps of the patch magnitude; inputs within a few times the float32
    maximum, ~1e38, can overflow in its transforms and give NaN where the direct sum is finite).
    Otherwise ``conv2d_forward`` into a temporary then ``maxpool2d_forward``. Raises ValueError /
    TypeError.
    """
    cdef int64_t N, C, H, W, F, KH, KW, HO, WO, s, p
    cdef int relu = _lref._act_flag(act)
    cdef int done = 0
    cdef const float[:, :, :, ::1] xv
    cdef const float[:, :, :, ::1] wv
    cdef const float[::1] bv
    cdef float[:, :, :, ::1] ov
    cdef float[::1] wsv
    cdef const float *bp = NULL
    x, w, b, geo = _lref._check_conv_args(x, w, b, stride, pad)
    N, C, H, W, F, KH, KW, HO, WO = geo
    if x.size == 0 or w.size == 0 or HO < 2 or WO < 2:
        return _lref.conv2d_pool2_forward(x, w, b, stride, pad, out, workspace, act)
    out = _lref._check_out(out, "out", (N, F, HO // 2, WO // 2))
    workspace = _lref._check_workspace(workspace, _lref._conv_workspace_floats(N, C, F, KH, KW, HO, WO, H, W, stride, pad))
    _lref._check_outs([(out, "out"), (workspace, "workspace")], [(x, "x"), (w, "w"), (b, "b")])
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
        done = me_conv2d_pool2_forward(&xv[0, 0, 0, 0], &wv[0, 0, 0, 0], bp, &ov[0, 0, 0, 0],
                                       N, C, H, W, F, KH, KW, s, p, relu, &wsv[0])
    if not done:
        y = conv2d_forward(x, w, b, stride, pad, workspace=workspace, act=act)
        maxpool2d_forward(y, 2, 2, out=out)
    return out


def conv2d_pool2_chain_workspace_size(x_shape, w1_shape, stride1, pad1, w2_shape, stride2, pad2):
    """Float32 scratch values ``conv2d_pool2_chain_forward`` needs: 0 when the stages do not
    take the one-pass kernel. Raises ValueError / TypeError (see the numpy twin for the
    formula)."""
    cdef int64_t N, C, H, W, F1, F2, p1, p2
    g1, g2 = _lref._chain_geometries(x_shape, w1_shape, stride1, pad1, w2_shape, stride2, pad2)
    if _lref._chain_workspace_floats(g1, g2, stride1, pad1, stride2, pad2) == 0:
        return 0
    N, C, H, W, F1 = g1[0], g1[1], g1[2], g1[3], g1[4]
    F2, p1, p2 = g2[4], pad1, pad2
    return int(me_conv2d_pool2_chain_workspace_size(N, C, H, W, F1, p1, F2, p2))


def conv2d_pool2_chain_forward(x, w1, b1, stride1, pad1, w2, b2, stride2, pad2, act1=None, act2=None,
                               out=None, workspace=None):
    """Two inference stages in one call: ``conv2d_pool2_forward(conv2d_pool2_forward(x, w1, b1,
    stride1, pad1, act=act1), w2, b2, stride2, pad2, act=act2)``, bitwise.

    x (N,C,H,W), w1 (F1,C,KH1,KW1), b1 (F1,) or None, w2 (F2,F1,KH2,KW2), b2 (F2,) or None ->
    out (N,F2,HO2//2,WO2//2) float32. When both stages are 3x3 stride 1 and take the Winograd
    kernels (the second with F1 >= 3 and F2 > 8; AVX-512VL) the engine runs them over blocks of 8
    images in one pass, the first stage's pooled output written straight into the second stage's
    input plane (no (N, F1, H2, W2) intermediate); otherwise it makes the two calls.
    ``workspace``: ``conv2d_pool2_chain_workspace_size`` floats or None. Raises ValueError /
    TypeError.
    """
    cdef int64_t N, C, H, W, F1, F2, p1, p2
    cdef int r1 = _lref._act_flag(act1, "act1")
    cdef int r2 = _lref._act_flag(act2, "act2")
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
    x, w1, b1, w2, b2, g1, g2 = _lref._chain_args(x, w1, b1, stride1, pad1, w2, b2, stride2, pad2)
    out = _lref._check_out(out, "out", (g2[0], g2[4], g2[7] // 2, g2[8] // 2))
    need = _lref._chain_workspace_floats(g1, g2, stride1, pad1, stride2, pad2)
    workspace = _lref._check_workspace(workspace, need, "conv2d_pool2_chain_workspace_size")
    _lref._check_outs([(out, "out"), (workspace, "workspace")],
                      [(x, "x"), (w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2")])
    if need > 0 and x.size > 0:
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
        z = conv2d_pool2_forward(x, w1, b1, stride1, pad1, act=act1)
        conv2d_pool2_forward(z, w2, b2, stride2, pad2, out=out, act=act2)
    return out


def conv2d_backward(x, w, dy, stride, pad, dx=None, dw=None, db=None, need_dx=True,
                    accumulate=False, workspace=None):
    """Gradients of ``conv2d_forward`` for the upstream gradient dy (N,F,HO,WO), float32.

    Returns ``(dx, dw, db)``: dx (N,C,H,W), overwritten (None when ``need_dx`` is False);
    dw (F,C,KH,KW) and db (F,): new arrays when None, else overwritten, or added to when
    ``accumulate`` is True. The weight/bias gradients are summed over the batch in a fixed
    order (bitwise reproducible for any thread count). Raises ValueError / TypeError.
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
    cdef int acc
    x, w, _, geo = _lref._check_conv_args(x, w, None, stride, pad)
    N, C, H, W, F, KH, KW, HO, WO = geo
    dy = _lref._check_in(dy, "dy", 4)
    if dy.shape != (N, F, HO, WO):
        raise ValueError(f"dy must have shape {(N, F, HO, WO)}, got {dy.shape}")
    need_dx = _lref._check_bool(need_dx, "need_dx")
    accumulate = _lref._check_bool(accumulate, "accumulate")
    if x.size == 0 or w.size == 0:
        return _lref.conv2d_backward(x, w, dy, stride, pad, dx, dw, db, need_dx, accumulate, workspace)
    dx = _lref._check_out(dx, "dx", x.shape) if need_dx else None
    dw = _lref._grad_buf(dw, "dw", w.shape, accumulate)
    db = _lref._grad_buf(db, "db", (F,), accumulate)
    workspace = _lref._check_workspace(workspace, _lref._conv_workspace_floats(N, C, F, KH, KW, HO, WO, H, W, stride, pad))
    _lref._check_outs([(dx, "dx"), (dw, "dw"), (db, "db"), (workspace, "workspace")],
                      [(x, "x"), (w, "w"), (dy, "dy")])
    s = stride
    p = pad
    acc = 1 if accumulate else 0
    xv = x
    wv = w
    dyv = dy
    dwv = dw
    dbv = db
    wsv = workspace
    if need_dx:
        dxv = dx
        dxp = &dxv[0, 0, 0, 0]
    with nogil:
        me_conv2d_backward(&xv[0, 0, 0, 0], &wv[0, 0, 0, 0], &dyv[0, 0, 0, 0],
                           dxp, &dwv[0, 0, 0, 0], &dbv[0],
                           N, C, H, W, F, KH, KW, s, p, acc, &wsv[0])
    return dx, dw, db


def maxpool2d_forward(x, size, stride, out=None, argmax=None):
    """2-D max pooling (no padding, floor mode), as ``torch.nn.functional.max_pool2d``.

    x (N,C,H,W) float32 -> ``(out, argmax)``: out (N,C,HO,WO), ``HO = (H - size)//stride + 1``;
    argmax (N,C,HO,WO) int32, the offset of each maximum in its H*W plane (ties: the first
    maximum in row-major window order; NaN propagates as in torch). Raises ValueError/TypeError.
    """
    cdef int64_t N, C, H, W, HO, WO, sz, st
    cdef const float[:, :, :, ::1] xv
    cdef float[:, :, :, ::1] ov
    cdef int[:, :, :, ::1] av
    x = _lref._check_in(x, "x", 4)
    N, C, H, W, HO, WO, sz, st = _lref._pool_geometry(x.shape, size, stride)
    out = _lref._check_out(out, "out", (N, C, HO, WO))
    argmax = _lref._check_out(argmax, "argmax", (N, C, HO, WO), dtype=np.int32)
    _lref._check_outs([(out, "out"), (argmax, "argmax")], [(x, "x")])
    if out.size == 0:
        return out, argmax
    xv = x
    ov = out
    av = argmax
    with nogil:
        me_maxpool2d_forward(&xv[0, 0, 0, 0], &ov[0, 0, 0, 0], <int32_t *> &av[0, 0, 0, 0],
                             N, C, H, W, sz, st)
    return out, argmax


def maxpool2d_backward(dy, argmax, x_shape, dx=None):
    """Gradient of ``maxpool2d_forward``: dy (N,C,HO,WO), argmax (N,C,HO,WO) int32 ->
    dx (N,C,H,W) float32, overwritten (overlapping windows add up). Raises ValueError when
    an argmax entry lies outside [0, H*W) (checked inside the kernel, which skips such entries;
    ``dx`` is then partly written)."""
    cdef int64_t N, C, H, W, HO, WO
    cdef const float[:, :, :, ::1] dyv
    cdef const int[:, :, :, ::1] av
    cdef float[:, :, :, ::1] dxv
    cdef int64_t bad
    dy, argmax, x_shape = _lref._check_pool_backward(dy, argmax, x_shape)
    dx = _lref._check_out(dx, "dx", x_shape)
    _lref._check_outs([(dx, "dx")], [(dy, "dy"), (argmax, "argmax")])
    N, C, H, W = x_shape
    HO, WO = dy.shape[2], dy.shape[3]
    if dx.size == 0 or dy.size == 0:
        return _lref.maxpool2d_backward(dy, argmax, x_shape, dx)
    dyv = dy
    av = argmax
    dxv = dx
    with nogil:
        bad = me_maxpool2d_backward_checked(&dyv[0, 0, 0, 0], <const int32_t *> &av[0, 0, 0, 0],
                                            &dxv[0, 0, 0, 0], N, C, H, W, HO, WO)
    if bad:
        raise _lref._bad_argmax(H, W)  # the kernel skipped them; dx is not meaningful
    return dx


def maxpool2d_relu_backward(dy, argmax, y, x_shape, dx=None):
    """Max pooling backward fused with the backward of the ReLU that feeds the pooling.

    dy (N,C,HO,WO) float32, argmax (N,C,HO,WO) int32 and y (N,C,HO,WO) float32 (the pooling's
    forward output) -> dx (N,C,H,W) float32, overwritten. Equals, bitwise,
    ``relu_backward(maxpool2d_backward(dy, argmax, x_shape), r)`` where ``r`` is the ReLU output
    that was pooled (at every argmax, ``r`` equals the pooled ``y``, so the mask is ``y > 0``),
    in one pass instead of two. Raises ValueError / TypeError for bad shapes or dtypes, and
    ValueError when an argmax entry lies outside [0, H*W).
    """
    cdef int64_t N, C, H, W, HO, WO
    cdef const float[:, :, :, ::1] dyv
    cdef const float[:, :, :, ::1] yv
    cdef const int[:, :, :, ::1] av
    cdef float[:, :, :, ::1] dxv
    cdef int64_t bad
    dy, argmax, y, x_shape = _lref._check_pool_relu_backward(dy, argmax, y, x_shape)
    dx = _lref._check_out(dx, "dx", x_shape)
    _lref._check_outs([(dx, "dx")], [(dy, "dy"), (argmax, "argmax"), (y, "y")])
    N, C, H, W = x_shape
    HO, WO = dy.shape[2], dy.shape[3]
    if dx.size == 0 or dy.size == 0:
        return _lref.maxpool2d_relu_backward(dy, argmax, y, x_shape, dx)
    dyv = dy
    yv = y
    av = argmax
    dxv = dx
    with nogil:
        bad = me_maxpool2d_relu_backward(&dyv[0, 0, 0, 0], <const int32_t *> &av[0, 0, 0, 0],
                                         &yv[0, 0, 0, 0], &dxv[0, 0, 0, 0], N, C, H, W, HO, WO)
    if bad:
        raise _lref._bad_argmax(H, W)  # the kernel skipped them; dx is not meaningful
    return dx


def relu_forward(x, out=None):
    """out = max(x, 0), element-wise, any shape, float32. ``out`` may be ``x`` (in place)."""
    cdef const float[::1] xv
    cdef float[::1] ov
    cdef int64_t n
    x = _lref._check_in(x, "x")
    out = _lref._check_out(out, "out", x.shape)
    _lref._check_outs([(out, "out")], [(x, "x")], inplace_ok=("x",))
    n = x.size
    if n == 0:
        return out
    xv = x.reshape(-1)
    ov = out.reshape(-1)
    with nogil:
        me_relu_forward(&xv[0], &ov[0], n)
    return out


def all_finite(x):
    """True when no value of x (float32, C-contiguous, any shape) is NaN or +-Inf (OpenMP over
    blocks above 65,536 values); numpy.isfinite(x).all() in one read, no boolean temporary.
    Raises TypeError for another dtype or layout."""
    cdef const float[::1] xv
    cdef int64_t n
    cdef int ok
    if not (isinstance(x, np.ndarray) and x.dtype == np.float32 and x.flags.c_contiguous):
        raise TypeError("x must be a C-contiguous float32 numpy.ndarray")
    n = x.size
    if n == 0:
        return True
    xv = x.reshape(-1)
    with nogil:
        ok = me_all_finite(&xv[0], n)
    return ok != 0


def relu_backward(dy, y, dx=None):
    """dx = dy * (y > 0), y the forward *output*; any shape, float32. ``dx`` may be ``dy``."""
    cdef const float[::1] dyv
    cdef const float[::1] yv
    cdef float[::1] dxv
    cdef int64_t n
    dy = _lref._check_in(dy, "dy")
    y = _lref._check_in(y, "y")
    if y.shape != dy.shape:
        raise ValueError(f"y must have the shape of dy {dy.shape}, got {y.shape}")
    dx = _lref._check_out(dx, "dx", dy.shape)
    _lref._check_outs([(dx, "dx")], [(dy, "dy"), (y, "y")], inplace_ok=("dy", "y"))
    n = dy.size
    if n == 0:
        return dx
    dyv = dy.reshape(-1)
    yv = y.reshape(-1)
    dxv = dx.reshape(-1)
    with nogil:
        me_relu_backward(&dyv[0], &yv[0], &dxv[0], n)
    return dx


def dense_forward(x, w, b, out=None, act=None):
    """Fully connected layer, as ``torch.nn.functional.linear``: x (N,I), w (O,I),
    b (O,) or None -> out (N,O) = x @ w.T + b, float32 (one SGEMM); ``act="relu"`` applies
    max(., 0) in the same call. Raises ValueError/TypeError."""
    cdef const float[:, ::1] xv
    cdef const float[:, ::1] wv
    cdef const float[::1] bv
    cdef float[:, ::1] ov
    cdef const float *bp = NULL
    cdef int64_t N, I, O
    cdef int relu = _lref._act_flag(act)
    x, w, b = _lref._check_dense_args(x, w, b)
    if x.size == 0 or w.size == 0:
        return _lref.dense_forward(x, w, b, out, act)
    N, I = x.shape[0], x.shape[1]
    O = w.shape[0]
    out = _lref._check_out(out, "out", (N, O))
    _lref._check_outs([(out, "out")], [(x, "x"), (w, "w"), (b, "b")])
    xv = x
    wv = w
    ov = out
    if b is not None:
        bv = b
        bp = &bv[0]
    with nogil:
        me_dense_forward(&xv[0, 0], &wv[0, 0], bp, &ov[0, 0], N, I, O, relu)
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
    x, w, _ = _lref._check_dense_args(x, w, None)
    dy = _lref._check_in(dy, "dy", 2)
    N, I = x.shape[0], x.shape[1]
    O = w.shape[0]
    if dy.shape != (N, O):
        raise ValueError(f"dy must have shape {(N, O)}, got {dy.shape}")
    need_dx = _lref._check_bool(need_dx, "need_dx")
    accumulate = _lref._check_bool(accumulate, "accumulate")
    if N == 0 or I == 0 or O == 0:
        return _lref.dense_backward(x, w, dy, dx, dw, db, need_dx, accumulate)
    dx = _lref._check_out(dx, "dx", x.shape) if need_dx else None
    dw = _lref._grad_buf(dw, "dw", w.shape, accumulate)
    db = _lref._grad_buf(db, "db", (O,), accumulate)
    _lref._check_outs([(dx, "dx"), (dw, "dw"), (db, "db")], [(x, "x"), (w, "w"), (dy, "dy")])
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


def sgd_step(p, g, v, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, first=False):
    """One in-place ``torch.optim.SGD`` step on the float32 parameter array p (any shape).

    g: gradient, same shape; v: momentum buffer (float32, same shape; may be None when
    momentum == 0). With ``g' = g + weight_decay * p``: ``v = g'`` on the ``first`` step,
    ``v = momentum * v + (1 - dampening) * g'`` after; ``p -= lr * d`` with
    ``d = g' + momentum * v`` (nesterov), ``v`` (momentum) or ``g'``.
    Source: torch/optim/sgd.py (_single_tensor_sgd). Returns None.
    """
    cdef float[::1] pv
    cdef const float[::1] gv
    cdef float[::1] vv
    cdef float *vp = NULL
    cdef int64_t n
    cdef float c_lr, c_mom, c_damp, c_wd
    cdef int c_nest, c_first
    p, g, v, lr, momentum, dampening, weight_decay, nesterov, first = _lref._check_sgd_args(
        p, g, v, lr, momentum, dampening, weight_decay, nesterov, first)
    n = p.size
    if n == 0:
        return None
    c_lr, c_mom, c_damp, c_wd = lr, momentum, dampening, weight_decay
    c_nest = nesterov
    c_first = first
    pv = p.reshape(-1)
    gv = g.reshape(-1)
    if momentum != 0.0:
        vv = v.reshape(-1)
        vp = &vv[0]
    with nogil:
        me_sgd_step(&pv[0], &gv[0], vp, n, c_lr, c_mom, c_damp, c_wd, c_nest, c_first)
    return None


def adam_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay):
    """One in-place ``torch.optim.Adam`` step (amsgrad=False) at step number t >= 1.

    p, m, v: float32 arrays of one shape (m, v the moment buffers, zeros before step 1);
    g: gradient, same shape. With ``g' = g + weight_decay * p`` (L2, not AdamW):
    ``m = lerp(m, g', 1 - beta1)``, ``v = beta2 * v + (1 - beta2) * g'^2``,
    ``p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``.
    Source: Kingma & Ba (2015), "Adam", ICLR; torch/optim/adam.py. Returns None.
    """
    cdef float[::1] pv
    cdef const float[::1] gv
    cdef float[::1] mv
    cdef float[::1] vv
    cdef int64_t n, c_t
    cdef float c_lr, c_b1, c_b2, c_eps, c_wd
    p, g, m, v, t, lr, beta1, beta2, eps, weight_decay = _lref._check_adam_args(
        p, g, m, v, t, lr, beta1, beta2, eps, weight_decay)
    n = p.size
    if n == 0:
        return None
    c_t = t
    c_lr, c_b1, c_b2, c_eps, c_wd = lr, beta1, beta2, eps, weight_decay
    pv = p.reshape(-1)
    gv = g.reshape(-1)
    mv = m.reshape(-1)
    vv = v.reshape(-1)
    with nogil:
        me_adam_step(&pv[0], &gv[0], &mv[0], &vv[0], n, c_t, c_lr, c_b1, c_b2, c_eps, c_wd)
    return None
