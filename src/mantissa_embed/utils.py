"""Index-tuple helpers: pytorch-metric-learning's ``utils.loss_and_miner_utils``, in numpy.

Index tuples follow pytorch-metric-learning (PML): pairs ``(a1, p, a2, n)`` (``(a1[k], p[k])``
positive pairs, ``(a2[k], n[k])`` negative pairs) and triplets ``(a, p, n)``, each a 1-D int64
array. Anchors index the batch (``labels``); ``p`` / ``n`` index the reference set
(``ref_labels``), which is the batch itself when ``ref_labels`` is None.

Self pairs: as in PML, the pairs ``(i, i)`` are excluded exactly when the reference labels *are*
the batch labels: ``ref_labels is None`` or ``ref_labels is labels`` (the same object).

The enumeration order is PML's (row-major ``torch.where``): pairs sorted by (anchor, other),
triplets by (anchor, positive, negative). Nothing of size N x M x M is materialized except the
output itself; the triplet enumerations work in tiles of positive pairs.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ._typing import ArrayLike, IndicesTuple, Seed
from ._validation import as_generator, check_int

__all__ = [
    "check_indices_tuple",
    "get_matches_and_diffs",
    "get_all_pairs_indices",
    "convert_to_pairs",
    "pos_pairs_from_tuple",
    "neg_pairs_from_tuple",
    "get_all_triplets_indices",
    "get_random_triplet_indices",
    "convert_to_triplets",
    "convert_to_weights",
    "repeat_to_match_size",
    "matched_size_indices",
    "get_anchors",
    "meshgrid_from_sizes",
]

_TILE = 1 << 22  # elements of one (positive pairs x M) tile in the triplet enumerations
_EMPTY = np.empty(0, dtype=np.int64)


def _empty(k):
    return tuple(_EMPTY.copy() for _ in range(k))


def _as_labels(labels, name: str = "labels"):
    arr = np.asarray(labels)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must have an integer dtype, got {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    return arr


def _resolve(labels, ref_labels):
    """(labels, ref_labels, same) with PML's identity rule for self pairs."""
    same = ref_labels is None or ref_labels is labels
    lab = _as_labels(labels)
    ref = lab if same else _as_labels(ref_labels, "ref_labels")
    return lab, ref, same


def check_indices_tuple(
    indices_tuple: IndicesTuple, n, m=None, name: str = "indices_tuple"
) -> tuple[np.ndarray, ...]:
    """Validate an index tuple and return it as a tuple of 1-D int64 arrays.

    Parameters
    ----------
    indices_tuple : tuple or list of 3 or 4 array_like
        ``(a, p, n)`` triplets or ``(a1, p, a2, n)`` pairs.
    n : int
        Size of the batch (anchors ``a``, ``a1``, ``a2`` must be in ``[0, n)``).
    m : int, optional
        Size of the reference set (``p``, ``n`` in ``[0, m)``); defaults to ``n``.

    Raises
    ------
    TypeError
        Not a tuple/list, or arrays of a non-integer dtype.
    ValueError
        Wrong number of arrays, not 1-D, mismatched lengths, or an index out of range.
    """
    m = n if m is None else m
    if not isinstance(indices_tuple, (tuple, list)):
        raise TypeError(
            f"{name} must be a tuple of 3 or 4 integer arrays, got {type(indices_tuple).__name__}"
        )
    k = len(indices_tuple)
    if k not in (3, 4):
        raise ValueError(f"{name} must have 3 (a, p, n) or 4 (a1, p, a2, n) arrays, got {k}")
    names = ("a", "p", "n") if k == 3 else ("a1", "p", "a2", "n")
    uppers = (n, m, m) if k == 3 else (n, m, n, m)
    out = []
    for i, (x, nm, up) in enumerate(zip(indices_tuple, names, uppers)):
        label = f"{name}[{i}] ({nm})"
        if isinstance(x, (str, bytes)) or x is None:
            raise TypeError(f"{label} must be an integer array, got {type(x).__name__}")
        arr = np.asarray(x)
        if arr.dtype.kind not in "iu":
            if arr.size == 0:
                arr = arr.astype(np.int64)
            else:
                raise TypeError(f"{label} must have an integer dtype, got {arr.dtype}")
        if arr.ndim != 1:
            raise ValueError(f"{label} must be 1-D, got shape {arr.shape}")
        arr = np.ascontiguousarray(arr, dtype=np.int64)
        if arr.size:
            lo, hi = int(arr.min()), int(arr.max())
            if lo < 0 or hi >= up:
                raise ValueError(f"{label} must hold indices in [0, {up}), got values in [{lo}, {hi}]")
        out.append(arr)
    if k == 3 and not (len(out[0]) == len(out[1]) == len(out[2])):
        raise ValueError(
            f"{name}: a, p, n must have the same length, got {len(out[0])}, {len(out[1])}, {len(out[2])}"
        )
    if k == 4 and (len(out[0]) != len(out[1]) or len(out[2]) != len(out[3])):
        raise ValueError(
            f"{name}: a1 and p, and a2 and n, must have the same lengths, got {[len(x) for x in out]}"
        )
    return tuple(out)


