"""GeneralizedLiftedStructureLoss (Hermans, Beyer & Leibe 2017), pytorch-metric-learning's formulation."""

from __future__ import annotations

from .._validation import check_float
from .multi_similarity_loss import _MatPairLoss


class GeneralizedLiftedStructureLoss(_MatPairLoss):
    """Generalized lifted structure loss, one term per anchor.

    ``GeneralizedLiftedStructureLoss(neg_margin=1, pos_margin=0, distance=None, reducer=None, ...)``:
    ``L_i = [lse_P(d_ij - pos_margin) + lse_N(neg_margin - d_ij)]+`` (an empty set gives 0),
    reduced over the N anchors (default MeanReducer).

    Raises ``TypeError`` / ``ValueError`` for bad margins or a pair both positive and negative.
    Source: A. Hermans et al., "In Defense of the Triplet Loss for Person Re-Identification",
    arXiv:1703.07737.
    """

    _kind = "generalized_lifted"

    def __init__(self, neg_margin: float = 1, pos_margin: float = 0, **kwargs) -> None:
        self.neg_margin = check_float(neg_margin, "neg_margin")
        self.pos_margin = check_float(pos_margin, "pos_margin")
        super().__init__(**kwargs)

    def _params(self):
        return (self.pos_margin, self.neg_margin)

    def __repr__(self) -> str:
        return (
            f"GeneralizedLiftedStructureLoss(neg_margin={self.neg_margin}, "
            f"pos_margin={self.pos_margin}, distance={self.distance!r}, reducer={self.reducer!r})"
        )
