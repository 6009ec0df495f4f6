"""MultiSimilarityLoss (Wang et al. 2019), pytorch-metric-learning's formulation.

Also home of ``_MatPairLoss``, the base of the "mat-based" pair losses (MultiSimilarity, Circle,
GeneralizedLiftedStructure): one loss per anchor row from masked log-sum-exps over the row's
positives and negatives, computed with its gradient by one fused engine kernel.
"""
from __future__ import annotations

import numpy as np

from .._validation import check_float
from ..distances import CosineSimilarity
from .generic_pair_loss import GenericPairLoss


class _MatPairLoss(GenericPairLoss):
    """A GenericPairLoss whose loss is one term per anchor row (PML's ``mat_based_loss=True``).

    Subclasses set ``_kind`` (the engine's row kind) and ``_params()``. The row losses go through
    the reducer as an "element" reduction over the N anchors (indices ``arange(N)``).
    Given pairs become (N, M) masks: a pair listed twice counts once, as in PML.
    """

    _kind = None

    def _params(self):
        raise NotImplementedError

    def _reduce_rows(self, losses, dmat, batch):
        idx = np.arange(batch.N, dtype=np.int64)
        value, dl = self._reduce_generic(losses, idx, "element", batch)
        dl = np.ascontiguousarray(dl, dtype=np.float32)
        self.engine.pairw_rows_backward(dl, dmat)
        return {"loss": value}, dmat

    def pair_loss_all(self, mat, batch):
        losses, dmat = self.engine.pairw_rows_forward(
            self._kind, mat, batch.labels, batch.ref_labels, params=self._params(),
            exclude_self=batch.same, inverted=self.distance.is_inverted)
        return self._reduce_rows(losses, dmat, batch)

    def pair_loss(self, mat, pairs, batch):
        a1, p, a2, n = pairs
        pos = np.zeros(mat.shape, dtype=np.bool_)
        neg = np.zeros(mat.shape, dtype=np.bool_)
        pos[a1, p] = True
        neg[a2, n] = True
        if np.any(pos & neg):
            raise ValueError("indices_tuple: a pair is both positive and negative "
                             "(each pair must be either positive or negative)")
        losses, dmat = self.engine.pairw_rows_forward(
            self._kind, mat, pos_mask=pos, neg_mask=neg, params=self._params(),
            inverted=self.distance.is_inverted)
        return self._reduce_rows(losses, dmat, batch)


class MultiSimilarityLoss(_MatPairLoss):
    """Multi-similarity loss.

    ``MultiSimilarityLoss(alpha=2, beta=50, base=0.5, distance=None, reducer=None,
    embedding_regularizer=None, embedding_reg_weight=1, backend="mantissa")``

    For each anchor ``i`` with positives ``P_i`` and negatives ``N_i`` (from the labels, or from the
    given pairs), with ``S_ij`` the similarity (default ``CosineSimilarity()``)::

        L_i = 1/alpha * log(1 + sum_{j in P_i} exp(-alpha (S_ij - base)))
            + 1/beta  * log(1 + sum_{j in N_i} exp( beta (S_ij - base)))

    (with a distance ``d`` instead, ``S - base`` becomes ``base - d``: PML's ``distance.margin``).
    An empty set contributes 0. The N row losses are reduced by the reducer (default
    ``MeanReducer``: the mean over all N anchors, those without pairs included) as an
    "element" reduction: ``terms = {"loss"}``. All pairs (no ``indices_tuple``) run in one fused,
    row-parallel engine pass: masked stable log-sum-exps and the gradient ``dL/dS`` (N, M).
    A pair listed twice in ``indices_tuple`` counts once (PML's masks).

    Shapes: ``embeddings`` (N, D), ``labels`` (N,), ``ref_emb`` (M, D) -> ``LossOutput``
    (``grad`` (N, D), ``ref_grad`` (M, D) or None).

    References: X. Wang, X. Han, W. Huang, D. Dong, M. R. Scott, "Multi-Similarity Loss with
    General Pair Weighting for Deep Metric Learning", CVPR 2019; pytorch-metric-learning
    ``losses/multi_similarity_loss.py``.

    Parameters
    ----------
    alpha : float, default 2
        Scale of the positive terms (> 0).
    beta : float, default 50
        Scale of the negative terms (> 0).
    base : float, default 0.5
        The similarity threshold both terms are measured from.
    distance, reducer, embedding_regularizer, embedding_reg_weight, backend :
        See :class:`~mantissa_embed.losses.BaseMetricLossFunction`.

    Raises
    ------
    TypeError / ValueError
        Non-numeric or non-finite parameters, ``alpha <= 0`` or ``beta <= 0``; a pair that is both
        positive and negative in ``indices_tuple``; bad call inputs (see the base class).
    """

    _kind = "multi_similarity"

    def __init__(self, alpha=2, beta=50, base=0.5, **kwargs):
        self.alpha = check_float(alpha, "alpha", minimum=0.0, strict=True)
        self.beta = check_float(beta, "beta", minimum=0.0, strict=True)
        self.base = check_float(base, "base")
        super().__init__(**kwargs)

    def get_default_distance(self):
        return CosineSimilarity(backend=self.backend)

    def _params(self):
        return (self.alpha, self.beta, self.base)

    def __repr__(self):
        return (f"MultiSimilarityLoss(alpha={self.alpha}, beta={self.beta}, base={self.base}, "
                f"distance={self.distance!r}, reducer={self.reducer!r})")
