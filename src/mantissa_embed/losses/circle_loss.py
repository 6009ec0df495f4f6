"""CircleLoss (Sun et al. 2020), pytorch-metric-learning's formulation (pair labels only)."""
from __future__ import annotations

from .._validation import check_float
from ..distances import CosineSimilarity
from ..reducers import AvgNonZeroReducer
from .multi_similarity_loss import _MatPairLoss


class CircleLoss(_MatPairLoss):
    """Circle loss, for pairwise labels.

    ``CircleLoss(m=0.4, gamma=80, distance=None, reducer=None, embedding_regularizer=None,
    embedding_reg_weight=1, backend="mantissa")``

    For each anchor ``i`` with positives ``P_i`` and negatives ``N_i`` and cosine similarities
    ``s`` (the distance must be a ``CosineSimilarity``, the default)::

        a_p = [1 + m - s_ip]+ ,  a_n = [s_in + m]+        (weights, constants for the gradient)
        t_ip = -gamma a_p (s_ip - (1 - m)),   t_in = gamma a_n (s_in - m)
        L_i = softplus(logsumexp_{P_i} t + logsumexp_{N_i} t)

    and ``L_i = 0`` when ``P_i`` or ``N_i`` is empty. softplus is torch's (threshold 20). As in PML
    and the paper, the weights ``a_p``, ``a_n`` are treated as constants (``.detach()``), so the
    gradient is ``dL_i/ds_ij = softplus'(z) softmax_j(t) (-gamma a_p)`` on positives and
    ``softplus'(z) softmax_j(t) gamma a_n`` on negatives, not the derivative of the value through
    the weights. The default reducer, ``AvgNonZeroReducer``, averages the row losses that are > 0
    ("element" reduction over the N anchors): ``terms = {"loss"}``. All pairs (no
    ``indices_tuple``) run in one fused, row-parallel engine pass; a pair listed twice in
    ``indices_tuple`` counts once (PML's masks).

    Shapes: ``embeddings`` (N, D), ``labels`` (N,), ``ref_emb`` (M, D) -> ``LossOutput``.

    References: Y. Sun, C. Cheng, Y. Zhang, C. Zhang, L. Zheng, Z. Wang, Y. Wei, "Circle Loss: A
    Unified Perspective of Pair Similarity Optimization", CVPR 2020 (suggested m=0.25, gamma=256
    for faces, m=0.25, gamma=128 for re-identification, m=0.4, gamma=80 for fine-grained
    retrieval); pytorch-metric-learning ``losses/circle_loss.py``.

    Parameters
    ----------
    m : float, default 0.4
        The relaxation factor (radius of the decision boundary).
    gamma : float, default 80
        The scale factor.
    distance, reducer, embedding_regularizer, embedding_reg_weight, backend :
        See :class:`~mantissa_embed.losses.BaseMetricLossFunction`.

    Raises
    ------
    TypeError
        ``distance`` is not a ``CosineSimilarity`` (PML asserts the same); non-numeric parameters.
    ValueError
        Non-finite parameters; a pair both positive and negative in ``indices_tuple``; bad call
        inputs (see the base class).
    """

    _kind = "circle"

    def __init__(self, m=0.4, gamma=80, **kwargs):
        self.m = check_float(m, "m")
        self.gamma = check_float(gamma, "gamma")
        super().__init__(**kwargs)
        if not isinstance(self.distance, CosineSimilarity):
            raise TypeError(f"CircleLoss requires the distance to be a CosineSimilarity, "
                            f"got {type(self.distance).__name__}")
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

    def __repr__(self):
        return (f"CircleLoss(m={self.m}, gamma={self.gamma}, distance={self.distance!r}, "
                f"reducer={self.reducer!r})")
