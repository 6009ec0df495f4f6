"""``check_miner_invariants``: what every miner's output must satisfy."""

from __future__ import annotations

from typing import Any, Callable, NoReturn

import numpy as np

from .._typing import ArrayLike
from .gradients import callable_name

__all__ = ["check_miner_invariants"]


def _fail(name: str, msg: str) -> NoReturn:
    raise AssertionError(f"{name}: {msg}")


def check_miner_invariants(
    miner: Callable[..., Any],
    embeddings: ArrayLike,
    labels: ArrayLike,
    ref_emb: ArrayLike | None = None,
    ref_labels: ArrayLike | None = None,
    *,
    allow_self_pairs: bool | None = None,
) -> tuple[np.ndarray, ...]:
    """Call ``miner(embeddings, labels[, ref_emb, ref_labels])`` and assert PML's miner contract.

    The output is a tuple of 3 (triplets ``a, p, n``) or 4 (pairs ``a1, p, a2, n``) 1-D int64
    arrays, ``a``/``p``/``n`` (and ``a1``/``p``, ``a2``/``n``) of equal lengths; anchors index
    ``embeddings`` (0 .. N-1), positives and negatives the reference (``ref_emb``, else the batch);
    a positive shares its anchor's label, a negative does not; no anchor is its own positive
    unless ``allow_self_pairs`` (default: allowed only when ``ref_emb`` is given).

    Returns the miner's tuple. Raises ``AssertionError`` naming the first broken rule and the
    offending position.
    """
    name = callable_name(miner)
    y = np.asarray(labels)
    if ref_emb is None:
        out = miner(embeddings, labels)
        ry, M = y, len(y)
    else:
        out = miner(embeddings, labels, ref_emb, ref_labels)
        ry, M = np.asarray(ref_labels), len(np.asarray(ref_emb))
    if allow_self_pairs is None:
        allow_self_pairs = ref_emb is not None
    N = len(np.asarray(embeddings))
    if not isinstance(out, tuple) or len(out) not in (3, 4):
        _fail(
            name,
            f"must return a tuple of 3 or 4 arrays, got {type(out).__name__}"
            f"{'' if not isinstance(out, tuple) else f' of {len(out)}'}",
        )
    for i, t in enumerate(out):
        if not isinstance(t, np.ndarray) or t.dtype != np.int64 or t.ndim != 1:
            _fail(
                name,
                f"output[{i}] must be a 1-D int64 numpy array, got "
                f"{getattr(t, 'dtype', type(t).__name__)} of shape {np.shape(t)}",
            )
    groups = [((0, 1), (0, 2))] if len(out) == 3 else [((0, 1),), ((2, 3),)]
    roles = ("a", "p", "n") if len(out) == 3 else ("a1", "p", "a2", "n")
    for group in groups:
        for i, j in group:
            if len(out[i]) != len(out[j]):
                _fail(name, f"{roles[i]} and {roles[j]} differ in length ({len(out[i])} vs {len(out[j])})")
    for i, role in enumerate(roles):
        size = N if role.startswith("a") else M
        t = out[i]
        if t.size and (t.min() < 0 or t.max() >= size):
            k = int(np.nonzero((t < 0) | (t >= size))[0][0])
            _fail(name, f"{role}[{k}] = {t[k]} is out of range 0..{size - 1}")
    pairs = [(out[0], out[1], True)] + (
        [(out[0], out[2], False)] if len(out) == 3 else [(out[2], out[3], False)]
    )
    for anchors, others, positive in pairs:
        same = y[anchors] == ry[others]
        wrong = ~same if positive else same
        if wrong.any():
            k = int(np.nonzero(wrong)[0][0])
            kind = "positive" if positive else "negative"
            _fail(
                name,
                f"{kind} #{k} (anchor {anchors[k]}, label {y[anchors[k]]}; ref {others[k]}, label "
                f"{ry[others[k]]}) {'does not share' if positive else 'shares'} its anchor's label",
            )
        if positive and not allow_self_pairs and (anchors == others).any():
            k = int(np.nonzero(anchors == others)[0][0])
            _fail(name, f"positive #{k} pairs anchor {anchors[k]} with itself")
    return out
