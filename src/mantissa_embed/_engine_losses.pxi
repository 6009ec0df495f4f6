# Distance, normalization and pair/triplet loss wrappers. Owner: losses helper.
# The numpy twins are in mantissa_embed/_reference/_losses.py (same names, signatures, checks and
# error messages: the checks are imported from there).
from mantissa_embed._reference._losses import (
    NORMALIZE_EPS as _NORMALIZE_EPS,
    _check_in as _lc_in,
    _check_out as _lc_out,
    _check_same_cols as _lc_same_cols,
    _check_int_array as _lc_int_array,
    _check_flag as _lc_flag,
    _check_eps as _lc_eps,
    _check_self as _lc_self,
    _check_swap_all as _lc_swap_all,
    _check_workspace as _lc_workspace,
    _check_outs as _lc_outs,
    _check_pair_args as _lc_pair_args,
    _check_label_pair as _lc_label_pair,
    euclidean_workspace_size,
)
from mantissa_embed._validation import check_float as _lc_float


cdef dict _contrastive_stats(double *st):
    return {"pos_loss": st[0], "neg_loss": st[1],
            "num_pos_pairs": int(st[2]), "num_neg_pairs": int(st[3]),
            "num_pos_nonzero": int(st[4]), "num_neg_nonzero": int(st[5])}


cdef dict _triplet_stats(double *st):
    return {"loss": st[0], "num_triplets": int(st[1]), "num_nonzero": int(st[2])}


def l2_normalize_forward(x, eps=_NORMALIZE_EPS, y=None, norms=None):
    """Row-wise L2 normalization, as ``torch.nn.functional.normalize(x, p=2, dim=1, eps=eps)``.

    x (N, D) float32 -> (y (N, D) = x / max(||x||, eps), norms (N,) = ||x||). ``y`` may be ``x``.
    See :func:`mantissa_embed._reference.l2_normalize_forward`.
    """
    x = _lc_in(x, "x")
    cdef float feps = _lc_eps(eps)
    N, D = x.shape
    y = _lc_out(y, "y", (N, D))
    norms = _lc_out(norms, "norms", (N,))
    _lc_outs([(y, "y")], [(x, "x")], inplace_ok=("x",))
    _lc_outs([(norms, "norms")], [(x, "x"), (y, "y")])
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


def l2_normalize_backward(dy, y, norms, eps=_NORMALIZE_EPS, dx=None):
    """Gradient of :func:`l2_normalize_forward`: dx = (dy - y <y, dy>) / ||x|| (dy / eps when the
    norm is below eps). dy, y (N, D), norms (N,) float32 -> dx (N, D) float32 (may be ``dy``)."""
    dy = _lc_in(dy, "dy")
    y = _lc_in(y, "y")
    norms = _lc_in(norms, "norms", ndim=1)
    cdef float feps = _lc_eps(eps)
    if dy.shape != y.shape:
        raise ValueError(f"dy and y must have the same shape, got {dy.shape} and {y.shape}")
    if norms.shape != (y.shape[0],):
        raise ValueError(f"norms must have shape ({y.shape[0]},), got {norms.shape}")
    dx = _lc_out(dx, "dx", y.shape)
    _lc_outs([(dx, "dx")], [(dy, "dy"), (y, "y"), (norms, "norms")], inplace_ok=("dy",))
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


