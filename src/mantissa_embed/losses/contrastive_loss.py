"""ContrastiveLoss (Hadsell, Chopra & LeCun 2006), pytorch-metric-learning's formulation."""
from __future__ import annotations

import numpy as np

from .._validation import check_float
from ..reducers import AvgNonZeroReducer
from .generic_pair_loss import GenericPairLoss


class ContrastiveLoss(GenericPairLoss):
    """Contrastive loss over positive and negative pairs.

    ``ContrastiveLoss(pos_margin=0, neg_margin=1, distance=None, reducer=None,
    embedding_regularizer=None, embedding_reg_weight=1, backend="mantissa")``

    Positive pairs (same label) charge ``[d - pos_margin]+``, negative pairs (different labels)
    ``[neg_margin - d]+``, with ``d`` the distance (default: Euclidean distance between
    L2-normalized embeddings, ``LpDistance()``); with a similarity (``distance.is_inverted``) the
    hinges are ``[pos_margin - s]+`` and ``[s - neg_margin]+``. Each kind is reduced on its own
    (default ``AvgNonZeroReducer``: the mean over the pairs whose loss is > 0; 0 if none) and the
    two results are summed: ``terms = {"pos_loss", "neg_loss"}``. Without an ``indices_tuple``
    every pair of the batch (or batch x reference set) is used, in one fused engine pass over
    the distance matrix. As in PML, when every array of the pair tuple has at most one element,
    the loss is 0.

    Gradient at a zero distance: 0 (see :class:`~mantissa_embed.distances.LpDistance`).

    References: R. Hadsell, S. Chopra, Y. LeCun, "Dimensionality Reduction by Learning an
    Invariant Mapping", CVPR 2006; pytorch-metric-learning ``losses/contrastive_loss.py``.

    Parameters
    ----------
    pos_margin : float, default 0
    neg_margin : float, default 1
    distance, reducer, embedding_regularizer, embedding_reg_weight, backend :
        See :class:`~mantissa_embed.losses.BaseMetricLossFunction`.

    Raises
    ------
    TypeError / ValueError
        Non-finite or non-numeric margins; bad call inputs (see the base class).
    """

    def __init__(self, pos_margin=0, neg_margin=1, **kwargs):
        self.pos_margin = check_float(pos_margin, "pos_margin")
        self.neg_margin = check_float(neg_margin, "neg_margin")
        super().__init__(**kwargs)

    def get_default_reducer(self):
        return AvgNonZeroReducer()

    def _sub_loss_names(self):
        return ["pos_loss", "neg_loss"]

    def _terms(self, loss, st):
        self.stats = {k: v for k, v in st.items() if k.startswith("num_")}
        return {"pos_loss": st["pos_loss"], "neg_loss": st["neg_loss"]}

    def pair_loss_all(self, mat, batch):
        mode = self._fused_mode()
        if mode is None:
            from .. import utils
            pairs = utils.get_all_pairs_indices(batch.labels, None if batch.same else batch.ref_labels)
            return self.pair_loss(mat, pairs, batch)
        loss, dmat, st = self.engine.contrastive_loss_all(
            mat, batch.labels, batch.ref_labels, self.pos_margin, self.neg_margin,
            exclude_self=batch.same, inverted=self.distance.is_inverted,
            nonzero_only=mode == "avg_non_zero")
        return self._terms(loss, st), dmat

    def pair_loss(self, mat, pairs, batch):
        a1, p, a2, n = pairs
        mode = self._fused_mode()
        if mode is not None:
            loss, dmat, st = self.engine.contrastive_loss_pairs(
                mat, a1, p, a2, n, self.pos_margin, self.neg_margin,
                inverted=self.distance.is_inverted, nonzero_only=mode == "avg_non_zero")
            return self._terms(loss, st), dmat
        # generic path: per-pair losses in numpy, any BaseReducer
        dmat = np.zeros(mat.shape, dtype=np.float64)
        terms = {}
        for name, (i, j), margin, sign in (("pos_loss", (a1, p), self.pos_margin, 1.0),
                                           ("neg_loss", (a2, n), self.neg_margin, -1.0)):
            if len(i) == 0:
                terms[name] = 0.0
                continue
            d = mat[i, j]
            m = np.float32(margin)
            v = self.distance.margin(d, m) if sign > 0 else self.distance.margin(m, d)
            losses = np.maximum(v, np.float32(0))
            value, dl = self._reduce_generic(losses, (i, j), "pos_pair" if sign > 0 else "neg_pair", batch)
            terms[name] = value
            dv_dd = sign * (-1.0 if self.distance.is_inverted else 1.0)
            np.add.at(dmat, (i, j), dl * (v > 0) * dv_dd)
        return terms, dmat.astype(np.float32)

    def __repr__(self):
        return (f"ContrastiveLoss(pos_margin={self.pos_margin}, neg_margin={self.neg_margin}, "
                f"distance={self.distance!r}, reducer={self.reducer!r})")
