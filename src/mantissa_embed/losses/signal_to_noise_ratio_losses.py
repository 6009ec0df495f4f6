"""SignalToNoiseRatioContrastiveLoss (Yuan et al. 2019), pytorch-metric-learning's formulation."""

from __future__ import annotations

from ..distances import SNRDistance
from .contrastive_loss import ContrastiveLoss


class SignalToNoiseRatioContrastiveLoss(ContrastiveLoss):
    """Contrastive loss over the signal-to-noise-ratio distance.

    ``SignalToNoiseRatioContrastiveLoss(pos_margin=0, neg_margin=1, distance=None, reducer=None,
    ...)``: ContrastiveLoss with ``d_ij = var(r_j - q_i) / var(q_i)`` (SNRDistance, the only distance
    accepted; not symmetric), default AvgNonZeroReducer, terms ``pos_loss`` / ``neg_loss``.

    Raises ``TypeError`` for another distance; ``ValueError`` for non-finite margins, fewer than 2
    columns, a row with zero variance.
    Source: T. Yuan et al., "Signal-to-Noise Ratio: A Robust Distance Metric for Deep Metric
    Learning", CVPR 2019.
    """

    def __init__(self, pos_margin: float = 0, neg_margin: float = 1, **kwargs) -> None:
        super().__init__(pos_margin=pos_margin, neg_margin=neg_margin, **kwargs)
        if not isinstance(self.distance, SNRDistance):
            raise TypeError(
                f"SignalToNoiseRatioContrastiveLoss requires the distance to be an "
                f"SNRDistance, got {type(self.distance).__name__}"
            )

    def get_default_distance(self):
        return SNRDistance(backend=self.backend)

    def __repr__(self) -> str:
        return (
            f"SignalToNoiseRatioContrastiveLoss(pos_margin={self.pos_margin}, "
            f"neg_margin={self.neg_margin}, distance={self.distance!r}, reducer={self.reducer!r})"
        )
