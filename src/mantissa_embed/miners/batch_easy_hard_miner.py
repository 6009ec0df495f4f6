"""BatchEasyHardMiner (pytorch-metric-learning; Xuan, Stylianou, Pless 2020)."""

from __future__ import annotations

import numpy as np

from .. import utils
from .._validation import check_float
from .base_miner import BaseMiner

STRATEGIES = ("hard", "semihard", "easy", "all")


def _check_range(r, name):
    if r is None:
        return None
    if not isinstance(r, (tuple, list)) or len(r) != 2:
        raise TypeError(f"{name} must be None or a (low, high) pair, got {r!r}")
    lo, hi = check_float(r[0], f"{name}[0]"), check_float(r[1], f"{name}[1]")
    if lo > hi:
        raise ValueError(f"{name} must have low <= high, got {r!r}")
    return (lo, hi)


class BatchEasyHardMiner(BaseMiner):
    """For each anchor, one positive and one negative, each picked by a strategy.

    ``BatchEasyHardMiner(pos_strategy="easy", neg_strategy="semihard", allowed_pos_range=None,
    allowed_neg_range=None, distance=None, backend="mantissa")``: pairs ``(a1, p, a2, n)`` int64.
    Strategies ``"easy"``, ``"hard"``, ``"semihard"``, ``"all"``; ``allowed_*_range = (low, high)``
    first restricts the candidates to ``low <= d <= high``. Without ``"all"`` an anchor needs both
    choices and the output is ``(a, p, a, n)``; ties go to the lowest index. Table: docs/miners.md.

    Raises ``ValueError`` for an unknown strategy, semihard with semihard or with all, or a range
    with low > high; ``TypeError`` for a range that is not a pair of numbers.
    Source: H. Xuan et al., "Improved Embeddings with Easy Positive Triplet Mining", WACV 2020.
    """

    HARD, SEMIHARD, EASY, ALL = STRATEGIES
    all_batch_mining_strategies = list(STRATEGIES)

    def __init__(
        self,
        pos_strategy: str = "easy",
        neg_strategy: str = "semihard",
        allowed_pos_range=None,
        allowed_neg_range=None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        for name, s in (("pos_strategy", pos_strategy), ("neg_strategy", neg_strategy)):
            if s not in STRATEGIES:
                raise ValueError(f"{name} must be one of {STRATEGIES}, got {s!r}")
        if pos_strategy == neg_strategy == "semihard":
            raise ValueError('pos_strategy and neg_strategy cannot both be "semihard"')
        if {pos_strategy, neg_strategy} == {"all", "semihard"}:
            raise ValueError('"semihard" cannot be used in combination with "all"')
        self.pos_strategy, self.neg_strategy = pos_strategy, neg_strategy
        self.allowed_pos_range = _check_range(allowed_pos_range, "allowed_pos_range")
        self.allowed_neg_range = _check_range(allowed_neg_range, "allowed_neg_range")

    def _pick(self, want_small, mat, allowed, val_range, thresholds=None):
        """(values, indices, keep) of the smallest/largest allowed entry per row."""
        valid = allowed.copy()
        if thresholds is not None:
            valid &= (mat > thresholds[:, None]) if want_small else (mat < thresholds[:, None])
        if val_range is not None:
            valid &= (mat >= np.float32(val_range[0])) & (mat <= np.float32(val_range[1]))
        keep = valid.any(axis=1)
        N = mat.shape[0]
        if mat.size == 0:
            return np.full(N, np.inf if want_small else -np.inf, np.float32), np.zeros(N, np.int64), keep
        fill = np.inf if want_small else -np.inf
        m = np.where(valid, mat, np.float32(fill))
        idx = np.argmin(m, axis=1) if want_small else np.argmax(m, axis=1)
        return m[np.arange(N), idx], idx.astype(np.int64), keep

    def _positives(self, mat, matches, thresholds=None):
        # easy positive = smallest distance (largest similarity)
        small = (self.pos_strategy == "easy") != self.distance.is_inverted
        return self._pick(small, mat, matches, self.allowed_pos_range, thresholds)

    def _negatives(self, mat, diffs, thresholds=None):
        # hard / semihard negative = smallest distance (largest similarity)
        small = (self.neg_strategy in ("hard", "semihard")) != self.distance.is_inverted
        return self._pick(small, mat, diffs, self.allowed_neg_range, thresholds)

    def mine(
        self, embeddings: np.ndarray, labels: np.ndarray, ref_emb: np.ndarray | None, ref_labels: np.ndarray
    ):
        mat = self._mat(embeddings, ref_emb)
        matches, diffs = utils.get_matches_and_diffs(labels, ref_labels)
        ps, ns = self.pos_strategy, self.neg_strategy
        if ps == "semihard" and ns != "all":
            nd, ni, nkeep = self._negatives(mat, diffs)
            pd, pi, pkeep = self._positives(mat, matches, nd)
        elif ns == "semihard" and ps != "all":
            pd, pi, pkeep = self._positives(mat, matches)
            nd, ni, nkeep = self._negatives(mat, diffs, pd)
        else:
            if ps != "all":
                pd, pi, pkeep = self._positives(mat, matches)
            if ns != "all":
                nd, ni, nkeep = self._negatives(mat, diffs)
        a = np.arange(mat.shape[0], dtype=np.int64)
        if "all" not in (ps, ns):
            k = pkeep & nkeep
            return a[k], pi[k], a[k], ni[k]
        a1, p, a2, n = utils.get_all_pairs_indices(labels, ref_labels)
        if ps != "all":
            a1, p = a[pkeep], pi[pkeep]
        if ns != "all":
            a2, n = a[nkeep], ni[nkeep]
        return a1, p, a2, n

    def __repr__(self) -> str:
        return (
            f"BatchEasyHardMiner(pos_strategy={self.pos_strategy!r}, neg_strategy={self.neg_strategy!r}, "
            f"allowed_pos_range={self.allowed_pos_range}, allowed_neg_range={self.allowed_neg_range}, "
            f"distance={self.distance!r})"
        )
