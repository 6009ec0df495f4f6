"""Hypothesis strategies for loss and miner tests: embeddings, labels, mined tuples, batches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import assume, strategies as st

from .._checks.distance import l2_normalize_rows

__all__ = ["Batch", "batches", "embeddings", "labels", "pair_tuples", "triplet_tuples"]


def _ints(v: Any, name: str) -> st.SearchStrategy[int]:
    """An int (as a one-value strategy) or a strategy of ints."""
    if isinstance(v, st.SearchStrategy):
        return v.map(lambda i: _checked_int(i, name))  # a drawn value is checked as a given one
    return st.just(_checked_int(v, name))


def _checked_int(v: Any, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an int or a hypothesis strategy of ints, got {type(v).__name__}")
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {v}")
    return int(v)


@st.composite
def embeddings(
    draw: st.DrawFn,
    n: Any = st.integers(1, 8),
    dim: Any = st.integers(2, 6),
    *,
    min_norm: float = 1e-2,
    max_norm: float = 1e2,
    near_duplicates: bool = True,
    dtype: Any = np.float32,
) -> np.ndarray:
    """Finite embeddings of shape ``(n, dim)`` (ints or strategies of ints) and ``dtype``.

    Rows are Gaussian directions; one norm per batch is drawn log-uniformly in
    ``[min_norm, max_norm]`` (tiny and huge norms included), each row's norm varies by up to 2x
    around it; with ``near_duplicates`` a drawn number of rows are copies of another row plus
    noise of 1e-2 of its norm (or exact copies). Raises ``ValueError`` unless
    ``0 < min_norm <= max_norm``.
    """
    if not 0 < min_norm <= max_norm or not np.isfinite(max_norm):
        raise ValueError(f"need 0 < min_norm <= max_norm < inf, got {min_norm}, {max_norm}")
    if np.dtype(dtype).kind != "f":
        raise TypeError(f"dtype must be a float dtype, got {np.dtype(dtype)}")
    if max_norm > float(np.finfo(dtype).max) / 4:  # rows up to max_norm, plus near-duplicate noise
        raise ValueError(
            f"max_norm={max_norm} overflows {np.dtype(dtype)} (at most {float(np.finfo(dtype).max) / 4:.3g})"
        )
    n, dim = draw(_ints(n, "n")), draw(_ints(dim, "dim"))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal((n, dim))
    norm = np.exp(draw(st.floats(np.log(min_norm), np.log(max_norm))))
    x = l2_normalize_rows(x, eps=0.0)[0] * norm * rng.uniform(0.5, 1.0, (n, 1))
    if near_duplicates and n >= 2:
        for _ in range(draw(st.integers(0, n // 2))):
            i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
            noise = draw(st.sampled_from([0.0, 1e-2]))
            x[j] = x[i] + noise * norm * rng.standard_normal(dim)
    return x.astype(dtype)


@st.composite
def labels(
    draw: st.DrawFn,
    n: Any = st.integers(1, 8),
    num_classes: Any = st.integers(1, 4),
    *,
    min_per_class: int = 0,
) -> np.ndarray:
    """int64 labels of length ``n`` in ``0 .. num_classes - 1`` (ints or strategies of ints) where
    every class occurs at least ``min_per_class`` times (``num_classes`` is lowered to
    ``n // min_per_class`` when ``n`` is too short for it). A drawn ``n`` below ``min_per_class``
    is rejected (as by ``assume``); a given one is a ``ValueError``."""
    drawn_n = isinstance(n, st.SearchStrategy)
    n, c = draw(_ints(n, "n")), draw(_ints(num_classes, "num_classes"))
    if (
        isinstance(min_per_class, bool)
        or not isinstance(min_per_class, (int, np.integer))
        or min_per_class < 0
    ):
        raise ValueError(f"min_per_class must be an int >= 0, got {min_per_class!r}")
    _long_enough(n, min_per_class, drawn_n)
    if c < 1:
        raise ValueError(f"num_classes must be >= 1, got {c}")
    if min_per_class:
        c = max(1, min(c, n // min_per_class))
    fixed = np.repeat(np.arange(c), min_per_class)[:n]
    rest = draw(st.lists(st.integers(0, c - 1), min_size=n - len(fixed), max_size=n - len(fixed)))
    y = np.concatenate([fixed, np.array(rest, dtype=np.int64)]).astype(np.int64)
    return y[np.argsort(draw(st.permutations(range(n))))] if n else y


def _long_enough(n: int, min_per_class: int, drawn: bool) -> None:
    """Reject (``assume``) a drawn length too short for ``min_per_class``; ValueError for a given one."""
    if 0 < n < min_per_class:  # its class would occur fewer than min_per_class times
        if not drawn:
            raise ValueError(f"n={n} is too short for min_per_class={min_per_class}")
        assume(False)


def _pick(draw: st.DrawFn, pool: list, max_size: int) -> list:
    if not pool:
        return []
    chosen = draw(st.lists(st.integers(0, len(pool) - 1), max_size=max_size))
    return [pool[i] for i in chosen]


@st.composite
def pair_tuples(
    draw: st.DrawFn, labels: Any, ref_labels: Any = None, *, max_size: int = 16
) -> tuple[np.ndarray, ...]:
    """Valid PML pairs ``(a1, p, a2, n)`` (int64) for concrete ``labels`` (N,) against
    ``ref_labels`` (M,; the batch when None, then without self pairs): ``labels[a1] ==
    ref[p]`` and ``labels[a2] != ref[n]``; up to ``max_size`` of each, repeats allowed."""
    y = np.asarray(labels)
    r = y if ref_labels is None else np.asarray(ref_labels)
    same = ref_labels is None
    pos = [(i, j) for i in range(len(y)) for j in range(len(r)) if y[i] == r[j] and not (same and i == j)]
    neg = [(i, j) for i in range(len(y)) for j in range(len(r)) if y[i] != r[j]]
    P, N = _pick(draw, pos, max_size), _pick(draw, neg, max_size)
    a1, p = (np.array(t, dtype=np.int64) for t in zip(*P)) if P else (np.zeros(0, np.int64),) * 2
    a2, n = (np.array(t, dtype=np.int64) for t in zip(*N)) if N else (np.zeros(0, np.int64),) * 2
    return a1, p, a2, n


@st.composite
def triplet_tuples(
    draw: st.DrawFn, labels: Any, ref_labels: Any = None, *, max_size: int = 16
) -> tuple[np.ndarray, ...]:
    """Valid triplets ``(a, p, n)`` (int64) for concrete ``labels`` against ``ref_labels`` (the
    batch when None, then ``a != p``): ``labels[a] == ref[p] != ref[n]``; up to ``max_size``."""
    y = np.asarray(labels)
    r = y if ref_labels is None else np.asarray(ref_labels)
    same = ref_labels is None
    trip = [
        (a, p, q)
        for a in range(len(y))
        for p in range(len(r))
        if y[a] == r[p] and not (same and a == p)
        for q in range(len(r))
        if r[q] != y[a]
    ]
    T = _pick(draw, trip, max_size)
    if not T:
        return (np.zeros(0, np.int64),) * 3
    return tuple(np.array(t, dtype=np.int64) for t in zip(*T))


@dataclass
class Batch:
    """One loss call's inputs; ``kwargs()`` gives them as keywords (``None`` ones left out)."""

    embeddings: np.ndarray
    labels: np.ndarray
    indices_tuple: tuple | None = None
    ref_emb: np.ndarray | None = None
    ref_labels: np.ndarray | None = None

    def kwargs(self) -> dict[str, Any]:
        """``{"embeddings": ..., "labels": ..., ...}`` without the ``None`` entries."""
        return {k: v for k, v in vars(self).items() if v is not None}


@st.composite
def batches(
    draw: st.DrawFn,
    n: Any = st.integers(1, 8),
    dim: Any = st.integers(2, 5),
    num_classes: Any = st.integers(1, 4),
    *,
    min_per_class: int = 0,
    ref: Any = st.booleans(),
    mined: Any = st.sampled_from([None, "pairs", "triplets"]),
    **embedding_options: Any,
) -> Batch:
    """A ``Batch``: ``embeddings`` and ``labels``, with a reference set of its own
    (``ref``: a bool or a strategy of bools) and a mined ``indices_tuple`` (``mined``: None,
    "pairs" or "triplets", or a strategy of them). ``embedding_options`` go to ``embeddings``."""
    n_, d = draw(_ints(n, "n")), draw(_ints(dim, "dim"))
    x = draw(embeddings(n_, d, **embedding_options))
    _long_enough(n_, min_per_class, isinstance(n, st.SearchStrategy))
    y = draw(labels(n_, num_classes, min_per_class=min_per_class))
    use_ref = draw(ref if isinstance(ref, st.SearchStrategy) else st.just(bool(ref)))
    r = ry = None
    if use_ref:
        m = draw(_ints(n, "n"))
        _long_enough(m, min_per_class, isinstance(n, st.SearchStrategy))
        r = draw(embeddings(m, d, **embedding_options))
        ry = draw(labels(m, num_classes, min_per_class=min_per_class))
    kind = draw(mined if isinstance(mined, st.SearchStrategy) else st.just(mined))
    if kind not in (None, "pairs", "triplets"):
        raise ValueError(f"mined must be None, 'pairs' or 'triplets', got {kind!r}")
    it = None
    if kind == "pairs":
        it = draw(pair_tuples(y, ry))
    elif kind == "triplets":
        it = draw(triplet_tuples(y, ry))
    return Batch(x, y, it, r, ry)
