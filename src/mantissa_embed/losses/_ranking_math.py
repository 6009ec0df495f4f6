"""float64 forward values and explicit backwards of the FastAP, Histogram, RankedList and
DynamicSoftMargin losses over a distance or similarity matrix."""

from __future__ import annotations

import numpy as np


def fast_ap_forward(mat, pos, neg, num_bins, histogram_max):
    """FastAP per row: ``(fastap (N,) float64, cache)`` for distances ``mat`` (N, N) and bool masks
    ``pos``, ``neg`` (N, N); bins centred on ``linspace(0, histogram_max, num_bins + 1)``.
    """
    d = np.asarray(mat, dtype=np.float64)
    N = d.shape[0]
    B = num_bins + 1
    delta = histogram_max / num_bins
    mids = np.linspace(0.0, histogram_max, B)
    lo = np.clip(np.floor(d / delta), 0, B - 2).astype(np.intp)
    w_lo = np.maximum(1.0 - np.abs(d - mids[lo]) / delta, 0.0)
    w_hi = np.maximum(1.0 - np.abs(d - mids[lo + 1]) / delta, 0.0)
    flat = lo + (np.arange(N) * B)[:, None]  # (row, bin) of the lower centre
    posf, negf = pos.astype(np.float64), neg.astype(np.float64)

    def hist(m):
        h = np.bincount(flat.ravel(), (w_lo * m).ravel(), minlength=N * B)
        h[1:] += np.bincount(flat.ravel(), (w_hi * m).ravel(), minlength=N * B)[:-1]
        return h.reshape(N, B)

    P = hist(posf)
    Ng = hist(negf)
    C = np.cumsum(P, axis=1)
    T = np.cumsum(P + Ng, axis=1)
    hp = P * C
    safe = (hp > 0) & (T > 0)
    Ts = np.where(safe, T, 1.0)
    h = np.where(safe, hp / Ts, 0.0)
    npos = pos.sum(axis=1)
    fa = np.where(npos > 0, h.sum(axis=1) / np.maximum(npos, 1), 0.0)
    cache = (d, posf, negf, mids, delta, P, C, Ts, safe, npos, lo, flat, w_lo, w_hi)
    return fa, cache


def fast_ap_backward(dfa, cache):
    """dL/d mat (N, N) float64 given ``dfa = dL / d fastap`` (N,)."""
    d, posf, negf, mids, delta, P, C, Ts, safe, npos, lo, flat, w_lo, w_hi = cache
    dh = np.where(safe, (np.asarray(dfa, dtype=np.float64) / np.maximum(npos, 1))[:, None], 0.0)
    dP = dh * C / Ts
    dC = dh * P / Ts
    dT = -dh * P * C / (Ts * Ts)

    def rcum(a):
        return np.cumsum(a[:, ::-1], axis=1)[:, ::-1]

    rT = rcum(dT)
    dP = (dP + rcum(dC) + rT).ravel()
    dNg = rT.ravel()
    # the slope of each of the two pulses, -sign(d - mid) / delta where the pulse is positive
    s_lo = np.where(w_lo > 0, -np.sign(d - mids[lo]) / delta, 0.0)
    s_hi = np.where(w_hi > 0, -np.sign(d - mids[lo + 1]) / delta, 0.0)
    dmat = s_lo * (dP[flat] * posf + dNg[flat] * negf)
    dmat += s_hi * (dP[flat + 1] * posf + dNg[flat + 1] * negf)
    return dmat


def histogram_density(x, delta, n_nodes):
    """Soft histogram of the values ``x`` (in [-1, 1]) on ``n_nodes`` nodes spaced ``delta`` from -1
    (Ustinova & Lempitsky 2016). Returns ``(density (n_nodes,), r (len(x),) int)``; a value on the
    last node (x = 1) goes to the last bin."""
    x = np.asarray(x, dtype=np.float64)
    r = np.floor((x + 1.0) / delta).astype(np.int64)
    r = np.clip(r, 0, n_nodes - 2)
    a = (x + 1.0 - r * delta) / delta
    b = ((r + 1) * delta - 1.0 - x) / delta
    # every a, then every b, in input order: the sums of two sequential scatter-adds, bit for bit
    dens = np.bincount(np.concatenate([r + 1, r]), np.concatenate([a, b]), minlength=n_nodes)
    return dens / max(len(x), 1), r


