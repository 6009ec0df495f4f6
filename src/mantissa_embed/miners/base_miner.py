"""BaseMiner: pytorch-metric-learning's miner call contract, in numpy."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._typing import ArrayLike, Int64Array
from .._validation import check_array, check_labels
from ..backend import BACKENDS
from ..distances import BaseDistance, LpDistance


class BaseMiner:
    """Base class of miners (pytorch-metric-learning's ``BaseMiner``).

    ``miner(embeddings (N, D), labels (N,), ref_emb=None (M, D), ref_labels=None (M,))`` returns
    pairs ``(a1, p, a2, n)`` or triplets ``(a, p, n)`` of 1-D int64 arrays; anchors index
    ``embeddings``, ``p`` / ``n`` the reference (the batch when None). Self pairs are excluded
    when the reference is the batch or ``ref_labels is labels`` (PML's rule).
    ``distance`` defaults to ``LpDistance()``; ``backend`` is ``"mantissa"`` or ``"numpy"``.

    Raises ``ValueError`` (not 2-D, NaN/Inf, wrong label length, ``ref_emb`` without
    ``ref_labels`` or the reverse, column mismatch, zero columns) or ``TypeError`` (non-numeric
    embeddings, non-integer or missing labels).
    """

    def __init__(self, distance: BaseDistance | None = None, backend: str = "mantissa") -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.backend = backend
        if distance is None:
            distance = LpDistance(p=2, backend=backend)
        if not isinstance(distance, BaseDistance):
            raise TypeError(
                f"distance must be a BaseDistance (e.g. LpDistance()), got {type(distance).__name__}"
            )
        self.distance = distance
        self.stats: dict[str, Any] = {}

    def __call__(
        self,
        embeddings: ArrayLike,
        labels: ArrayLike,
        ref_emb: ArrayLike | None = None,
        ref_labels: ArrayLike | None = None,
    ) -> tuple[Int64Array, ...]:
        emb = check_array(embeddings, "embeddings", ndim=2)
        N, D = emb.shape
        if D == 0 and N > 0:  # as the losses: no geometry to mine in
            raise ValueError(f"embeddings must have at least one column, got shape {emb.shape}")
        same_obj = ref_labels is labels
        lab = check_labels(labels, "labels", n=N)
        if ref_emb is None:
            if ref_labels is not None and not same_obj:
                raise ValueError("ref_labels was given without ref_emb")
            ref, rlab = None, lab
        else:
            ref = check_array(ref_emb, "ref_emb", ndim=2)
            if ref.shape[1] != D:
                raise ValueError(f"ref_emb must have {D} columns like embeddings, got shape {ref.shape}")
            if ref_labels is None:
                raise ValueError("ref_labels is required with ref_emb")
            rlab = lab if same_obj else check_labels(ref_labels, "ref_labels", n=ref.shape[0])
            if same_obj and ref.shape[0] != N:
                raise ValueError(f"ref_labels must have length {ref.shape[0]} (one per ref_emb row), got {N}")
        self.stats = {}
        out = self.mine(emb, lab, ref, rlab)
        out = tuple(np.ascontiguousarray(x, dtype=np.int64) for x in out)
        self.output_assertion(out)
        return out

    forward = __call__

    def mine(
        self, embeddings: np.ndarray, labels: np.ndarray, ref_emb: np.ndarray | None, ref_labels: np.ndarray
    ):
        """Return the index tuple. ``ref_emb`` is None for the batch itself, and then
        ``ref_labels is labels``; pass ``ref_labels`` on to ``mantissa_embed.utils``, whose
        identity rule excludes the self pairs."""
        raise NotImplementedError

    def _mat(self, embeddings, ref_emb):
        mat, _ = self.distance.forward_ctx(embeddings, ref_emb, backend=self.backend, validate=False)
        return mat

    def output_assertion(self, output):
        if len(output) == 3:
            self.stats["num_triplets"] = len(output[0])
            assert len(output[0]) == len(output[1]) == len(output[2])
        elif len(output) == 4:
            self.stats["num_pos_pairs"] = len(output[0])
            self.stats["num_neg_pairs"] = len(output[2])
            assert len(output[0]) == len(output[1]) and len(output[2]) == len(output[3])
        else:
            raise TypeError(f"a miner must return 3 or 4 index arrays, got {len(output)}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(distance={self.distance!r})"
