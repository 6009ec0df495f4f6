"""Index's storage codes and row helpers: ``encode`` / ``decode`` of the stored dtypes, the integer
id / label vectors, and the float64 re-ranking of candidates."""

from __future__ import annotations

import numpy as np

from ._checks.distance import l2_normalize_rows

_F16_MAX = float(np.finfo(np.float16).max)
_BF16_MAX = float(np.array([0x7F7F0000], np.uint32).view(np.float32)[0])


def _encode(x, dtype):
    """float32 (n, d) -> (codes, scales or None)."""
    if dtype == "float32":
        return np.ascontiguousarray(x, dtype=np.float32), None
    if dtype == "float16":
        if x.size and _abs_max(x) > _F16_MAX:
            raise ValueError(f"embeddings exceed the float16 range (|x| <= {_F16_MAX}); use dtype='float32'")
        return x.astype(np.float16), None
    if dtype == "bfloat16":
        if x.size and _abs_max(x) > _BF16_MAX:
            raise ValueError(
                f"embeddings exceed the bfloat16 range (|x| <= {_BF16_MAX:.7g}); use dtype='float32'"
            )
        # round to nearest even in uint32: a finite float's bits are at most 0xFF7FFFFF, so adding
        # at most 0x8000 cannot wrap (no 8-byte temporaries: a million rows would need gigabytes)
        u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
        r = u >> 16
        r &= 1
        r += 0x7FFF
        r += u
        r >>= 16
        return r.astype(np.uint16), None
    s = (np.abs(x).max(axis=1) / 127.0).astype(np.float32) if x.size else np.zeros(x.shape[0], np.float32)
    safe = np.where(s > 0, s, 1.0).astype(np.float32)
    codes = np.clip(np.rint(x / safe[:, None]), -127, 127).astype(np.int8)
    return codes, s


def _abs_max(x):
    """max |x| over a non-empty array, without an |x| temporary."""
    return max(float(x.max()), -float(x.min()))


def _decode(codes, scales, dtype):
    """Stored rows -> float32 (rows, d)."""
    if dtype == "float32":
        return np.ascontiguousarray(codes, dtype=np.float32)
    if dtype == "float16":
        return codes.astype(np.float32)
    if dtype == "bfloat16":
        return (codes.astype(np.uint32) << 16).view(np.float32)
    return codes.astype(np.float32) * scales[:, None]


def _int_vector(a, name, n=None):
    if isinstance(a, (str, bytes)) or a is None:
        raise TypeError(f"{name} must be an integer array, got {type(a).__name__}")
    arr = np.asarray(a)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.dtype.kind == "f" and arr.shape == (0,):
        arr = arr.astype(np.int64)  # an empty list is an empty integer vector
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise TypeError(f"{name} must be a 1-D integer array, got dtype {arr.dtype}, shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} must have {n} entries, got {arr.shape[0]}")
    if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{name} must fit in int64")
    return arr.astype(np.int64)


def _rank_exact(Q, X, pos, metric):
    """Re-rank the candidate positions pos (nq, c) by float64 distances to the rows X."""
    q = Q.astype(np.float64)
    if metric == "cosine":
        q = l2_normalize_rows(q, eps=0.0)[0]
    C = np.asarray(X[pos.ravel()], dtype=np.float64).reshape(pos.shape + (X.shape[1],))
    if metric == "cosine":
        d = np.clip(1.0 - np.einsum("qd,qcd->qc", q, C), 0.0, 2.0)
    else:
        diff = C - q[:, None, :]
        d = np.sqrt(np.einsum("qcd,qcd->qc", diff, diff))
    order = np.lexsort((pos, d), axis=1)
    rows = np.arange(pos.shape[0])[:, None]
    return pos[rows, order], d[rows, order].astype(np.float32)
