"""numpy twin of the engine's exact k-NN (``engine.knn_search``, ``src/engine_c/knn.c``).

Same tiling as the C kernel: for each block of ``tile_q`` queries and each tile of ``tile_r``
references, one matmul gives the ranking scores (``|r|^2 - 2 q.r`` for the Euclidean metrics,
``-q.r`` for the inner product), the ``k`` best of the tile (ordered by (score, index)) are
merged into a running top-``k``; the ``k`` selected values are then recomputed from the
vectors in float64 and each row is re-sorted by (value, index).
"""

from __future__ import annotations

import numpy as np

from .._checks.knn import CODE_DTYPES, KNN_METRICS, check_code_width, check_knn_codes_search, check_knn_search

__all__ = ["knn_search", "KNN_METRICS", "knn_codes_search", "knn_codes_mode"]


def _topk_sorted(S, kk, col0):
    """Row-wise kk smallest of S (bq, br), ordered by (value, column). Returns (vals, global idx)."""
    bq, br = S.shape
    if kk >= br:
        idx = np.argsort(S, axis=1, kind="stable")[:, :kk]
    elif 16 * kk <= br:
        # Threshold = the kk-th smallest of g >= kk group minima: an upper bound of the row's
        # kk-th smallest value, so every row keeps >= kk candidates (usually few more).
        g = min(br, max(4 * kk, 32))
        gmin = np.minimum.reduceat(S, (np.arange(g) * br) // g, axis=1)
        th = np.partition(gmin, kk - 1, axis=1)[:, kk - 1 : kk]
        flat = np.flatnonzero(S <= th)  # row-major: rows, then columns ascending
        rows, cols = np.divmod(flat, br)
        vals = S.reshape(-1)[flat]
        order = np.lexsort((cols, vals, rows))  # by row, then value, then column
        first = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=bq))[:-1]))
        sel = order[first[:, None] + np.arange(kk)]
        return vals[sel], cols[sel].astype(np.int64) + col0
    else:
        part = np.argpartition(S, kk - 1, axis=1)[:, :kk]
        part.sort(axis=1)  # column order, so the stable value sort breaks ties by index
        pv = np.take_along_axis(S, part, axis=1)
        idx = np.take_along_axis(part, np.argsort(pv, axis=1, kind="stable"), axis=1)
        # argpartition may have kept a higher column among values equal to the k-th one.
        kth = np.take_along_axis(S, idx[:, -1:], axis=1)
        n_le = np.count_nonzero(S <= kth, axis=1)
        for r in np.flatnonzero(n_le > kk):
            cand = np.flatnonzero(S[r] <= kth[r, 0])
            idx[r] = cand[np.argsort(S[r, cand], kind="stable")[:kk]]
    vals = np.take_along_axis(S, idx, axis=1)
    return vals, idx.astype(np.int64) + col0


