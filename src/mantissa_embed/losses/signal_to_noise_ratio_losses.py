"""SignalToNoiseRatioContrastiveLoss (Yuan et al. 2019), pytorch-metric-learning's formulation."""
from __future__ import annotations

from ..distances import SNRDistance
from .contrastive_loss import ContrastiveLoss


class SignalToNoiseRatioContrastiveLoss(ContrastiveLoss):
    """Contrastive loss over the signal-to-noise-ratio distance.

    ``SignalToNoiseRatioContrastiveLoss(pos_margin=0, neg_margin=1, distance=None, reducer=None,
    embedding_regularizer=None, embedding_reg_weight=1, backend="mantissa")``

    :class:`~mantissa_embed.losses.ContrastiveLoss` with ``d_ij = SNR(i, j) = var(r_j - q_i) /
    var(q_i)`` (:class:`~mantissa_embed.distances.SNRDistance`, the default and the only distance
    accepted): positive pairs charge ``[d - pos_margin]+``, negative pairs ``[neg_margin - d]+``,
    each kind reduced on its own (default ``AvgNonZeroReducer``) and summed:
    ``terms = {"pos_loss", "neg_loss"}``. The SNR distance is not symmetric (``d_ij != d_ji``).

    Shapes: ``embeddings`` (N, D) with D >= 2, ``labels`` (N,), ``ref_emb`` (M, D) -> ``LossOutput``.

    References: T. Yuan, W. Deng, J. Tang, Y. Tang, B. Chen, "Signal-to-Noise Ratio: A Robust
    Distance Metric for Deep Metric Learning", CVPR 2019; pytorch-metric-learning
    ``losses/signal_to_noise_ratio_losses.py``.

    Parameters
    ----------
    pos_margin : float, default 0
    neg_margin : float, default 1
    distance, reducer, embedding_regularizer, embedding_reg_weight, backend :
        See :class:`~mantissa_embed.losses.BaseMetricLossFunction`.

    Raises
    ------
    TypeError
        ``distance`` is not an ``SNRDistance`` (PML asserts the same); non-numeric margins.
    ValueError
        Non-finite margins; an embedding row with zero variance (the SNR divides by it), fewer
        than 2 columns; bad call inputs (see the base class).
    """

    def __init__(self, pos_margin=0, neg_margin=1, **kwargs):
        super().__init__(pos_margin=pos_margin, neg_margin=neg_margin, **kwargs)
        if not isinstance(self.distance, SNRDistance):
            raise TypeError(f"SignalToNoiseRatioContrastiveLoss requires the distance to be an "
                            f"SNRDistance, got {type(self.distance).__name__}")

    def get_default_distance(self):
        return SNRDistance(backend=self.backend)

    def __repr__(self):
        return (f"SignalToNoiseRatioContrastiveLoss(pos_margin={self.pos_margin}, "
                f"neg_margin={self.neg_margin}, distance={self.distance!r}, reducer={self.reducer!r})")