def euclidean_forward(x, r, squared=False, out=None, workspace=None):
    """Euclidean distance matrix dist[i, j] = ||x_i - r_j|| (or squared), via one SGEMM.

    x (N, D), r (M, D) float32 (``r`` may be ``x``) -> dist (N, M) float32, clamped at 0.
    See :func:`mantissa_embed._reference.euclidean_forward`.
    """
    x = _lc_in(x, "x")
    r = x if r is x else _lc_in(r, "r")
    _lc_same_cols(x, r)
    cdef int sq = _lc_flag(squared, "squared")
    N, M, D = x.shape[0], r.shape[0], x.shape[1]
    out = _lc_out(out, "out", (N, M))
    ws = _lc_workspace(workspace, N, M, False)
    _lc_outs([(out, "out"), (ws, "workspace")], [(x, "x"), (r, "r")])
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
    """Gradient of :func:`euclidean_forward` w.r.t. ``x`` and ``r`` (two SGEMM, 0 where dist == 0).

    x (N, D), r (M, D), dist, ddist (N, M) float32 -> (dx (N, D), dr (M, D)) float32.
    When ``r`` is ``x`` the total gradient is ``dx + dr``.
    See :func:`mantissa_embed._reference.euclidean_backward`.
    """
    x = _lc_in(x, "x")
    r = x if r is x else _lc_in(r, "r")
    _lc_same_cols(x, r)
    N, M, D = x.shape[0], r.shape[0], x.shape[1]
    dist = _lc_in(dist, "dist")
    ddist = _lc_in(ddist, "ddist")
    if dist.shape != (N, M):
        raise ValueError(f"dist must have shape ({N}, {M}), got {dist.shape}")
    if ddist.shape != (N, M):
        raise ValueError(f"ddist must have shape ({N}, {M}), got {ddist.shape}")
    cdef int sq = _lc_flag(squared, "squared")
    dx = _lc_out(dx, "dx", (N, D))
    dr = _lc_out(dr, "dr", (M, D))
    ws = _lc_workspace(workspace, N, M, True)
    _lc_outs([(dx, "dx"), (dr, "dr"), (ws, "workspace")],
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
    x = _lc_in(x, "x")
    r = x if r is x else _lc_in(r, "r")
    _lc_same_cols(x, r)
    N, M, D = x.shape[0], r.shape[0], x.shape[1]
    out = _lc_out(out, "out", (N, M))
    _lc_outs([(out, "out")], [(x, "x"), (r, "r")])
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
    """Gradient of :func:`dot_similarity_forward`: dx = dsim @ r, dr = dsim.T @ x.

    x (N, D), r (M, D), dsim (N, M) float32 -> (dx (N, D), dr (M, D)) float32.
    """
    x = _lc_in(x, "x")
    r = x if r is x else _lc_in(r, "r")
    _lc_same_cols(x, r)
    N, M, D = x.shape[0], r.shape[0], x.shape[1]
    dsim = _lc_in(dsim, "dsim")
    if dsim.shape != (N, M):
        raise ValueError(f"dsim must have shape ({N}, {M}), got {dsim.shape}")
    dx = _lc_out(dx, "dx", (N, D))
    dr = _lc_out(dr, "dr", (M, D))
    _lc_outs([(dx, "dx"), (dr, "dr")], [(x, "x"), (r, "r"), (dsim, "dsim")])
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


def contrastive_loss_all(dist, labels, ref_labels, pos_margin=0.0, neg_margin=1.0, exclude_self=False,
                         inverted=False, nonzero_only=True, ddist=None):
    """Contrastive loss over every pair of dist (N, M) and dL/d dist, fused (PML semantics).

    Returns (loss, ddist (N, M) float32, stats dict). See
    :func:`mantissa_embed._reference.contrastive_loss_all`.
    """
    dist, ddist, N, M, inv, nz = _lc_pair_args(dist, ddist, inverted, nonzero_only)
    labels, ref_labels = _lc_label_pair(labels, ref_labels, N, M)
    cdef int ex = _lc_self(exclude_self, N, M)
    cdef float pm = _lc_float(pos_margin, "pos_margin")
    cdef float nm = _lc_float(neg_margin, "neg_margin")
    cdef double st[6]
    cdef double loss = 0.0
    cdef int i
    for i in range(6):
        st[i] = 0.0
    cdef int ci = inv, cz = nz
    cdef int64_t n = N, m = M
    cdef const float[:, ::1] dv
    cdef float[:, ::1] gv
    cdef const int64_t[::1] lv
    cdef const int64_t[::1] rlv
    if N > 0 and M > 0:
        dv = dist
        gv = ddist
        lv = labels
        rlv = ref_labels
        with nogil:
            loss = me_contrastive_all(&dv[0, 0], &lv[0], &rlv[0], &gv[0, 0], n, m, pm, nm,
                                      ex, ci, cz, st)
    else:
        ddist[...] = 0
    return float(loss), ddist, _contrastive_stats(st)


def contrastive_loss_pairs(dist, a1, p, a2, n, pos_margin=0.0, neg_margin=1.0, inverted=False,
                           nonzero_only=True, ddist=None):
    """Contrastive loss over given pairs (a1, p) positive, (a2, n) negative, fused (PML semantics).

    Returns (loss, ddist (N, M) float32, stats dict). See
    :func:`mantissa_embed._reference.contrastive_loss_pairs`.
    """
    dist, ddist, N, M, inv, nz = _lc_pair_args(dist, ddist, inverted, nonzero_only)
    a1 = _lc_int_array(a1, "a1", upper=N)
    p = _lc_int_array(p, "p", length=a1.shape[0], upper=M)
    a2 = _lc_int_array(a2, "a2", upper=N)
    n = _lc_int_array(n, "n", length=a2.shape[0], upper=M)
    cdef float pm = _lc_float(pos_margin, "pos_margin")
    cdef float nm = _lc_float(neg_margin, "neg_margin")
    cdef double st[6]
    cdef double loss = 0.0
    cdef int i
    for i in range(6):
        st[i] = 0.0
    cdef int ci = inv, cz = nz
    cdef int64_t cn = N, cm = M, k1 = a1.shape[0], k2 = a2.shape[0]
    cdef int64_t zero = 0
    cdef const float[:, ::1] dv
    cdef float[:, ::1] gv
    cdef const int64_t[::1] a1v
    cdef const int64_t[::1] pv
    cdef const int64_t[::1] a2v
    cdef const int64_t[::1] nv
    cdef const int64_t *a1p = &zero
    cdef const int64_t *pp = &zero
    cdef const int64_t *a2p = &zero
    cdef const int64_t *np_ = &zero
    if N > 0 and M > 0:
        dv = dist
        gv = ddist
        if k1 > 0:
            a1v = a1
            pv = p
            a1p = &a1v[0]
            pp = &pv[0]
        if k2 > 0:
            a2v = a2
            nv = n
            a2p = &a2v[0]
            np_ = &nv[0]
        with nogil:
            loss = me_contrastive_pairs(&dv[0, 0], a1p, pp, k1, a2p, np_, k2, &gv[0, 0], cn, cm,
                                        pm, nm, ci, cz, st)
    else:
        ddist[...] = 0
    return float(loss), ddist, _contrastive_stats(st)


def triplet_loss_all(dist, labels, ref_labels, margin=0.05, exclude_self=False, swap=False, smooth=False,
                     inverted=False, nonzero_only=True, ddist=None):
    """Triplet margin loss over every triplet of dist (N, M) and dL/d dist, fused (PML semantics).

    Never materializes the triplets: parallel over anchors, fixed-order reduction.
    Returns (loss, ddist (N, M) float32, stats dict). See
    :func:`mantissa_embed._reference.triplet_loss_all`.
    """
    dist, ddist, N, M, inv, nz = _lc_pair_args(dist, ddist, inverted, nonzero_only)
    labels, ref_labels = _lc_label_pair(labels, ref_labels, N, M)
    cdef int ex = _lc_self(exclude_self, N, M)
    cdef int sw = _lc_swap_all(swap, labels, ref_labels)
    cdef int sm = _lc_flag(smooth, "smooth")
    cdef float mg = _lc_float(margin, "margin")
    cdef double st[3]
    st[0] = 0.0
    st[1] = 0.0
    st[2] = 0.0
    cdef double loss = 0.0
    cdef int ci = inv, cz = nz
    cdef int64_t n = N, m = M
    cdef const float[:, ::1] dv
    cdef float[:, ::1] gv
    cdef const int64_t[::1] lv
    cdef const int64_t[::1] rlv
    if N > 0 and M > 0:
        dv = dist
        gv = ddist
        lv = labels
        rlv = ref_labels
        with nogil:
            loss = me_triplet_all(&dv[0, 0], &lv[0], &rlv[0], &gv[0, 0], n, m, mg, ex, sw, sm,
                                  ci, cz, st)
    else:
        ddist[...] = 0
    return float(loss), ddist, _triplet_stats(st)


def triplet_loss_triplets(dist, a, p, n, margin=0.05, swap=False, smooth=False, inverted=False,
                          nonzero_only=True, ddist=None):
    """Triplet margin loss over given triplets (a, p, n) and dL/d dist, fused (PML semantics).

    Returns (loss, ddist (N, M) float32, stats dict). See
    :func:`mantissa_embed._reference.triplet_loss_triplets`.
    """
    dist, ddist, N, M, inv, nz = _lc_pair_args(dist, ddist, inverted, nonzero_only)
    cdef int sw = _lc_flag(swap, "swap")
    a = _lc_int_array(a, "a", upper=N)
    p = _lc_int_array(p, "p", length=a.shape[0], upper=min(N, M) if sw else M)
    n = _lc_int_array(n, "n", length=a.shape[0], upper=M)
    cdef int sm = _lc_flag(smooth, "smooth")
    cdef float mg = _lc_float(margin, "margin")
    cdef double st[3]
    st[0] = 0.0
    st[1] = 0.0
    st[2] = 0.0
    cdef double loss = 0.0
    cdef int ci = inv, cz = nz
    cdef int64_t cn = N, cm = M, k = a.shape[0]
    cdef const float[:, ::1] dv
    cdef float[:, ::1] gv
    cdef const int64_t[::1] av
    cdef const int64_t[::1] pv
    cdef const int64_t[::1] nv
    if N > 0 and M > 0 and k > 0:
        dv = dist
        gv = ddist
        av = a
        pv = p
        nv = n
        with nogil:
            loss = me_triplet_triplets(&dv[0, 0], &av[0], &pv[0], &nv[0], k, &gv[0, 0], cn, cm, mg,
                                       sw, sm, ci, cz, st)
    else:
        ddist[...] = 0
        st[1] = <double>k
    return float(loss), ddist, _triplet_stats(st)
