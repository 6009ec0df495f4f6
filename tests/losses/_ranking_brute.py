"""float64 brute-force versions of the ranking losses, written from the papers / PML's documented
formulas (independent of mantissa_embed). Each returns ``(value, kink)`` where ``kink`` is the
distance of the input to the nearest point where the loss is not differentiable (or jumps)."""

import numpy as np


def nrm(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def euclid(q, r):
    return np.sqrt(np.maximum(np.sum((q[:, None, :] - r[None, :, :]) ** 2, axis=2), 0.0))


def cos(q, r):
    return nrm(q) @ nrm(r).T


def fast_ap(x, y, num_bins=10, power=2, w=None):
    n = len(x)
    d = euclid(nrm(x), nrm(x)) ** power
    hmax = 2.0**power
    delta = hmax / num_bins
    centres = np.linspace(0, hmax, num_bins + 1)
    kink = np.inf
    losses, idx = [], []
    for i in range(n):
        pos = [j for j in range(n) if j != i and y[j] == y[i]]
        neg = [j for j in range(n) if y[j] != y[i]]
        if not pos:
            continue
        others = pos + neg
        kink = min(kink, np.min(np.abs(d[i, others][:, None] - centres[None, :])))
        hp = np.array([sum(max(0.0, 1 - abs(d[i, j] - c) / delta) for j in pos) for c in centres])
        hn = np.array([sum(max(0.0, 1 - abs(d[i, j] - c) / delta) for j in neg) for c in centres])
        Hp, H = np.cumsum(hp), np.cumsum(hp + hn)
        ap = sum(hp[b] * Hp[b] / H[b] for b in range(len(centres)) if hp[b] * Hp[b] > 0 and H[b] > 0)
        losses.append((1 - ap / len(pos)) * (1.0 if w is None else w[i]))
        idx.append(i)
    if not losses:
        return 0.0, kink
    return float(np.mean(losses)), kink


def histogram(x, y, n_bins=10):
    n = len(x)
    s = cos(x, x)
    delta = 2.0 / n_bins
    has = lambda i, same: any((y[j] == y[i]) == same and j != i for j in range(n))  # noqa: E731
    anchors = [i for i in range(n) if has(i, True) and has(i, False)]
    if not anchors:
        return 0.0, np.inf
    P, Q = set(), set()
    for a in anchors:
        for j in range(n):
            if j != a and y[j] == y[a]:
                P.add((min(a, j), max(a, j)))
            elif y[j] != y[a]:
                Q.add((min(a, j), max(a, j)))
    nodes = -1 + delta * np.arange(n_bins + 1)

    def hist(vals):
        h = np.zeros(n_bins + 1)
        for v in vals:
            r = min(int(np.floor((v + 1) / delta)), n_bins - 1)
            h[r] += (nodes[r + 1] - v) / delta
            h[r + 1] += (v - nodes[r]) / delta
        return h / len(vals)

    pv = [s[i, j] for i, j in sorted(P)]
    qv = [s[i, j] for i, j in sorted(Q)]
    allv = np.array(pv + qv)
    kink = np.min(np.abs(allv[:, None] - nodes[None, 1:-1])) if n_bins > 1 else np.inf
    return float(np.sum(hist(qv) * np.cumsum(hist(pv)))), kink


def ranked_list(x, y, margin, Tn, imbalance=0.5, alpha=None, Tp=0.0):
    alpha = 1 + margin / 2 if alpha is None else alpha
    n = len(x)
    d = euclid(nrm(x), nrm(x))
    out, kink = [], np.inf
    for i in range(n):
        sp = [
            (np.exp(Tp * (d[i, j] - alpha + margin)), d[i, j] - alpha + margin)
            for j in range(n)
            if j != i and y[j] == y[i] and d[i, j] > alpha - margin
        ]
        sn = [
            (np.exp(Tn * (alpha - d[i, j])), alpha - d[i, j])
            for j in range(n)
            if y[j] != y[i] and 0 < d[i, j] < alpha
        ]
        for j in range(n):
            if j != i:
                kink = min(
                    kink,
                    abs(d[i, j] - alpha + margin) if y[j] == y[i] else min(abs(d[i, j] - alpha), d[i, j]),
                )
        lp = sum(w * v for w, v in sp) / (sum(w for w, _ in sp) + n * 1e-5)
        ln = sum(w * v for w, v in sn) / (sum(w for w, _ in sn) + n * 1e-5)
        out.append((1 - imbalance) * lp + imbalance * ln)
    return (float(np.mean(out)) if out else 0.0), kink


def pnp(x, y, b=2.0, alpha=1.0, anneal=0.01, variant="O"):
    n = len(x)
    s = cos(x, x)
    rows = []
    for i in range(n):
        P = [j for j in range(n) if y[j] == y[i]]
        if len(P) < 2:
            continue
        Nn = [k for k in range(n) if y[k] != y[i]]
        vals = []
        for j in P:
            z = np.array([s[i, k] - s[i, j] for k in Nn]) / anneal
            R = float(np.sum(1 / (1 + np.exp(np.clip(-z, -50, 50))))) if Nn else 0.0
            vals.append(
                {
                    "O": R,
                    "Ds": np.log1p(R),
                    "Dq": (1 + R) ** -alpha,
                    "Iu": (1 + R) * np.log1p(R),
                    "Ib": (b * R - np.log1p(b * R)) / b**2,
                }[variant]
            )
        rows.append(np.mean(vals))
    if not rows:
        return 0.0, np.inf
    v = float(np.mean(rows))
    return (1 - v if variant == "Dq" else v), np.inf


def tcm(x, y, ref=None, ry=None, lambda_plus=1.0, lambda_minus=1.0, margin_plus=0.9, margin_minus=0.5):
    r, rl = (x, y) if ref is None else (ref, ry)
    s = cos(x, r)
    ps, ns = [], []
    for i in range(len(x)):
        for j in range(len(r)):
            if ref is None and i == j:
                continue
            (ps if y[i] == rl[j] else ns).append(s[i, j])
    ps, ns = np.array(ps), np.array(ns)
    kink = np.min(np.abs(np.concatenate([ps - margin_plus, ns - margin_minus])), initial=np.inf)
    lp = np.mean(margin_plus - ps[ps <= margin_plus]) if np.any(ps <= margin_plus) else 0.0
    ln = np.mean(ns[ns >= margin_minus] - margin_minus) if np.any(ns >= margin_minus) else 0.0
    return float(lambda_plus * lp + lambda_minus * ln), kink


def dsm_first_call(x, y, ref=None, ry=None, min_val=-2.0, num_bins=10):
    """DynamicSoftMarginLoss on a fresh loss object (momentum 1)."""
    r = x if ref is None else ref
    d = euclid(nrm(x), nrm(r))
    if y is None:
        R, C = d.shape
        if R == 0 or C == 0:
            return 0.0, np.inf
        L = max(R, C)
        dm = d.copy()
        k = min(R, C)
        dm[np.arange(k), np.arange(k)] = np.inf
        dp = np.zeros(L)
        dp[:k] = np.diag(d)[:k]
        ma, mp = np.zeros(L), np.zeros(L)
        ma[:C] = dm.min(axis=0)
        mp[:R] = dm.min(axis=1)
        xs = dp - np.minimum(ma, mp)
        xs = xs[np.isfinite(xs)]
    else:
        rl = y if ref is None else ry
        xs = []
        for a in range(len(x)):
            for p in range(len(r)):
                if (ref is None and p == a) or rl[p] != y[a]:
                    continue
                for n in range(len(r)):
                    if rl[n] != y[a]:
                        xs.append(d[a, p] - d[a, n])
        xs = np.array(xs)
    if len(xs) == 0:
        return 0.0, np.inf
    delta = 2 * abs(min_val) / num_bins
    t = (xs - min_val) / delta
    kink = np.min(np.abs(t - np.round(t))) * delta
    h = np.zeros(num_bins + 1)
    for tv in t:
        ri = int(np.floor(tv))
        h[ri] += 1 - (tv - ri)
        h[ri + 1] += tv - ri
    h = h[:num_bins] / h[:num_bins].sum()
    cdf = np.cumsum(h)
    ri = np.clip(np.floor(t).astype(int), 0, num_bins - 1)
    return float(np.mean(cdf[ri] * xs)), kink


def manifold(x, proxies, mc, lambdaC=1.0, alpha=0.8, margin=5e-4):
    """ManifoldLoss from the paper's random-walk formulation (PML's constants)."""
    N, K = len(x), len(proxies)
    E = np.concatenate([x, proxies])
    s = cos(E, E)
    S = np.exp(np.maximum(s, 0) / 0.5)
    np.fill_diagonal(S, 0)
    Dh = np.diag(S.sum(axis=1) ** -0.5)
    F = (1 - alpha) * np.linalg.inv(np.eye(N + K) - alpha * Dh @ S @ Dh)

    def part(M):
        tot, kink = 0.0, np.inf
        for i in range(N):
            v = M[i] - M[i, mc[i]] + margin
            others = [j for j in range(K) if j != mc[i]]
            if others:
                kink = min(kink, np.min(np.abs(v[others])))
            tot += np.log1p(sum(np.exp(v[j]) for j in others if v[j] >= 0))
        return tot / N, kink

    li, k1 = part(F[:N, N:])
    C = np.array(
        [
            [F[i] @ F[N + j] / np.linalg.norm(F[i]) / np.linalg.norm(F[N + j]) for j in range(K)]
            for i in range(N)
        ]
    )
    lc, k2 = part(C)
    kink = min(k1, k2, np.min(np.abs(s[~np.eye(N + K, dtype=bool)]), initial=np.inf))
    return (li + lambdaC * lc if np.isfinite(lambdaC) else lc), kink