def histogram_loss_forward_backward(pos_vals, neg_vals, delta, n_nodes):
    """Histogram loss ``sum_r p_neg[r] * cumsum(p_pos)[r]`` and its gradients w.r.t. the positive
    and the negative similarities. Returns ``(loss, dpos (P,), dneg (Q,))``."""
    p_pos, rp = histogram_density(pos_vals, delta, n_nodes)
    p_neg, rn = histogram_density(neg_vals, delta, n_nodes)
    phi = np.cumsum(p_pos)
    loss = float(np.sum(p_neg * phi))
    g_neg = phi  # dL / d p_neg
    g_pos = np.cumsum(p_neg[::-1])[::-1]  # dL / d p_pos
    dpos = (g_pos[rp + 1] - g_pos[rp]) / (delta * max(len(pos_vals), 1))
    dneg = (g_neg[rn + 1] - g_neg[rn]) / (delta * max(len(neg_vals), 1))
    return loss, dpos, dneg


def ranked_list_forward(mat, labels, margin, alpha, Tp, Tn, imbalance):
    """Ranked List loss per anchor: ``(losses (N,) float64, cache)`` for ``mat`` (N, N)."""
    d = np.asarray(mat)
    N = d.shape[0]
    lab = np.asarray(labels)
    y = lab[:, None] == lab[None, :]
    c = alpha - margin
    pmask = y & (d > max(c, 0.0))
    np.fill_diagonal(pmask, False)
    pi, pj = np.nonzero(pmask)
    ni, nj = np.nonzero(~y & (d < alpha) & (d > 0))
    dp = d[pi, pj].astype(np.float64)
    dn = d[ni, nj].astype(np.float64)
    wp = np.exp(Tp * (dp - c))
    wn = np.exp(Tn * (alpha - dn))
    Sp = np.bincount(pi, wp, minlength=N) + N * 1e-5
    Sn = np.bincount(ni, wn, minlength=N) + N * 1e-5
    lp = np.bincount(pi, wp * (dp - c), minlength=N) / Sp
    ln = np.bincount(ni, wn * (alpha - dn), minlength=N) / Sn
    losses = (1.0 - imbalance) * lp + imbalance * ln
    return losses, (N, pi, pj, dp, wp, ni, nj, dn, wn, Sp, Sn, lp, ln, c, alpha, Tp, Tn, imbalance)


def ranked_list_backward(dlosses, cache):
    """dL/d mat (N, N) float64 given ``dlosses`` (N,)."""
    N, pi, pj, dp, wp, ni, nj, dn, wn, Sp, Sn, lp, ln, c, alpha, Tp, Tn, imbalance = cache
    g = np.asarray(dlosses, dtype=np.float64)
    gp = (g * (1.0 - imbalance))[pi]
    gn = (g * imbalance)[ni]
    # d(tp)/dP = Tp wp (P - c) + wp ; d(Sp)/dP = Tp wp
    dmat = np.zeros((N, N))
    dmat[pi, pj] = gp * ((Tp * wp * (dp - c) + wp) / Sp[pi] - lp[pi] * Tp * wp / Sp[pi])
    dmat[ni, nj] = gn * ((-Tn * wn * (alpha - dn) - wn) / Sn[ni] + ln[ni] * Tn * wn / Sn[ni])
    return dmat


def dsm_add_soft_counts(u, x, min_val, delta, momentum) -> None:
    """Add to ``u`` (nb,) in place the linear-interpolation histogram of ``x``: with ``t = (x -
    min_val) / delta``, ``r = floor(t)``, ``f = t - r``, ``momentum (1 - f)`` to bin r and
    ``momentum f`` to bin r + 1; bins outside [0, nb) dropped.
    """
    nb = u.shape[0]
    t = ((x - min_val) / delta).ravel()
    fl = np.floor(t)
    f = t - fl
    r = fl.astype(np.int64)
    ok0 = (r >= 0) & (r < nb)
    ok1 = (r + 1 >= 0) & (r + 1 < nb)
    u += np.bincount(r[ok0], weights=momentum * (1.0 - f[ok0]), minlength=nb)[:nb]
    u += np.bincount(r[ok1] + 1, weights=momentum * f[ok1], minlength=nb)[:nb]
