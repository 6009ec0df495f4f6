"""ContrastiveLoss (Hadsell, Chopra & LeCun 2006), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numpy as np

from .. import utils
from .._validation import check_float
from ..reducers import AvgNonZeroReducer
from .generic_pair_loss import GenericPairLoss


class ContrastiveLoss(GenericPairLoss):
    """Contrastive loss over positive and negative pairs.

    ``ContrastiveLoss(pos_margin=0, neg_margin=1, distance=None, reducer=None,
    embedding_regularizer=None, embedding_reg_weight=1, backend="mantissa")``

    Positive pairs (same label) charge ``[d - pos_margin]+``, negative pairs (different labels)
    ``[neg_margin - d]+``, with ``d`` the distance (default ``LpDistance()``); with a similarity
    (``distance.is_inverted``) the hinges are ``[pos_margin - s]+`` and ``[s - neg_margin]+``.
    Each kind is reduced on its own (default ``AvgNonZeroReducer``; any reducer, as "pos_pair" /
    "neg_pair" reductions) and the two results are summed: ``terms = {"pos_loss", "neg_loss"}``.
    Without an ``indices_tuple`` every pair of the batch (or batch x reference set) is used. As in
    PML, when every array of the pair tuple has at most one element, the loss is 0. Gradient at a
    zero distance: 0.

    References: R. Hadsell, S. Chopra, Y. LeCun, "Dimensionality Reduction by Learning an
    Invariant Mapping", CVPR 2006; pytorch-metric-learning ``losses/contrastive_loss.py``.

    Parameters
    ----------
    pos_margin : float, default 0
    neg_margin : float, default 1
    distance, reducer, embedding_regularizer, embedding_reg_weight, backend :
        See ``BaseMetricLossFunction``.

    Raises
    ------
    TypeError / ValueError
        Non-finite or non-numeric margins; bad call inputs (see the base class).
    """

    def __init__(self, pos_margin: float = 0, neg_margin: float = 1, **kwargs) -> None:
        self.pos_margin = check_float(pos_margin, "pos_margin")
        self.neg_margin = check_float(neg_margin, "neg_margin")
        super().__init__(**kwargs)

    def get_default_reducer(self):
        return AvgNonZeroReducer()

    def _sub_loss_names(self):
        return ["pos_loss", "neg_loss"]

    def _kw(self):
        return dict(
            pos_margin=self.pos_margin, neg_margin=self.neg_margin, inverted=self.distance.is_inverted
        )

    def _fused(self, kernel, args, mode, **kw):
        _, dmat, st = kernel(*args, nonzero_only=mode == "avg_non_zero", **kw)
        self.stats = {k: v for k, v in st.items() if k.startswith("num_")}
        return {"pos_loss": st["pos_loss"], "neg_loss": st["neg_loss"]}, dmat

    def _reduce_kinds(self, lpos, lneg, pairs, batch):
        """Each kind of pair through the reducer: (terms, [d pos_loss / d lpos, d neg_loss / d lneg])."""
        a1, p, a2, n = pairs
        terms, grads = {}, []
        for name, losses, idx, rtype in (
            ("pos_loss", lpos, (a1, p), "pos_pair"),
            ("neg_loss", lneg, (a2, n), "neg_pair"),
        ):
            if len(losses) == 0:
                terms[name] = 0.0
                grads.append(np.zeros(0))
                continue
            terms[name], dl = self._reduce_generic(losses, idx, rtype, batch)
            grads.append(dl)
        return terms, grads

    def pair_loss_all(self, mat, batch):
        kernel, args = self.engine.contrastive_loss_all, (mat, batch.labels, batch.ref_labels)
        kw = dict(exclude_self=batch.same, **self._kw())
        mode = self._fused_mode()
        if mode is not None:
            return self._fused(kernel, args, mode, **kw)
        pairs = utils.get_all_pairs_indices(batch.labels, None if batch.same else batch.ref_labels)
        a1, p, a2, n = pairs
        _, _, _, lmat = kernel(*args, grad=False, return_losses=True, **kw)
        terms, (gpos, gneg) = self._reduce_kinds(lmat[a1, p], lmat[a2, n], pairs, batch)
        weights = np.zeros(mat.shape, dtype=np.float32)
        weights[a1, p] = gpos
        weights[a2, n] = gneg
        _, dmat, _ = kernel(*args, weights=weights, **kw)
        return terms, dmat

    def pair_loss(self, mat, pairs, batch):
        a1, p, a2, n = pairs
        kernel, args = self.engine.contrastive_loss_pairs, (mat, a1, p, a2, n)
        mode = self._fused_mode()
        if mode is not None:
            return self._fused(kernel, args, mode, **self._kw())
        _, _, _, losses = kernel(*args, grad=False, return_losses=True, **self._kw())
        terms, grads = self._reduce_kinds(losses[: len(a1)], losses[len(a1) :], pairs, batch)
        _, dmat, _ = kernel(*args, weights=np.concatenate(grads), **self._kw())
        return terms, dmat

    def __repr__(self) -> str:
        return (
            f"ContrastiveLoss(pos_margin={self.pos_margin}, neg_margin={self.neg_margin}, "
            f"distance={self.distance!r}, reducer={self.reducer!r})"
        )
