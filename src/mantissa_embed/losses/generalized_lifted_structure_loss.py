"""GeneralizedLiftedStructureLoss (Hermans, Beyer & Leibe 2017), pytorch-metric-learning's formulation."""
from __future__ import annotations

from .._validation import check_float
from .multi_similarity_loss import _MatPairLoss


class GeneralizedLiftedStructureLoss(_MatPairLoss):
    """Generalized lifted structure loss.

    ``GeneralizedLiftedStructureLoss(neg_margin=1, pos_margin=0, distance=None, reducer=None,
    embedding_regularizer=None, embedding_reg_weight=1, backend="mantissa")``

    For each anchor ``i`` with positives ``P_i`` and negatives ``N_i`` and distances ``d``
    (default ``LpDistance()``: Euclidean distance of L2-normalized embeddings)::

        L_i = [ log sum_{j in P_i} exp(d_ij - pos_margin) + log sum_{j in N_i} exp(neg_margin - d_ij) ]+

    an empty set contributing 0 (with a similarity ``s``: ``pos_margin - s`` and ``s - neg_margin``,
    PML's ``distance.margin``). The gradient at the hinge's kink is 0. The N row losses are
    reduced by the reducer (default ``MeanReducer``, over all N anchors) as an "element"
    reduction: ``terms = {"loss"}``. All pairs run in one fused, row-parallel engine pass; a pair
    listed twice in ``indices_tuple`` counts once (PML's masks).

    Shapes: ``embeddings`` (N, D), ``labels`` (N,), ``ref_emb`` (M, D) -> ``LossOutput``.

    References: A. Hermans, L. Beyer, B. Leibe, "In Defense of the Triplet Loss for Person
    Re-Identification", arXiv:1703.07737, 2017 (page 4); pytorch-metric-learning
    ``losses/lifted_structure_loss.py``.

    Parameters
    ----------
    neg_margin : float, default 1
    pos_margin : float, default 0
    distance, reducer, embedding_regularizer, embedding_reg_weight, backend :
        See :class:`~mantissa_embed.losses.BaseMetricLossFunction`.

    Raises
    ------
    TypeError / ValueError
        Non-numeric or non-finite margins; a pair both positive and negative in
        ``indices_tuple``; bad call inputs (see the base class).
    """

    _kind = "generalized_lifted"

    def __init__(self, neg_margin=1, pos_margin=0, **kwargs):
        self.neg_margin = check_float(neg_margin, "neg_margin")
        self.pos_margin = check_float(pos_margin, "pos_margin")
        super().__init__(**kwargs)

    def _params(self):
        return (self.pos_margin, self.neg_margin)

    def __repr__(self):
        return (f"GeneralizedLiftedStructureLoss(neg_margin={self.neg_margin}, "
                f"pos_margin={self.pos_margin}, distance={self.distance!r}, reducer={self.reducer!r})")
