"""PerAnchorReducer (pytorch-metric-learning)."""

from __future__ import annotations

import numpy as np

from .base_reducer import BaseReducer
from .mean_reducer import MeanReducer


def aggregation_func(x, num_per_row):
    """PML's default aggregation: row sums of ``x`` (N, M) divided by ``num_per_row`` (N,), 0 where
    that count is 0. Its backward is ``aggregation_func.backward``."""
    out = np.zeros(x.shape[0], dtype=np.float64)
    nz = num_per_row > 0
    out[nz] = x[nz].sum(axis=1) / num_per_row[nz]
    return out


def _aggregation_backward(dout, x, num_per_row):
    dx = np.zeros(x.shape, dtype=np.float64)
    nz = num_per_row > 0
    dx[nz] = (dout[nz] / num_per_row[nz])[:, None]
    return dx


aggregation_func.backward = _aggregation_backward  # type: ignore[attr-defined]  # PML's hook


class PerAnchorReducer(BaseReducer):
    """Aggregate pair losses per anchor, then reduce the N per-anchor values with ``reducer``.

    ``PerAnchorReducer(reducer=None, aggregation_func=aggregation_func)``: pair losses fill an
    (N, N) table (a repeated pair keeps its last loss), ``aggregation_func(table, num_per_row)``
    gives one value per anchor and needs a ``.backward(dout, table, num_per_row)``. "element" losses
    go straight to ``reducer``; "triplet" raises ``NotImplementedError`` (as PML).

    Raises ``TypeError`` for a bad ``reducer`` or ``aggregation_func``; ``ValueError`` for pair
    indices outside [0, N) or missing embeddings.
    """

    def __init__(self, reducer: BaseReducer | None = None, aggregation_func=aggregation_func) -> None:
        if reducer is None:
            reducer = MeanReducer()
        if not isinstance(reducer, BaseReducer):
            raise TypeError(f"reducer must be a BaseReducer, got {type(reducer).__name__}")
        if not callable(aggregation_func) or not callable(getattr(aggregation_func, "backward", None)):
            raise TypeError("aggregation_func must be callable and have a .backward(dout, x, num_per_row)")
        self.reducer = reducer
        self.aggregation_func = aggregation_func

    def element_reduction(self, losses, indices, embeddings, labels):
        value, d = self.reducer(losses, indices, "element", embeddings, labels)
        return value, (np.zeros(losses.shape[0]) if d is None else d)

    def _tuple(self, losses, indices, embeddings, labels):
        if embeddings is None:
            raise ValueError("PerAnchorReducer needs the embeddings (their count sizes the pair table)")
        n = int(np.shape(embeddings)[0])
        a, o = (np.asarray(t, dtype=np.int64) for t in indices)
        if a.shape != losses.shape or o.shape != losses.shape:
            raise ValueError("pair indices must have the shape of losses")
        if losses.shape[0] and (min(a.min(), o.min()) < 0 or max(a.max(), o.max()) >= n):
            raise ValueError(f"pair indices must lie in [0, {n}) (the pair table is N x N)")
        cell = a * n + o
        # the last occurrence of each cell wins (numpy / torch assignment order)
        rev = cell[::-1]
        _, first_in_rev = np.unique(rev, return_index=True)
        winners = losses.shape[0] - 1 - first_in_rev
        table = np.zeros((n, n), dtype=np.float64)
        table.flat[cell[winners]] = losses[winners]
        num_per_row = np.bincount(a[winners], minlength=n).astype(np.int64)
        agg = np.asarray(self.aggregation_func(table, num_per_row), dtype=np.float64)
        value, dagg = self.reducer(agg, np.arange(n), "element", embeddings, labels)
        if dagg is None:
            return value, np.zeros(losses.shape[0])
        dtable = self.aggregation_func.backward(np.asarray(dagg, dtype=np.float64), table, num_per_row)
        d = np.zeros(losses.shape[0], dtype=np.float64)
        d[winners] = dtable.flat[cell[winners]]
        return value, d

    pos_pair_reduction = neg_pair_reduction = _tuple

    def triplet_reduction(self, losses, indices, embeddings, labels):
        raise NotImplementedError("PerAnchorReducer: triplet reduction not supported")

    def __repr__(self) -> str:
        return f"PerAnchorReducer(reducer={self.reducer!r})"
