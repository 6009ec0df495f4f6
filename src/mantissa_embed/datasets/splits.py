"""Stratified subsets and class-disjoint splits of ``(X, y)``."""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike, Int64Array, Seed
from .._validation import as_generator, check_int, check_labels


def _check_xy(X: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, Int64Array]:
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"X must be an array, got {type(X).__name__}")
    X = np.asarray(X)
    if X.ndim < 1:
        raise ValueError(f"X must have at least 1 dimension, got shape {X.shape}")
    y = check_labels(y, "y", n=X.shape[0])
    return X, y


def subset(X: ArrayLike, y: ArrayLike, n: int, seed: Seed = 0) -> tuple[np.ndarray, Int64Array]:
    """A stratified random subset of ``n`` samples, deterministic for a given ``seed``.

    Each class gets ``floor(n * count / N)`` samples, and the remaining ones go to the classes
    with the largest fractional parts (ties to the smaller label) -- the largest-remainder
    method, so class proportions are kept as closely as integers allow. Within a class the
    samples are drawn without replacement; the result keeps the original order.

    Parameters
    ----------
    X : array_like, shape (N, ...)
    y : array_like of int, shape (N,)
    n : int, 1 <= n <= N
    seed : int or numpy.random.Generator, default 0

    Returns
    -------
    X_sub : ndarray, shape (n, ...), same dtype as X
    y_sub : ndarray, int64, shape (n,)

    Raises
    ------
    ValueError
        ``n`` < 1 or ``n`` > N, or ``y`` of the wrong length.
    TypeError
        Non-integer ``n`` or labels.
    """
    X, y = _check_xy(X, y)
    n = check_int(n, "n", minimum=1)
    N = y.shape[0]
    if n > N:
        raise ValueError(f"n must be <= the number of samples ({N}), got {n}")
    rng = as_generator(seed)
    classes, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    quota = counts * (n / N)
    take = np.floor(quota).astype(np.int64)
    rest = n - int(take.sum())
    if rest > 0:
        order = np.argsort(-(quota - take), kind="stable")
        take[order[:rest]] += 1
    chosen = []
    for c in range(classes.shape[0]):
        if take[c]:
            idx = np.flatnonzero(inverse == c)
            chosen.append(rng.choice(idx, size=int(take[c]), replace=False))
    sel = np.sort(np.concatenate(chosen))
    return np.ascontiguousarray(X[sel]), y[sel]


def split_by_class(
    X: ArrayLike, y: ArrayLike, classes: ArrayLike
) -> tuple[np.ndarray, Int64Array, np.ndarray, Int64Array]:
    """Split into the samples whose label is in ``classes`` and the others (class-disjoint).

    Used for unseen-class evaluation: train on ``(X_in, y_in)``, evaluate retrieval on
    ``(X_out, y_out)``, whose classes never appear in training. Order and labels are kept.

    Parameters
    ----------
    X : array_like, shape (N, ...)
    y : array_like of int, shape (N,)
    classes : int or sequence of int, non-empty; every class must occur in ``y``.

    Returns
    -------
    X_in, y_in, X_out, y_out : ndarrays (``y_*`` int64)

    Raises
    ------
    ValueError
        Empty ``classes``, a class absent from ``y``, or ``y`` of the wrong length.
    TypeError
        Non-integer ``classes`` or labels.
    """
    X, y = _check_xy(X, y)
    cls = np.atleast_1d(np.asarray(classes))
    if cls.ndim != 1 or cls.size == 0:
        raise ValueError(f"classes must be a non-empty 1-D sequence of ints, got shape {cls.shape}")
    if cls.dtype.kind not in "iu":
        raise TypeError(f"classes must be integers, got dtype {cls.dtype}")
    missing = np.setdiff1d(cls, y)
    if missing.size:
        raise ValueError(
            f"classes {missing.tolist()} do not occur in y (labels present: {np.unique(y).tolist()})"
        )
    mask = np.isin(y, cls)
    return (np.ascontiguousarray(X[mask]), y[mask], np.ascontiguousarray(X[~mask]), y[~mask])
