"""LiftedStructureLoss (Oh Song et al. 2016), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numpy as np

from .._validation import check_float
from .generic_pair_loss import GenericPairLoss


def _segment_lse(v, seg, n):
    """Per-segment log-sum-exp of ``v`` (float64) grouped by ``seg`` in [0, n): ``-inf`` for an
    empty segment. Returns (lse (n,), softmax weights exp(v - lse[seg]))."""
    mx = np.full(n, -np.inf)
    np.maximum.at(mx, seg, v)
    e = np.exp(v - mx[seg])
    s = np.bincount(seg, weights=e, minlength=n)
    with np.errstate(divide="ignore"):
        lse = np.where(s > 0, mx + np.log(np.where(s > 0, s, 1.0)), -np.inf)
    return lse, e / s[seg]


class LiftedStructureLoss(GenericPairLoss):
    """Lifted structure loss.

    ``LiftedStructureLoss(neg_margin=1, pos_margin=0, distance=None, reducer=None,
    embedding_regularizer=None, embedding_reg_weight=1, backend="mantissa")``

    For each positive pair ``k = (i, j)`` (anchor ``i`` of the batch, positive ``j`` of the
    reference set) and distances ``d`` (default ``LpDistance()``)::

        L_k = 1/2 [ log sum_{(a, n) in N(i, j)} exp(neg_margin - d_an) + (d_ij - pos_margin) ]+^2

    where ``N(i, j)`` holds the negative pairs whose anchor is ``i`` or ``j`` (PML compares the
    negative pairs' anchors with both indices of the positive pair, also when ``j`` indexes
    ``ref_emb``); an empty ``N(i, j)`` contributes 0 inside the bracket. With a similarity ``s``:
    ``s_an - neg_margin`` and ``pos_margin - s_ij`` (PML's ``distance.margin``). The positive-pair
    losses are reduced by the reducer (default ``MeanReducer``) as a "pos_pair" reduction:
    ``terms = {"loss"}``. There is no loss (0, zero gradient) unless there is at least one
    positive and one negative pair. Pairs listed twice count twice.

    The log-sum-exp over ``N(i, j)`` is ``logaddexp(L_i, L_j)`` of per-anchor log-sum-exps, so
    memory stays O(N M) (PML builds a positive pairs x negative pairs matrix).

    Shapes: ``embeddings`` (N, D), ``labels`` (N,), ``ref_emb`` (M, D) -> ``LossOutput``.

    References: H. Oh Song, Y. Xiang, S. Jegelka, S. Savarese, "Deep Metric Learning via Lifted
    Structured Feature Embedding", CVPR 2016; pytorch-metric-learning
    ``losses/lifted_structure_loss.py``.

    Parameters
    ----------
    neg_margin : float, default 1
    pos_margin : float, default 0
    distance, reducer, embedding_regularizer, embedding_reg_weight, backend :
        See ``BaseMetricLossFunction``.

    Raises
    ------
    TypeError / ValueError
        Non-numeric or non-finite margins; bad call inputs (see the base class).
    """

    def __init__(self, neg_margin: float = 1, pos_margin: float = 0, **kwargs) -> None:
        self.neg_margin = check_float(neg_margin, "neg_margin")
        self.pos_margin = check_float(pos_margin, "pos_margin")
        super().__init__(**kwargs)

    # per positive pair, from the per-anchor negative log-sum-exps L (N,) (-inf: no negative)
    def _pos_terms(self, mat, a1, p, L, batch):
        sg = -1.0 if self.distance.is_inverted else 1.0
        N = batch.N
        Li = L[a1]
        Lj = np.full(len(p), -np.inf)
        inb = p < N
        Lj[inb] = L[p[inb]]
        Lj[a1 == p] = -np.inf  # the same anchor: its negatives count once
        with np.errstate(invalid="ignore"):
            U = np.logaddexp(Li, Lj)
        has = np.isfinite(U)
        U0 = np.where(has, U, 0.0)
        z = U0 + sg * (mat[a1, p].astype(np.float64) - self.pos_margin)
        r = np.maximum(z, 0.0)
        losses = r * r / 2
        value, dl = self._reduce_generic(losses, (a1, p), "pos_pair", batch)
        g = np.asarray(dl, dtype=np.float64) * r  # dL/dz_k
        # dL/dL_a: through U = logaddexp(L_i, L_j)
        wi = np.where(has, np.exp(Li - U0), 0.0)
        wj = np.where(has, np.exp(Lj - U0), 0.0)
        G = np.bincount(a1, weights=g * wi, minlength=N)
        G += np.bincount(np.where(inb, p, 0), weights=np.where(inb, g * wj, 0.0), minlength=N)
        return value, g * sg, G

    def pair_loss_all(self, mat, batch):
        matches = batch.labels[:, None] == batch.ref_labels[None, :]
        has_neg = not matches.all()
        if batch.same:
            np.fill_diagonal(matches, False)
        a1, p = (t.astype(np.int64) for t in np.nonzero(matches))
        if len(a1) == 0 or not has_neg:
            return {"loss": 0.0}, np.zeros(mat.shape, np.float32)
        L, dneg = self.engine.pairw_rows_forward(
            "neg_lse",
            mat,
            batch.labels,
            batch.ref_labels,
            params=(self.neg_margin,),
            exclude_self=batch.same,
            inverted=self.distance.is_inverted,
        )
        value, gpos, G = self._pos_terms(mat, a1, p, L.astype(np.float64), batch)
        dmat = np.ascontiguousarray(self.engine.pairw_rows_backward(G.astype(np.float32), dneg))
        self.engine.scatter_add_forward(gpos.astype(np.float32), a1 * mat.shape[1] + p, dmat.reshape(-1))
        return {"loss": value}, dmat

    def pair_loss(self, mat, pairs, batch):
        a1, p, a2, n = pairs
        if len(a1) == 0 or len(a2) == 0:
            return {"loss": 0.0}, np.zeros(mat.shape, np.float32)
        sg = -1.0 if self.distance.is_inverted else 1.0
        v = sg * (self.neg_margin - mat[a2, n].astype(np.float64))
        L, w = _segment_lse(v, a2, batch.N)
        value, gpos, G = self._pos_terms(mat, a1, p, L, batch)
        N, M = mat.shape
        vals = np.concatenate([-sg * G[a2] * w, gpos]).astype(np.float32)
        dmat = self.engine.scatter_add_forward(
            vals, np.concatenate([a2 * M + n, a1 * M + p]), np.zeros(N * M, np.float32)
        )
        return {"loss": value}, dmat.reshape(N, M)

    def __repr__(self) -> str:
        return (
            f"LiftedStructureLoss(neg_margin={self.neg_margin}, pos_margin={self.pos_margin}, "
            f"distance={self.distance!r}, reducer={self.reducer!r})"
        )
