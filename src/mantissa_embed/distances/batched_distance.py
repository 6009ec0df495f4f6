"""BatchedDistance (pytorch-metric-learning): a distance matrix computed in query chunks."""

from __future__ import annotations

from .._validation import check_array, check_int
from .base_distance import BaseDistance


class BatchedDistance:
    """``distance(query_emb, ref_emb)`` ``batch_size`` query rows at a time, never the whole matrix.

    ``BatchedDistance(distance, iter_fn=None, batch_size=32)``: ``batched(query_emb, ref_emb=None)``
    calls ``iter_fn(distance(query_emb[s:e], ref_emb), s, e)`` for ``s = 0, batch_size, ...``,
    ``e = s + batch_size`` (may exceed N, as PML) and returns None. Forward only; other attributes
    are looked up on ``distance``.

    Raises ``TypeError`` (``distance`` not a BaseDistance, ``iter_fn`` not callable at call time,
    ``batch_size`` not an int) or ``ValueError`` (``batch_size < 1``, bad embeddings).
    Source: pytorch-metric-learning ``distances/batched_distance.py``.
    """

    def __init__(self, distance: BaseDistance, iter_fn=None, batch_size=32) -> None:
        if not isinstance(distance, BaseDistance):
            raise TypeError(
                f"distance must be a BaseDistance (e.g. LpDistance()), got {type(distance).__name__}"
            )
        if iter_fn is not None and not callable(iter_fn):
            raise TypeError(f"iter_fn must be callable (mat, start, end), got {type(iter_fn).__name__}")
        self.distance = distance
        self.iter_fn = iter_fn
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)

    def __call__(self, query_emb, ref_emb=None):
        if not callable(self.iter_fn):
            raise TypeError(
                "iter_fn must be set to a callable (mat, start, end) before calling BatchedDistance"
            )
        q = check_array(query_emb, "query_emb", ndim=2)
        r = q if ref_emb is None else check_array(ref_emb, "ref_emb", ndim=2)
        if r.shape[1] != q.shape[1]:
            raise ValueError(f"ref_emb must have {q.shape[1]} columns like query_emb, got shape {r.shape}")
        n = q.shape[0]
        for s in range(0, n, self.batch_size):
            e = s + self.batch_size
            mat = self.distance(q[s:e], r)
            self.iter_fn(mat, s, e)

    forward = __call__

    def __getattr__(self, name):
        if name == "distance" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.distance, name)

    def __repr__(self) -> str:
        return f"BatchedDistance(distance={self.distance!r}, batch_size={self.batch_size})"
