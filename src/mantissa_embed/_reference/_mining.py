"""Numpy twins of the miner kernels (``mantissa_embed._engine._mining``): TripletMarginMiner
and AngularMiner selection.

Same names, signatures, checks (``mantissa_embed._checks.mining``) and errors as the engine.
"""

from __future__ import annotations

import numpy as np

from .._checks.mining import check_angular_mine_args, check_triplet_mine_args

__all__ = ["triplet_margin_mine", "angular_mine"]

_TILE = 1 << 22  # elements of one (positive pairs x M) tile
_CHUNK = 1 << 15  # triplets per chunk of the angle computation
_ANG_EPS = 1e-6  # torch.nn.functional.pairwise_distance's eps


def _empty3():
    return tuple(np.zeros(0, dtype=np.int64) for _ in range(3))


def _pos_neg(labels, ref_labels, exclude_self):
    matches = labels[:, None] == ref_labels[None, :]
    diffs = ~matches
    if exclude_self:
        np.fill_diagonal(matches, False)
    a1, p = np.nonzero(matches)
    return a1.astype(np.int64), p.astype(np.int64), diffs


def _enumerate(a1, p, diffs, keep):
    """(a, p, n) for every positive pair (a1[k], p[k]) and negative n of a1[k] with keep(ks, n)."""
    M = diffs.shape[1]
    if len(a1) == 0 or M == 0:
        return _empty3()
    B = max(1, _TILE // M)
    A, P, Nn = [], [], []
    for s in range(0, len(a1), B):
        ks = np.arange(s, min(s + B, len(a1)))
        cond = diffs[a1[ks]] & keep(ks)
        rows, n = np.nonzero(cond)
        A.append(a1[ks][rows])
        P.append(p[ks][rows])
        Nn.append(n.astype(np.int64))
    return tuple(np.concatenate(x).astype(np.int64) for x in (A, P, Nn))


def triplet_margin_mine(mat, labels, ref_labels, exclude_self, type_of_triplets, margin, is_inverted):
    """Triplets of TripletMarginMiner selected on a distance / similarity matrix.

    mat (N, M) float32; labels (N,), ref_labels (M,) integer. Positives of anchor ``a``:
    ``ref_labels[p] == labels[a]`` (``p != a`` when ``exclude_self``, which needs N == M);
    negatives: ``ref_labels[n] != labels[a]``. With ``tm = mat[a, n] - mat[a, p]``
    (``mat[a, p] - mat[a, n]`` when ``is_inverted``), in float32, ``type_of_triplets`` keeps
    ``"all"``: ``tm <= margin``; ``"hard"``: ``tm <= margin`` and ``tm <= 0``; ``"semihard"``:
    ``0 < tm <= margin``; ``"easy"``: ``tm > margin``; ``"every"``: every triplet.

    Returns ``(a, p, n)`` int64 sorted by (a, p, n) (PML's ``torch.where`` order).
    Raises ValueError / TypeError on bad shapes, dtypes, kind or a non-finite margin.
    """
    mat, labels, ref_labels, N, M, exclude_self, kind, margin, inverted = check_triplet_mine_args(
        mat, labels, ref_labels, exclude_self, type_of_triplets, margin, is_inverted
    )
    if N == 0 or M == 0:
        return _empty3()
    a1, p, diffs = _pos_neg(labels, ref_labels, exclude_self)
    m32 = np.float32(margin)

    def keep(ks):
        ap = mat[a1[ks], p[ks]][:, None]
        an = mat[a1[ks]]
        tm = (ap - an) if inverted else (an - ap)
        if kind == 0:
            return np.ones(tm.shape, dtype=bool)
        if kind == 4:
            return tm > m32
        cond = tm <= m32
        if kind == 2:
            cond &= tm <= 0
        elif kind == 3:
            cond &= tm > 0
        return cond

    return _enumerate(a1, p, diffs, keep)


def angular_mine(x, r, labels, ref_labels, exclude_self, angle):
    """Triplets of AngularMiner: ``angle(a, p, n) > angle`` (radians).

    x (N, D), r (M, D) float32 (the embeddings as given, not normalized); labels and the
    positive / negative rule as ``triplet_margin_mine``. In float64, with ``e = 1e-6``::

        angle(a, p, n) = arctan(||x_a - r_p + e|| / (2 ||r_n - (x_a + r_p) / 2 + e||))

    Returns ``(a, p, n, stats)``: int64 triplets sorted by (a, p, n), and ``stats`` float64
    ``[number of triplets, number of non-NaN angles, sum, min, max]`` of the angles of ALL
    triplets in degrees (``[T, 0, 0, inf, -inf]`` when none is finite).
    """
    x, r, labels, ref_labels, N, M, D, exclude_self, angle = check_angular_mine_args(
        x, r, labels, ref_labels, exclude_self, angle
    )
    stats = np.array([0.0, 0.0, 0.0, np.inf, -np.inf])
    if N == 0 or M == 0:
        return (*_empty3(), stats)
    a, p, n = triplet_margin_mine(
        np.zeros((N, M), np.float32), labels, ref_labels, exclude_self, "every", 0.0, False
    )
    keep = np.zeros(len(a), dtype=bool)
    deg = np.empty(len(a))
    for s in range(0, len(a), _CHUNK):
        sl = slice(s, s + _CHUNK)
        xa = x[a[sl]].astype(np.float64)
        xp = r[p[sl]].astype(np.float64)
        xn = r[n[sl]].astype(np.float64)
        ap = np.sqrt(np.sum((xa - xp + _ANG_EPS) ** 2, axis=1))
        nc = np.sqrt(np.sum((xn - (xa + xp) / 2 + _ANG_EPS) ** 2, axis=1))
        with np.errstate(divide="ignore", invalid="ignore"):
            ang = np.arctan(ap / (2 * nc))
        keep[sl] = ang > angle
        deg[sl] = np.degrees(ang)
    fin = deg[~np.isnan(deg)]
    stats[0] = len(a)
    if len(fin):
        stats[1:] = [len(fin), fin.sum(), fin.min(), fin.max()]
    return a[keep], p[keep], n[keep], stats
