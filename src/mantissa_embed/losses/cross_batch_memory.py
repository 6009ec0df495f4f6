"""CrossBatchMemory (Wang et al. 2020): compare each batch against a ring buffer of past embeddings."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import utils
from .._typing import ArrayLike, IndicesTuple
from .._validation import check_array, check_int, check_labels
from .base_metric_loss_function import BaseMetricLossFunction, LossOutput

__all__ = ["CrossBatchMemory"]

# pytorch-metric-learning 2.9's CrossBatchMemory.supported_losses()
_SUPPORTED = (
    "AngularLoss",
    "CircleLoss",
    "ContrastiveLoss",
    "GeneralizedLiftedStructureLoss",
    "IntraPairVarianceLoss",
    "LiftedStructureLoss",
    "MarginLoss",
    "MultiSimilarityLoss",
    "NCALoss",
    "NTXentLoss",
    "SignalToNoiseRatioContrastiveLoss",
    "SupConLoss",
    "TripletMarginLoss",
    "TupletMarginLoss",
)


def _as_mask(enqueue_mask, n):
    m = np.asarray(enqueue_mask)
    if m.dtype != np.bool_:
        raise TypeError(f"enqueue_mask must be a boolean array, got dtype {m.dtype}")
    if m.ndim != 1 or m.shape[0] != n:
        raise ValueError(f"enqueue_mask must have shape ({n},) (one flag per embedding), got {m.shape}")
    return np.ascontiguousarray(m)


class CrossBatchMemory:
    """Wrap a pair/tuple loss so that each batch is compared against a memory bank of past embeddings.

    ``CrossBatchMemory(loss, embedding_size, memory_size=1024, miner=None)``; call
    ``xbm(embeddings (N, D), labels (N,), indices_tuple=None, enqueue_mask=None)``. Each call copies
    the rows to enqueue into a ring buffer (``embedding_memory``, ``label_memory``, ``queue_idx``,
    ``has_been_filled``), then runs ``loss`` with the filled memory as the reference set (pairs of a
    row with its own copy removed). ``grad`` is w.r.t. the batch only; ``ref_grad`` is None. A call
    that raises leaves the queue unchanged; ``reset_queue`` empties it.

    Raises ``TypeError`` for a loss that is not supported (``supported_losses``) or owns class
    weights, a miner that is not callable; ``ValueError`` for bad sizes, more enqueued rows than
    ``memory_size``, ``indices_tuple`` with ``enqueue_mask``.
    Source: X. Wang et al., "Cross-Batch Memory for Embedding Learning", CVPR 2020.
    """

    def __init__(
        self,
        loss: BaseMetricLossFunction,
        embedding_size: int,
        memory_size: int = 1024,
        miner: Callable[..., Any] | None = None,
    ) -> None:
        self.check_loss_support(loss)
        if miner is not None and not callable(miner):
            raise TypeError(f"miner must be a miner (callable) or None, got {type(miner).__name__}")
        self.loss = loss
        self.miner = miner
        self.embedding_size = check_int(embedding_size, "embedding_size", minimum=1)
        self.memory_size = check_int(memory_size, "memory_size", minimum=1)
        self.curr_batch_idx = np.empty(0, dtype=np.int64)
        self.reset_queue()

    # -- PML structure -------------------------------------------------------------------------
    @staticmethod
    def supported_losses():
        """Names of the losses PML's CrossBatchMemory accepts (subclasses are accepted too)."""
        return list(_SUPPORTED)

    @classmethod
    def check_loss_support(cls, loss):
        """Raise ``TypeError`` unless ``loss`` can be wrapped (see the class docstring)."""
        if not isinstance(loss, BaseMetricLossFunction):
            raise TypeError(f"loss must be a metric loss (BaseMetricLossFunction), got {type(loss).__name__}")
        name = type(loss).__name__
        if any(c.__name__ in _SUPPORTED for c in type(loss).__mro__):
            return  # (MarginLoss(learn_beta=True) owns its beta and is supported, as in PML)
        params = loss.parameters()
        if params:
            raise TypeError(
                f"CrossBatchMemory does not support {name}: it owns learnable weights "
                f"({len(params)} Parameter(s), e.g. class proxies). Proxy and classifier losses "
                f"compare embeddings with their own weights, not with a memory of embeddings; "
                f"use them directly."
            )
        raise TypeError(
            f"CrossBatchMemory does not support {name}; supported losses: {', '.join(_SUPPORTED)}"
        )

    def parameters(self):
        """CrossBatchMemory owns no learnable weights: ``[]``."""
        return []

    def reset_queue(self) -> None:
        """Empty the memory: zero buffers, ``queue_idx = 0``, ``has_been_filled = False``."""
        self.embedding_memory = np.zeros((self.memory_size, self.embedding_size), dtype=np.float32)
        self.label_memory = np.zeros(self.memory_size, dtype=np.int64)
        self.has_been_filled = False
        self.queue_idx = 0

    @property
    def num_stored(self):
        """Rows of the memory in use: ``memory_size`` once filled, else ``queue_idx``."""
        return self.memory_size if self.has_been_filled else self.queue_idx

    def get_memory(self):
        """``(embeddings (num_stored, D), labels (num_stored,))``: copies of the rows in use."""
        k = self.num_stored
        return self.embedding_memory[:k].copy(), self.label_memory[:k].copy()

    def add_to_memory(self, embeddings: np.ndarray, labels: np.ndarray) -> None:
        """Copy ``embeddings`` (B, D) / ``labels`` (B,) into the ring buffer at the cursor."""
        b = embeddings.shape[0]
        if b == 0:
            self.curr_batch_idx = np.empty(0, dtype=np.int64)
            return
        idx = (self.queue_idx + np.arange(b, dtype=np.int64)) % self.memory_size
        self.curr_batch_idx = idx
        self.embedding_memory[idx] = embeddings  # fancy assignment copies
        self.label_memory[idx] = labels
        prev = self.queue_idx
        self.queue_idx = int((self.queue_idx + b) % self.memory_size)
        if not self.has_been_filled and self.queue_idx <= prev:
            self.has_been_filled = True

    # -- the call ------------------------------------------------------------------------------
    def __call__(
        self,
        embeddings: ArrayLike,
        labels: ArrayLike,
        indices_tuple: IndicesTuple | None = None,
        enqueue_mask=None,
    ):
        emb = check_array(embeddings, "embeddings", ndim=2)
        N, D = emb.shape
        if D != self.embedding_size:
            raise ValueError(
                f"embeddings must have embedding_size={self.embedding_size} columns, got shape {emb.shape}"
            )
        lab = check_labels(labels, "labels", n=N)
        if indices_tuple is not None and enqueue_mask is not None:
            raise ValueError("indices_tuple and enqueue_mask are mutually exclusive")
        if enqueue_mask is not None:
            mask = _as_mask(enqueue_mask, N)
            n_enq = int(mask.sum())
            if n_enq > self.memory_size:
                raise ValueError(
                    f"enqueue_mask selects {n_enq} rows, more than memory_size={self.memory_size}"
                )
            q_rows = np.flatnonzero(~mask)
            emb_q, lab_q = emb[q_rows], lab[q_rows]
            undo = self._undo_point(n_enq)
            self.add_to_memory(emb[mask], lab[mask])
            remove_self = False
        else:
            if N > self.memory_size:
                raise ValueError(
                    f"the batch has {N} rows, more than memory_size={self.memory_size}; "
                    f"use a larger memory or an enqueue_mask"
                )
            if indices_tuple is not None:  # validate before touching the queue
                after = self.queue_idx + N
                m_after = self.memory_size if (self.has_been_filled or after >= self.memory_size) else after
                indices_tuple = utils.check_indices_tuple(indices_tuple, N, m_after)
            q_rows = None
            emb_q, lab_q = emb, lab
            undo = self._undo_point(N)
            self.add_to_memory(emb, lab)
            remove_self = True
        try:
            return self._loss_against_memory(emb_q, lab_q, q_rows, N, D, indices_tuple, remove_self)
        except BaseException:
            undo()  # a failing miner or loss leaves the queue as it was before the call
            raise

    def _undo_point(self, b):
        """A closure restoring the queue state as it is now, before ``b`` rows are enqueued."""
        idx = (self.queue_idx + np.arange(min(b, self.memory_size), dtype=np.int64)) % self.memory_size
        rows, labs = self.embedding_memory[idx].copy(), self.label_memory[idx].copy()
        state = (self.queue_idx, self.has_been_filled, self.curr_batch_idx)

        def undo() -> None:
            self.embedding_memory[idx], self.label_memory[idx] = rows, labs
            self.queue_idx, self.has_been_filled, self.curr_batch_idx = state

        return undo

    def _loss_against_memory(self, emb_q, lab_q, q_rows, N, D, indices_tuple, remove_self):
        grad = np.zeros((N, D), dtype=np.float32)
        M = self.num_stored
        if emb_q.shape[0] == 0 or M == 0:
            names = self.loss.sub_loss_names()
            return LossOutput(loss=0.0, grad=grad, ref_grad=None, terms={k: 0.0 for k in names})
        E_mem = self.embedding_memory[:M]
        L_mem = self.label_memory[:M]
        it = self.create_indices_tuple(emb_q, lab_q, E_mem, L_mem, indices_tuple, remove_self)
        out = self.loss(emb_q, lab_q, it, E_mem, L_mem)
        if q_rows is None:
            grad = out.grad
        else:
            grad[q_rows] = out.grad
        return LossOutput(
            loss=out.loss,
            grad=np.ascontiguousarray(grad, dtype=np.float32),
            ref_grad=None,
            terms=dict(out.terms),
        )

    forward = __call__

    def create_indices_tuple(
        self, embeddings: np.ndarray, labels: np.ndarray, E_mem, L_mem, input_indices_tuple, remove_self
    ):
        """The tuple the wrapped loss receives (see step 4 of the class docstring)."""
        N, M = embeddings.shape[0], E_mem.shape[0]
        if self.miner is not None:
            it = utils.check_indices_tuple(
                self.miner(embeddings, labels, E_mem, L_mem), N, M, name="miner output"
            )
        else:
            # L_mem is a different object than labels: no implicit self exclusion here
            it = utils.get_all_pairs_indices(labels, L_mem)
        if remove_self:
            it = self._remove_self_comparisons(it)
        if input_indices_tuple is not None:
            given = utils.check_indices_tuple(input_indices_tuple, N, M)
            if len(given) == 3 and len(it) == 4:
                given = utils.convert_to_pairs(given, labels, L_mem)
            elif len(given) == 4 and len(it) == 3:
                given = utils.convert_to_triplets(given, labels, L_mem)
            it = tuple(np.concatenate([x, np.asarray(y, dtype=np.int64)]) for x, y in zip(it, given))
        return it

    def _remove_self_comparisons(self, it):
        """Drop the positive pairs / triplets whose positive is the anchor's own memory copy."""
        own = self.curr_batch_idx  # own[i]: memory slot of batch row i
        a, p = it[0], it[1]
        keep = own[a] != p
        if len(it) == 3:
            return a[keep], p[keep], it[2][keep]
        return a[keep], p[keep], it[2], it[3]

    def __repr__(self) -> str:
        return (
            f"CrossBatchMemory(loss={self.loss!r}, embedding_size={self.embedding_size}, "
            f"memory_size={self.memory_size}, miner={self.miner!r}, queue_idx={self.queue_idx}, "
            f"has_been_filled={self.has_been_filled})"
        )