def get_matches_and_diffs(
    labels: ArrayLike, ref_labels: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Boolean (N, M) matrices of same-label pairs (``matches``) and different-label pairs (``diffs``).

    ``matches[i, i]`` is False when the reference labels are the batch labels (``ref_labels`` None
    or the same object). PML returns uint8 tensors; these are bool arrays.
    """
    lab, ref, same = _resolve(labels, ref_labels)
    matches = lab[:, None] == ref[None, :]
    diffs = ~matches
    if same:
        np.fill_diagonal(matches, False)
    return matches, diffs


def get_all_pairs_indices(labels: ArrayLike, ref_labels: ArrayLike | None = None) -> tuple[np.ndarray, ...]:
    """All positive and negative pairs: ``(a1, p, a2, n)``, int64, row-major order."""
    matches, diffs = get_matches_and_diffs(labels, ref_labels)
    a1, p = np.nonzero(matches)
    a2, n = np.nonzero(diffs)
    return (a1.astype(np.int64), p.astype(np.int64), a2.astype(np.int64), n.astype(np.int64))


def convert_to_pairs(
    indices_tuple: IndicesTuple, labels: ArrayLike, ref_labels: ArrayLike | None = None
) -> IndicesTuple:
    """Pairs ``(a1, p, a2, n)`` from None (all pairs), pairs (unchanged) or triplets ``(a, p, a, n)``."""
    if indices_tuple is None:
        return get_all_pairs_indices(labels, ref_labels)
    if len(indices_tuple) == 4:
        return tuple(indices_tuple)
    a, p, n = indices_tuple
    return a, p, a, n


def pos_pairs_from_tuple(indices_tuple: IndicesTuple) -> IndicesTuple:
    """``(a1, p)`` of a pair tuple."""
    return tuple(indices_tuple[:2])


def neg_pairs_from_tuple(indices_tuple: IndicesTuple) -> IndicesTuple:
    """``(a2, n)`` of a pair tuple."""
    return tuple(indices_tuple[2:])


def _triplets_from_pos_pairs(a1, p, diffs, keep=None):
    """(a, p, n) for every positive pair (a1[k], p[k]) and every n with diffs[a1[k], n], optionally
    filtered by ``keep(k_slice, n_block) -> bool (B, M)``; tiles of positive pairs, order (k, n)."""
    M = diffs.shape[1]
    if len(a1) == 0 or M == 0:
        return _empty(3)
    B = max(1, _TILE // max(M, 1))
    A, P, Nn = [], [], []
    for s in range(0, len(a1), B):
        ac, pc = a1[s : s + B], p[s : s + B]
        cond = diffs[ac]
        if keep is not None:
            cond = cond & keep(ac, pc)
        rows, ks = np.nonzero(cond)
        A.append(ac[rows])
        P.append(pc[rows])
        Nn.append(ks.astype(np.int64))
    return (np.concatenate(A).astype(np.int64), np.concatenate(P).astype(np.int64), np.concatenate(Nn))


def get_all_triplets_indices(
    labels: ArrayLike, ref_labels: ArrayLike | None = None
) -> tuple[np.ndarray, ...]:
    """All triplets ``(a, p, n)``: labels[a] == ref_labels[p] (p != a for the batch itself),
    labels[a] != ref_labels[n]. int64, sorted by (a, p, n) as PML's ``torch.where``.

    The result has sum_a P_a * N_a entries; it is built in tiles of positive pairs, never
    through an N x M x M mask.
    """
    matches, diffs = get_matches_and_diffs(labels, ref_labels)
    a1, p = np.nonzero(matches)
    return _triplets_from_pos_pairs(a1.astype(np.int64), p.astype(np.int64), diffs)


def get_random_triplet_indices(
    labels: ArrayLike,
    ref_labels: ArrayLike | None = None,
    t_per_anchor: int | None = None,
    weights: ArrayLike | None = None,
    seed: Seed = None,
) -> tuple[np.ndarray, ...]:
    """Random triplets, ``t_per_anchor`` per anchor (PML's ``get_random_triplet_indices``).

    For each label with at least 2 members (1 when the reference set is not the batch) and at
    least one negative, every anchor of that label gets ``t_per_anchor`` triplets (default: as
    many as that label's reference members) with a uniformly drawn positive (never itself) and a
    negative drawn uniformly, or with probabilities proportional to ``weights[a, n]``
    (``weights`` (N, M); anchors whose negative weights are all 0 are dropped).

    ``seed``: int, ``numpy.random.Generator`` or None. PML draws with torch's RNG, so the
    triplets differ from PML's; their distribution is the same.
    """
    rng = as_generator(seed)
    lab, ref, same = _resolve(labels, ref_labels)
    if t_per_anchor is not None:
        t_per_anchor = check_int(t_per_anchor, "t_per_anchor", minimum=1)
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != (len(lab), len(ref)):
            raise ValueError(f"weights must have shape ({len(lab)}, {len(ref)}), got {weights.shape}")
    A, P, Nn = [], [], []
    for label in np.unique(lab):
        p_inds = np.nonzero(ref == label)[0]
        a_inds = p_inds if same else np.nonzero(lab == label)[0]
        n_inds = np.nonzero(ref != label)[0]
        n_a, n_p = len(a_inds), len(p_inds)
        if n_p < (2 if same else 1) or len(n_inds) < 1:
            continue
        k = n_p if t_per_anchor is None else t_per_anchor
        a_ = np.repeat(np.arange(n_a), k)
        if same:
            # positions among the other n_p - 1 members (skip the anchor's own slot)
            j = rng.integers(0, n_p - 1, size=n_a * k)
            j = j + (j >= a_)
        else:
            j = rng.integers(0, n_p, size=n_a * k)
        a, p = a_inds[a_], p_inds[j]
        if weights is not None:
            w = weights[np.ix_(a, n_inds)]
            tot = w.sum(axis=1)
            keep = tot > 0
            if not keep.any():
                continue
            w, a, p, tot = w[keep], a[keep], p[keep], tot[keep]
            cdf = np.cumsum(w, axis=1) / tot[:, None]
            u = rng.random(len(a))
            n_ = np.minimum((cdf <= u[:, None]).sum(axis=1), len(n_inds) - 1)
        else:
            n_ = rng.integers(0, len(n_inds), size=len(a))
        A.append(a)
        P.append(p)
        Nn.append(n_inds[n_])
    if not A:
        return _empty(3)
    return tuple(np.concatenate(x).astype(np.int64) for x in (A, P, Nn))


def convert_to_triplets(
    indices_tuple: IndicesTuple,
    labels: ArrayLike,
    ref_labels: ArrayLike | None = None,
    t_per_anchor: int = 100,
    seed: Seed = None,
) -> IndicesTuple:
    """Triplets ``(a, p, n)`` from None (all triplets when ``t_per_anchor == "all"``, else random
    ones), triplets (unchanged) or pairs: every (a1[i], p[i], n[j]) with a1[i] == a2[j], in PML's
    order (i, then j)."""
    if indices_tuple is None:
        if isinstance(t_per_anchor, str) and t_per_anchor == "all":
            return get_all_triplets_indices(labels, ref_labels)
        return get_random_triplet_indices(labels, ref_labels, t_per_anchor=t_per_anchor, seed=seed)
    if len(indices_tuple) == 3:
        return tuple(indices_tuple)
    a1, p, a2, n = (np.asarray(x, dtype=np.int64) for x in indices_tuple)
    if len(a1) == 0 or len(a2) == 0:
        return _empty(3)
    order = np.argsort(a2, kind="stable")
    sa2 = a2[order]
    lo = np.searchsorted(sa2, a1, side="left")
    hi = np.searchsorted(sa2, a1, side="right")
    cnt = hi - lo
    i = np.repeat(np.arange(len(a1)), cnt)
    starts = np.repeat(lo - np.concatenate(([0], np.cumsum(cnt)[:-1])), cnt)
    j = order[np.arange(len(i)) + starts]
    return a1[i], p[i], n[j]


def convert_to_weights(
    indices_tuple: IndicesTuple | None, labels: ArrayLike, dtype=np.float32, using_ref: bool = False
) -> np.ndarray:
    """Per-example weights from a mined tuple: how often each index of the batch occurs in
    ``indices_tuple``, divided by the largest count.

    ``labels`` (N,) only gives N. Returns (N,) ``dtype``: indices that never occur get 0; an
    **empty** tuple gives all zeros (as the seed's mining-weights contract states; PML 2.9
    returns ones there), and ``indices_tuple=None`` gives all ones (uniform). ``using_ref``:
    count the anchors only. The weighted losses use PML's rule (ones for an empty tuple) through
    ``_miner_weights``.
    """
    labels = np.asarray(labels)
    weights = np.zeros(labels.shape[0], dtype=dtype)
    if indices_tuple is None:
        return weights + 1
    if all(len(x) == 0 for x in indices_tuple):
        return weights
    return _occurrence_weights(indices_tuple, weights, dtype, using_ref)


def _miner_weights(indices_tuple, labels, dtype=np.float32, using_ref: bool = False):
    """PML's ``convert_to_weights`` as its losses use it: like ``convert_to_weights``, but
    all ones for an empty tuple as well as for None."""
    labels = np.asarray(labels)
    weights = np.zeros(labels.shape[0], dtype=dtype)
    if indices_tuple is None or all(len(x) == 0 for x in indices_tuple):
        return weights + 1
    return _occurrence_weights(indices_tuple, weights, dtype, using_ref)


def _occurrence_weights(indices_tuple, weights, dtype, using_ref):
    if using_ref:
        idx = get_anchors(indices_tuple)
    else:
        idx = np.concatenate([np.asarray(x, dtype=np.int64) for x in indices_tuple])
    u, counts = np.unique(idx, return_counts=True)
    weights[u] = (counts / counts.max()).astype(dtype)
    return weights


def repeat_to_match_size(smaller_set, larger_size, smaller_size):
    """``smaller_set`` tiled to length ``larger_size``."""
    num_repeat = math.ceil(float(larger_size) / float(smaller_size))
    return np.tile(np.asarray(smaller_set), num_repeat)[:larger_size]


def matched_size_indices(curr_p_idx, curr_n_idx):
    """The shorter of the two index arrays repeated to the length of the longer."""
    n_pos, n_neg = len(curr_p_idx), len(curr_n_idx)
    if n_pos > n_neg:
        return np.asarray(curr_p_idx), repeat_to_match_size(curr_n_idx, n_pos, n_neg)
    return repeat_to_match_size(curr_p_idx, n_neg, n_pos), np.asarray(curr_n_idx)


def get_anchors(indices_tuple: IndicesTuple):
    """The anchors of a tuple: ``a`` of triplets, ``concat(a1, a2)`` of pairs."""
    if len(indices_tuple) == 3:
        return np.asarray(indices_tuple[0], dtype=np.int64)
    if len(indices_tuple) == 4:
        return np.concatenate(
            [np.asarray(indices_tuple[0], dtype=np.int64), np.asarray(indices_tuple[2], dtype=np.int64)]
        )
    raise ValueError(f"indices_tuple must have 3 or 4 arrays, got {len(indices_tuple)}")


def meshgrid_from_sizes(x, y, dim: int = 0):
    """``np.meshgrid(arange(x.shape[dim]), arange(y.shape[dim]), indexing="ij")``."""
    a = np.arange(np.shape(x)[dim])
    b = np.arange(np.shape(y)[dim])
    return np.meshgrid(a, b, indexing="ij")


def _count_pairs(labels, ref_labels, same):
    """(number of positive pairs, number of negative pairs) without enumerating them."""
    N, M = len(labels), len(ref_labels)
    uq, cq = np.unique(labels, return_counts=True)
    ur, cr = np.unique(ref_labels, return_counts=True)
    common, iq, ir = np.intersect1d(uq, ur, assume_unique=True, return_indices=True)
    n_same = int(np.sum(cq[iq].astype(np.int64) * cr[ir]))
    return n_same - (N if same else 0), N * M - n_same


def _count_triplets(labels, ref_labels, same):
    """Number of (a, p, n) triplets without enumerating them."""
    M = len(ref_labels)
    uq, cq = np.unique(labels, return_counts=True)
    ur, cr = np.unique(ref_labels, return_counts=True)
    common, iq, ir = np.intersect1d(uq, ur, assume_unique=True, return_indices=True)
    cq, cr = cq[iq].astype(np.int64), cr[ir].astype(np.int64)
    npos = cr - (1 if same else 0)
    return int(np.sum(cq * np.maximum(npos, 0) * (M - cr)))


def _is_all(t):
    return isinstance(t, str) and t == "all"


def _check_t_per_anchor(t):
    if _is_all(t):
        return t
    if isinstance(t, bool) or not isinstance(t, numbers.Integral):
        raise TypeError(f'triplets_per_anchor must be "all" or an int, got {t!r}')
    return check_int(t, "triplets_per_anchor", minimum=1)
