"""CircleLoss (Sun et al. 2020), pytorch-metric-learning's formulation (pair labels only)."""

from __future__ import annotations

from .._validation import check_float
from ..distances import CosineSimilarity
from ..reducers import AvgNonZeroReducer
from .multi_similarity_loss import _MatPairLoss


class CircleLoss(_MatPairLoss):
    """Circle loss over the positive and negative pairs of each anchor.

    ``CircleLoss(m=0.4, gamma=80, distance=None, reducer=None, ...)``: with weights ``a_p = [1 + m -
    s_ip]+``, ``a_n = [s_in + m]+`` held constant in the gradient (as PML), ``L_i =
    softplus(lse_P(-gamma a_p (s_ip - 1 + m)) + lse_N(gamma a_n (s_in - m)))``, 0 without positives
    or negatives; reduced over the N anchors (default AvgNonZeroReducer).

    Raises ``TypeError`` when the distance is not a CosineSimilarity; ``ValueError`` for non-finite
    parameters or a pair both positive and negative.
    Source: Y. Sun et al., "Circle Loss", CVPR 2020.
    """

    _kind = "circle"

    def __init__(self, m: float = 0.4, gamma: float = 80, **kwargs) -> None:
        self.m = check_float(m, "m")
        self.gamma = check_float(gamma, "gamma")
        super().__init__(**kwargs)
        if not isinstance(self.distance, CosineSimilarity):
            raise TypeError(
                f"CircleLoss requires the distance to be a CosineSimilarity, "
                f"got {type(self.distance).__name__}"
            )
        # PML's derived attributes
        self.op = 1 + self.m
        self.on = -self.m
        self.delta_p = 1 - self.m
        self.delta_n = self.m

    def get_default_reducer(self):
        return AvgNonZeroReducer()

    def get_default_distance(self):
        return CosineSimilarity(backend=self.backend)

    def _params(self):
        return (self.m, self.gamma)

    def __repr__(self) -> str:
        return (
            f"CircleLoss(m={self.m}, gamma={self.gamma}, distance={self.distance!r}, "
            f"reducer={self.reducer!r})"
        )
