# proxy and classifier losses (P2SGrad, softmax cross-entropy): wrappers of src/engine_c/proxy_losses.c.
# numpy twin: mantissa_embed/_reference/_proxy.py (same names and signatures; the checks live there).
cdef extern from "engine.h" nogil:
    int64_t me_p2sgrad_workspace_size(int64_t N, int64_t C, int64_t D)
    double me_p2sgrad_forward_backward(const float *x, const float *w, const int64_t *labels,
                                       float *dx, float *dw, int64_t N, int64_t C, int64_t D, float *ws)
    double me_softmax_xent_forward_backward(const float *logits, const int64_t *labels, double *row_loss,
                                            float *dlogits, int64_t N, int64_t C, float scale,
                                            float grad_scale)


def p2sgrad_forward_backward(x, w, labels, dx=None, dw=None):
    """P2SGrad loss and gradients (C kernel). x (N, D), w (C, D) float32, labels (N,) int64 in [0, C)
    -> (loss: float, dx (N, D), dw (C, D) float32). See
    :func:`mantissa_embed._reference.p2sgrad_forward_backward`."""
    from ._reference._proxy import _check_xent_inputs
    from ._validation import check_kernel_input, check_kernel_output, check_no_overlap
    xx = check_kernel_input(x, "x", ndim=2)
    ww = check_kernel_input(w, "w", ndim=2)
    if ww.shape[1] != xx.shape[1]:
        raise ValueError(f"w must have {xx.shape[1]} columns like x, got shape {ww.shape}")
    _, lab = _check_xent_inputs(np.empty((xx.shape[0], ww.shape[0]), np.float32), labels)
    N, D = xx.shape
    C = ww.shape[0]
    dxo = check_kernel_output(dx, "dx", (N, D))
    dwo = check_kernel_output(dw, "dw", (C, D))
    check_no_overlap(dxo, "dx", (xx, "x"), (ww, "w"))
    check_no_overlap(dwo, "dw", (xx, "x"), (ww, "w"), (dxo, "dx"))
    if N == 0 or C == 0 or D == 0:
        dxo[...] = 0
        dwo[...] = 0
        return 0.0, dxo, dwo
    ws = np.empty(me_p2sgrad_workspace_size(N, C, D), dtype=np.float32)
    cdef const float[:, ::1] xv = xx
    cdef const float[:, ::1] wv = ww
    cdef const int64_t[::1] lv = lab
    cdef float[:, ::1] dxv = dxo
    cdef float[:, ::1] dwv = dwo
    cdef float[::1] wsv = ws
    cdef int64_t n = N, c = C, d = D
    cdef double loss
    with nogil:
        loss = me_p2sgrad_forward_backward(&xv[0, 0], &wv[0, 0], &lv[0], &dxv[0, 0], &dwv[0, 0],
                                           n, c, d, &wsv[0])
    return float(loss), dxo, dwo


def softmax_xent_forward_backward(logits, labels, scale=1.0, grad_scale=1.0, dlogits=None):
    """Per-row softmax cross-entropy and its gradient (C kernel). logits (N, C) float32, labels (N,)
    int64 -> (row_loss (N,) float64, dlogits (N, C) float32). See
    :func:`mantissa_embed._reference.softmax_xent_forward_backward`."""
    from ._reference._proxy import _check_xent_inputs
    from ._validation import check_kernel_output, check_no_overlap
    x, lab = _check_xent_inputs(logits, labels)
    N, C = x.shape
    out = check_kernel_output(dlogits, "dlogits", (N, C))
    check_no_overlap(out, "dlogits", (x, "logits"))
    rl = np.zeros(N, dtype=np.float64)
    if N == 0:
        return rl, out
    if C == 0:
        raise ValueError("logits must have at least one column")
    cdef const float[:, ::1] zv = x
    cdef const int64_t[::1] lv = lab
    cdef double[::1] rv = rl
    cdef float[:, ::1] dv = out
    cdef int64_t n = N, c = C
    cdef float fs = scale, fg = grad_scale
    with nogil:
        me_softmax_xent_forward_backward(&zv[0, 0], &lv[0], &rv[0], &dv[0, 0], n, c, fs, fg)
    return rl, out


cdef extern from "engine.h" nogil:
    int64_t me_softmax_nll_fast_forward(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                                        float *losses, double *lse, uint8_t *valid, int64_t N, int64_t M,
                                        float scale, int exclude_self, int inverted, double max_loss)
    void me_softmax_nll_fast_backward(const float *sim, const int64_t *labels, const int64_t *ref_labels,
                                      const double *lse, const float *weights, float *dsim, int64_t N,
                                      int64_t M, float scale, int exclude_self, int inverted)


def softmax_nll_fast_forward(sim, labels, ref_labels, scale=1.0, exclude_self=False, inverted=True,
                             max_loss=np.inf):
    """:func:`softmax_nll_forward` with one vectorized float exp per entry (C kernel; equal up to
    float32 rounding of the logits). See :func:`mantissa_embed._reference.softmax_nll_fast_forward`."""
    sim, labels, ref_labels, exclude_self = _sm_common(sim, labels, ref_labels, exclude_self)
    cdef float sc = _lc_float(scale, "scale")
    cdef double ml = float(max_loss)
    N, M = sim.shape
    losses = np.zeros(N, dtype=np.float32)
    lse = np.full((N, 2), -np.inf, dtype=np.float64)
    valid = np.zeros(N, dtype=np.uint8)
    if N == 0 or M == 0:
        return losses, lse, valid.astype(bool)
    cdef const float[:, ::1] sv = sim
    cdef const int64_t[::1] lv = labels
    cdef const int64_t[::1] rv = ref_labels
    cdef float[::1] ov = losses
    cdef double[:, ::1] ev = lse
    cdef uint8_t[::1] vv = valid
    cdef int64_t n = N, m = M
    cdef int excl = exclude_self, inv = bool(inverted)
    with nogil:
        me_softmax_nll_fast_forward(&sv[0, 0], &lv[0], &rv[0], &ov[0], &ev[0, 0], &vv[0], n, m, sc,
                                    excl, inv, ml)
    return losses, lse, valid.view(bool)


def softmax_nll_fast_backward(sim, labels, ref_labels, lse, weights, scale=1.0, exclude_self=False,
                              inverted=True):
    """:func:`softmax_nll_backward` with one vectorized float exp per entry (C kernel). See
    :func:`mantissa_embed._reference.softmax_nll_fast_backward`."""
    sim, labels, ref_labels, exclude_self = _sm_common(sim, labels, ref_labels, exclude_self)
    cdef float sc = _lc_float(scale, "scale")
    N, M = sim.shape
    lse = _sm_lse(lse, N)
    weights = _sm_row_weights(weights, N)
    dsim = np.empty((N, M), dtype=np.float32)
    if N == 0 or M == 0:
        return dsim
    cdef const float[:, ::1] sv = sim
    cdef const int64_t[::1] lv = labels
    cdef const int64_t[::1] rv = ref_labels
    cdef const double[:, ::1] ev = lse
    cdef const float[::1] wv = weights
    cdef float[:, ::1] gv = dsim
    cdef int64_t n = N, m = M
    cdef int excl = exclude_self, inv = bool(inverted)
    with nogil:
        me_softmax_nll_fast_backward(&sv[0, 0], &lv[0], &rv[0], &ev[0, 0], &wv[0], &gv[0, 0], n, m, sc,
                                     excl, inv)
    return dsim