def knn_search(
    query,
    reference,
    k,
    metric: str = "sqeuclidean",
    exclude_self: bool = False,
    tile_q=256,
    tile_r=2048,
    indices=None,
    distances=None,
):
    """Exact k nearest neighbours of the query rows among the reference rows (numpy twin).

    Parameters
    ----------
    query : float32 array, shape (n, D)
    reference : float32 array, shape (M, D)
    k : int, 1 <= k <= M (M - 1 with ``exclude_self``)
    metric : {"sqeuclidean", "euclidean", "inner_product"}, default "sqeuclidean"
        The inner product ranks the largest first.
    exclude_self : bool, default False
        Reference row ``i`` is never returned for query row ``i`` (requires n <= M).
    tile_q, tile_r : int >= 1, ``tile_q * tile_r <= 2**24`` (else ValueError)
        Query rows and reference rows of one score block (scratch: ``tile_q * tile_r`` floats
        per thread on the engine, plus M floats of norms).
    indices : int64 array (n, k), optional — written in place when given.
    distances : float32 array (n, k), optional — written in place when given.

    Returns
    -------
    (indices, distances): int64 (n, k) reference rows, nearest first, ties by lower index;
    float32 (n, k) values recomputed from the vectors in float64 (no cancellation), the row
    sorted by (value, index) (inner product: largest first).

    Raises
    ------
    ValueError  wrong ndim, mismatched D, D == 0, k too large, bad tile, unknown metric,
                bad output shape. ``TypeError`` non-int k/tile, non-bool exclude_self,
                wrong output dtype.
    """
    q, r, k, exclude_self, tile_q, tile_r, indices, distances = check_knn_search(
        query, reference, k, metric, exclude_self, tile_q, tile_r, indices, distances
    )
    n, M = q.shape[0], r.shape[0]
    if n == 0:
        return indices, distances
    euclid = metric != "inner_product"
    if euclid:
        rn = np.einsum("ij,ij->i", r, r)
    for q0 in range(0, n, tile_q):
        q1 = min(n, q0 + tile_q)
        best_v = best_i = None
        for r0 in range(0, M, tile_r):
            r1 = min(M, r0 + tile_r)
            if euclid:
                S = rn[None, r0:r1] + np.float32(-2.0) * (q[q0:q1] @ r[r0:r1].T)
            else:
                S = -(q[q0:q1] @ r[r0:r1].T)
            S = np.ascontiguousarray(S, dtype=np.float32)
            if exclude_self:
                lo, hi = max(q0, r0), min(q1, r1)
                if lo < hi:
                    d = np.arange(lo, hi)
                    S[d - q0, d - r0] = np.inf
            vals, idx = _topk_sorted(S, min(k, r1 - r0), r0)
            if best_v is None:
                best_v, best_i = vals, idx
            else:
                # earlier tiles hold lower indices, so a stable sort keeps ties by index
                cv = np.concatenate([best_v, vals], axis=1)
                ci = np.concatenate([best_i, idx], axis=1)
                order = np.argsort(cv, axis=1, kind="stable")[:, :k]
                best_v = np.take_along_axis(cv, order, axis=1)
                best_i = np.take_along_axis(ci, order, axis=1)
        # exact values of the selected neighbours (in row chunks bounding the float64 copy),
        # then re-sort by (value, index)
        assert best_v is not None and best_i is not None  # k >= 1 reference rows were scanned
        step = max(1, (1 << 21) // max(1, k * q.shape[1]))
        for s0 in range(0, q1 - q0, step):
            s1 = min(q1 - q0, s0 + step)
            bi = best_i[s0:s1]
            Q = q[q0 + s0 : q0 + s1].astype(np.float64)[:, None, :]
            R = r[bi].astype(np.float64)
            if euclid:
                R -= Q
                ex = np.einsum("bkd,bkd->bk", R, R)
                if metric == "euclidean":
                    ex = np.sqrt(ex)
                ex = ex.astype(np.float32)
                key = ex
            else:
                ex = np.einsum("bkd,bd->bk", R, Q[:, 0, :]).astype(np.float32)
                key = -ex
            order = np.lexsort((bi, key), axis=-1)
            indices[q0 + s0 : q0 + s1] = np.take_along_axis(bi, order, axis=1)
            distances[q0 + s0 : q0 + s1] = np.take_along_axis(ex, order, axis=1)
    return indices, distances


def knn_codes_mode(dtype, D):
    """``"f32"``: the twin's default ranking arithmetic for every dtype (the engine's depends on
    the CPU, see ``mantissa_embed.engine.knn_codes_mode``). ValueError for an unknown dtype or
    ``D < 1``, TypeError for a non-integer ``D``."""
    if dtype not in CODE_DTYPES:
        raise ValueError(f"dtype must be one of {tuple(CODE_DTYPES)}, got {dtype!r}")
    check_code_width(D)
    return "f32"


def _decode_codes(c, s, dtype):
    """codes (M, D) -> the float32 rows they stand for."""
    if dtype == "float32":
        return c
    if dtype == "float16":
        return c.view(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        return (c.astype(np.uint32) << 16).view(np.float32)
    return c.astype(np.float32) * s[:, None]


def _bf16_round(x):
    """float32 -> the bfloat16 values (nearest even), as float32."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)


def _daz(x):
    """vdpbf16ps reads subnormal inputs as zero."""
    return np.where(np.abs(x) < np.finfo(np.float32).tiny, np.float32(0.0), x).astype(np.float32)


def knn_codes_search(
    query, codes, scales, k, dtype, metric="sqeuclidean", mode=None, tile_r=0, indices=None, distances=None
):
    """k nearest stored rows over codes (numpy twin of ``src/engine_c/knn_codes*.c``).

    Parameters
    ----------
    query : float32 (n, D); unit rows for ``"cosine"``
    codes : (M, D): float32, uint16 bits of float16 (or float16) or bfloat16, or int8
    scales : float32 (M,) for int8 (row = code * scale), else None
    k : int, 1 <= k <= M
    dtype : {"float32", "float16", "bfloat16", "int8"}
    metric : {"sqeuclidean", "euclidean", "inner_product", "cosine"}, default "sqeuclidean"
    mode : {"f32", "bf16dot", "u8dot", "u7dot"} or None (``"f32"``)
        Arithmetic of the ranking scores: ``"f32"`` float32 products of the query and the decoded
        rows; ``"bf16dot"`` (bfloat16 or float16 codes) the query and the rows rounded to
        bfloat16 (nearest even; subnormals count as zero in the products);
        ``"u8dot"`` / ``"u7dot"`` (int8 codes) the query quantized per row to
        ``rint(q / sq)`` with ``sq = max|q| / 127`` (63), the integer dot exact, times
        ``sq * scale`` in float32.
    tile_r : int in [0, 65536]; the engine's tile (ignored by the twin).
    indices, distances : optional int64 / float32 (n, k) outputs, written in place.

    Returns
    -------
    (indices, distances): the k best rows by (score, index), score ``|r|^2 - 2 q.r``
    (Euclidean), ``-q.r`` (inner product) or ``-q.r/|r|`` (cosine) over the decoded rows r; their
    values recomputed in float64 (squared distance, distance, inner product, or ``1 - q.r/|r|``
    clipped to [0, 2], 1 for a zero row), cast to float32, each row sorted by (value, index)
    (inner product largest first).

    Raises
    ------
    ValueError  unknown dtype / metric / mode, a mode the dtype has no use for, mismatched D,
                D == 0, k out of range, scales missing or of the wrong length, bad output shape.
    TypeError   codes of the wrong dtype, non-int k / tile_r, wrong output dtype.
    """
    mode = "f32" if mode is None else mode
    q, c, s, k, _, indices, distances = check_knn_codes_search(
        query, codes, scales, k, dtype, metric, mode, tile_r, indices, distances
    )
    n, D = q.shape
    if n == 0:
        return indices, distances
    R = _decode_codes(c, s, dtype)
    Rr = _bf16_round(R) if mode == "bf16dot" else R  # the rows the scores see
    rn = np.zeros(R.shape[0], np.float32)
    for d in range(D):  # float32, in the engine's order
        rn += Rr[:, d] * Rr[:, d]
    if mode in ("u8dot", "u7dot"):
        lim = np.float32(127.0 if mode == "u8dot" else 63.0)
        qs = (np.abs(q).max(axis=1) / lim).astype(np.float32)
        safe = np.where(qs > 0, qs, np.float32(1.0))
        qc = np.clip(np.rint(q / safe[:, None]), -lim, lim)
        qc[qs == 0] = 0
        idot = qc.astype(np.int64) @ c.astype(np.int64).T
        dot = (qs[:, None] * s[None, :]) * idot.astype(np.float32)
    else:
        qq, rr = (_daz(_bf16_round(q)), _daz(Rr)) if mode == "bf16dot" else (q, R)
        dot = (qq.astype(np.float64) @ rr.astype(np.float64).T).astype(np.float32)
    if metric == "inner_product":
        score = -dot
    elif metric == "cosine":
        rinv = (np.float32(1.0) / np.sqrt(np.where(rn > 0, rn, np.float32(1.0)))).astype(np.float32)
        rinv[rn == 0] = 0
        score = -(dot * rinv[None, :])
    else:
        score = rn[None, :] - np.float32(2.0) * dot
    cand = np.argsort(score, axis=1, kind="stable")[:, :k]  # ties: lower index first
    Q = q.astype(np.float64)[:, None, :]
    C = R[cand].astype(np.float64)
    if metric in ("sqeuclidean", "euclidean"):
        ex = ((C - Q) ** 2).sum(-1)
        ex = np.sqrt(ex) if metric == "euclidean" else ex
        key = ex.astype(np.float32)
    else:
        ip = (C * Q).sum(-1)
        if metric == "inner_product":
            key = -ip.astype(np.float32)
        else:
            nrm = np.sqrt((C * C).sum(-1))
            key = np.clip(np.where(nrm > 0, 1.0 - ip / np.where(nrm > 0, nrm, 1.0), 1.0), 0.0, 2.0)
            key = key.astype(np.float32)
    order = np.lexsort((cand, key), axis=-1)
    indices[...] = np.take_along_axis(cand, order, axis=1)
    val = np.take_along_axis(key, order, axis=1)
    distances[...] = -val if metric == "inner_product" else val
    return indices, distances
